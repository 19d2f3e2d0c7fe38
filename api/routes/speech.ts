// POST /api/v1/audio/speech (and /v1/...): OpenAI-style text to speech, binary audio out, OpenAI
// error envelope. Non-streaming: the whole audio, then the charge, then the answer (with
// Content-Length). Streaming: the charge once the first audio chunk has arrived, then chunked
// transfer (no Content-Length); a provider failing before any audio is a JSON error and costs
// nothing. Billing headers: X-Cost (USD), X-Charged (in X-Payment-Source's currency), X-Characters.
import { Readable } from 'node:stream';
import Router from '@koa/router';
import type { Context } from 'koa';
import { surface } from '../middleware/surface.js';
import { authenticate } from '../middleware/auth.js';
import { validateBody } from '../validate.js';
import { v1 } from './paths.js';
import { speechRequestSchema } from '../schemas/speech.js';
import type { Caller } from '../../activities/accounts/keys.js';
import { resolveModel } from '../../activities/inference/prepare.js';
import { RequestError } from '../../activities/inference/errors.js';
import { planSpeech, SpeechCall, type SpeechBill, type SpeechBody } from '../../activities/surfaces/speech.js';

export const speechRouter = new Router();

function billingHeaders(ctx: Context, bill: SpeechBill): void {
  ctx.set('X-Cost', String(bill.cost));
  ctx.set('X-Charged', String(bill.amount));
  ctx.set('X-Payment-Source', bill.paymentSource);
  ctx.set('X-Characters', String(bill.characters));
}

speechRouter.post(v1('/audio/speech'), surface('openai'), authenticate, validateBody(speechRequestSchema), async (ctx) => {
  const body = ctx.request.body as SpeechBody;
  const caller = ctx.state.caller as Caller;
  let model;
  try {
    ({ model } = resolveModel(body.model, 'speech'));
  } catch (err) {
    if (err instanceof RequestError && err.code === 'invalid_parameter_value') throw new RequestError(400, 'invalid_model', err.message, 'model');
    throw err;
  }
  const plan = planSpeech(model, body);
  const call = new SpeechCall(caller, ctx.state.requestId, plan, ctx.get('x-provider').trim() || undefined);
  await call.reserve();

  const abort = new AbortController();
  ctx.res.once('close', () => {
    if (!ctx.res.writableFinished) abort.abort(new Error('client disconnected'));
  });
  let opened;
  try {
    opened = await call.open(abort.signal);
  } catch (err) {
    await call.fail((err as { code?: string }).code ?? 'error');
    throw err;
  }

  if (!body.stream) {
    const parts = [opened.first];
    try {
      for (let r = await opened.rest.next(); !r.done; r = await opened.rest.next()) parts.push(r.value);
    } catch (err) {
      // the audio broke before the caller got any of it: nothing is charged
      await call.fail('upstream_error');
      const e = err as { message?: string; status?: number };
      throw new RequestError(502, 'upstream_error', `${opened.route.provider.id} broke off the audio: ${e.message ?? 'error'}. Nothing was charged; retry the request.`);
    }
    billingHeaders(ctx, await call.settle());
    ctx.type = opened.contentType;
    ctx.body = Buffer.concat(parts);
    return;
  }

  // Streaming: the first chunk is here, so the audio is billed now.
  billingHeaders(ctx, await call.settle());
  ctx.req.socket.setNoDelay(true);
  ctx.set('Cache-Control', 'no-cache, no-transform');
  ctx.set('X-Accel-Buffering', 'no');
  ctx.type = opened.contentType;
  const { first, rest } = opened;
  ctx.body = Readable.from(
    (async function* () {
      yield first;
      for (let r = await rest.next(); !r.done; r = await rest.next()) yield r.value;
    })(),
    { objectMode: false },
  );
});
