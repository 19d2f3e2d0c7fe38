// POST /api/v1/audio/speech (and /v1/...): OpenAI-style text to speech (and music: `input` is the
// prompt, `voice` is ignored, optional `duration` in seconds), binary audio out, OpenAI error
// envelope. GET /api/v1/audio/voices lists each speech model's voices. Non-streaming: the whole audio, then the charge, then the answer (with
// Content-Length). Streaming: the charge once the first audio chunk has arrived, then chunked
// transfer (no Content-Length); a provider failing before any audio is a JSON error and costs
// nothing. Billing headers: X-Cost (USD), X-Charged (in X-Payment-Source's currency), X-Characters.
// Accountless payment (x402, `X-X402: true` without a key) is offered for non-streaming requests.
import { Readable } from 'node:stream';
import { clientAbortSignal } from '../clientAbort.js';
import { chargeOnDelivery } from '../delivery.js';
import Router from '@koa/router';
import compose from 'koa-compose';
import type { Middleware } from 'koa';
import { surface } from '../middleware/surface.js';
import { x402Routes } from '../textRoute.js';
import { authenticateOrX402 } from '../x402.js';
import { admitX402, finishPaid, unclaimPaid } from '../../activities/x402/admit.js';
import { KoaExchange } from '../exchange.js';
import { refuseUnofferedFeatures } from '../middleware/notOffered.js';
import { validateBody } from '../validate.js';
import { v1 } from '../paths.js';
import { speechRequestSchema } from '../../activities/surfaces/schemas/speech.js';
import { catalog } from '../../activities/catalog/catalog.js';
import { planSpeech, resolveSpeechModel, SpeechCall, type SpeechBody } from '../../activities/media/speech.js';
import { validateQuery } from '../validate.js';
import { notFound } from '../../activities/surfaces/errors.js';
import type { AppContext, AppState } from '../state.js';
import { billingHeaders } from '../speechHeaders.js';

export const speechRouter = new Router<AppState>();

/** the x402 `route` of a quoted speech request (POST /api/x402/complete/{id} runs it again) */
const X402_SPEECH = 'speech';

// The handler (after validation), also run by POST /api/x402/complete/{id} for a quoted request.
const speak: Middleware<AppState> = async (ctx) => {
  const body = ctx.request.body as SpeechBody;
  const plan = planSpeech(resolveSpeechModel(body.model), body);
  const call = new SpeechCall(ctx.state.caller, ctx.state.requestId, plan, ctx.get('x-provider').trim() || undefined);
  if (!ctx.state.x402) return deliver(ctx, body, call);
  // accountless (x402; never a stream): quoted at the reservation's worst case, or paid and
  // claimed for this run; a run that fails leaves the payment paid, to be completed again
  const paid = await admitX402(new KoaExchange(ctx), X402_SPEECH, { ...body }, () => call.metered.worstCase());
  try {
    await deliver(ctx, body, call);
  } catch (err) {
    await unclaimPaid(paid);
    throw err;
  }
  await finishPaid(paid);
};

async function deliver(ctx: AppContext, body: SpeechBody, call: SpeechCall): Promise<void> {
  await call.reserve();
  const signal = clientAbortSignal(ctx);

  if (!body.stream) {
    // no audio reached the caller on a failure: nothing is charged
    const out = await call.orRelease(call.collect(signal));
    billingHeaders(ctx, await call.settle());
    chargeOnDelivery(ctx, call.metered);
    ctx.type = out.contentType;
    ctx.body = out.audio;
    return;
  }

  const opened = await call.orRelease(call.open(signal));

  // Streaming: the first chunk is here, so the audio is billed now, and the charge stands.
  billingHeaders(ctx, await call.settle());
  call.metered.delivered();
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
}

speechRouter.post(
  v1('/audio/speech'),
  surface('openai'),
  authenticateOrX402,
  refuseUnofferedFeatures,
  validateBody(speechRequestSchema),
  speak,
);
x402Routes.set(X402_SPEECH, compose([validateBody(speechRequestSchema), speak]));

// GET /api/v1/audio/voices[?model=]: the voices each usable speech model accepts (by name; the
// models with `custom_voice_ids` also take a provider voice id), music models with none (their
// `voice` is ignored). Public, like the model list. One shape with or without `model`: a list of models, each with its voices.
speechRouter.get(
  v1('/audio/voices'),
  surface('openai'),
  validateQuery({ type: 'object', properties: { model: { type: 'string', minLength: 1 } } }),
  (ctx) => {
    const asked = ctx.state.query.model as string | undefined;
    let models = [...catalog().usable('speech'), ...catalog().usable('music')];
    if (asked) {
      const m = catalog().model(asked);
      if (!m || (m.category !== 'speech' && m.category !== 'music'))
        throw notFound(
          'model_not_found',
          `'${asked}' is not a speech or music model. GET /api/v1/audio/voices without a model lists them.`,
        );
      models = [m];
    }
    ctx.body = {
      object: 'list',
      data: models.map((m) => ({
        model: m.id,
        category: m.category,
        voices: m.category === 'music' ? [] : ((m.options.voices ?? []) as string[]),
        default_voice: m.category === 'music' ? null : ((m.options.voices as string[] | undefined)?.[0] ?? null),
        custom_voice_ids: typeof m.options.voice_id_pattern === 'string',
        voice_settings: m.options.voice_settings === true,
        formats: (m.options.formats ?? []) as string[],
        max_input_chars: Number(m.options.max_input_chars ?? 4096),
      })),
    };
  },
);
