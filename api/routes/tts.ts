import { publicOrigin } from '../paths.js';
import { clientAbortSignal } from '../clientAbort.js';
import { chargeOnDelivery } from '../delivery.js';
import Router from '@koa/router';
import type { Context } from 'koa';
import { surface } from '../middleware/surface.js';
import { authenticate } from '../middleware/auth.js';
import { refuseUnofferedFeatures } from '../middleware/notOffered.js';
import { validateBody, validateQuery } from '../validate.js';
import { ttsRequestSchema, ttsStatusQuerySchema } from '../../activities/surfaces/schemas/tts.js';
import { billingHeaders } from '../speechHeaders.js';
import { config } from '../../activities/config.js';
import { catalog } from '../../activities/catalog/catalog.js';
import {
  planSpeech,
  resolveSpeechModel,
  SpeechCall,
  speechBillFields,
  type SpeechBody,
} from '../../activities/media/speech.js';
import { signedUrl, storeHostedFile } from '../../activities/media/hostedFiles.js';
import { loadSpeechJob } from '../../activities/media/speechJob.js';
import { startSpeechJob } from '../../activities/media/speechJobStart.js';
import { RequestError } from '../../activities/core/errors.js';
import type { AppState } from '../state.js';

export const ttsRouter = new Router<AppState>();

type TtsBody = Omit<SpeechBody, 'input' | 'stream'> & { text: string };

const ttsPreamble = [surface('legacy'), authenticate, refuseUnofferedFeatures, validateBody(ttsRequestSchema)];

ttsRouter.post('/api/tts', ...ttsPreamble, async (ctx) => {
  const { text, ...rest } = ctx.request.body as TtsBody;
  const caller = ctx.state.caller;
  const model = resolveSpeechModel(rest.model);
  const plan = planSpeech(model, { ...rest, input: text });
  const explicit = ctx.get('x-provider').trim() || undefined;

  if (model.options.async === true || plan.chars > config.ttsSyncMaxChars) {
    ctx.status = 202;
    ctx.body = await startSpeechJob(caller, plan, explicit);
    return;
  }

  const call = new SpeechCall(caller, ctx.state.requestId, plan, explicit);
  await call.reserve();
  const signal = clientAbortSignal(ctx);
  const out = await call.orRelease(call.collect(signal));

  if (ctx.accepts('audio/*', 'application/json') === 'application/json') {
    const file = await call.orRelease(
      storeHostedFile({ accountId: caller.accountId, contentType: out.contentType, data: out.audio }),
      'storage_error',
    );
    const bill = await call.settle();
    const audioUrl = await call.metered.orAbandon(signedUrl(file.id, publicOrigin(ctx), file.expiresAt), 'error');
    chargeOnDelivery(ctx, call.metered);
    ctx.body = {
      audioUrl,
      contentType: out.contentType,
      model: model.id,
      expiresAt: file.expiresAt.toISOString(),
      ...speechBillFields(bill),
      ...(bill.remainingBalance !== undefined ? { remainingBalance: bill.remainingBalance } : {}),
    };
    return;
  }
  billingHeaders(ctx, await call.settle());
  chargeOnDelivery(ctx, call.metered);
  ctx.type = out.contentType;
  ctx.body = out.audio;
});

ttsRouter.get(
  '/api/tts/status',
  surface('legacy'),
  authenticate,
  validateQuery(ttsStatusQuerySchema),
  async (ctx: Context) => {
    const caller = ctx.state.caller;
    const { runId, model } = ctx.state.query as { runId: string; model?: string };
    const job = await loadSpeechJob(runId);
    // another account's job reads as unknown, so an id's existence cannot be probed
    if (!job || job.accountId !== caller.accountId)
      throw new RequestError(
        404,
        'not_found',
        `No speech job '${runId}'. Use the runId that POST /api/tts answered with 202.`,
      );
    if (model !== undefined && catalog().model(model)?.id !== job.model) {
      throw new RequestError(
        400,
        'invalid_parameter_value',
        `Speech job '${runId}' was made with model '${job.model}', not '${model}'.`,
        { param: 'model' },
      );
    }
    const base = { runId: job.id, model: job.model };
    if (job.status === 'completed' && job.outputFileId && job.result) {
      const expiresAt = new Date(job.result.fileExpiresAt);
      const { fileExpiresAt: _, bytes: __, ...fields } = job.result;
      ctx.body =
        expiresAt.getTime() > Date.now()
          ? {
              ...base,
              status: 'completed',
              audioUrl: await signedUrl(job.outputFileId, publicOrigin(ctx), expiresAt),
              expiresAt: expiresAt.toISOString(),
              ...fields,
            }
          : {
              ...base,
              status: 'completed',
              audioUrl: null,
              error: 'The audio was deleted: hosted outputs are kept 24 hours.',
              ...fields,
            };
      return;
    }
    if (job.status === 'error') {
      ctx.body = { ...base, status: 'error', error: job.error ?? 'The job failed.' };
      return;
    }
    ctx.body = { ...base, status: 'pending' };
  },
);
