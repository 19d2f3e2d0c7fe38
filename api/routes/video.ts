// Video generation (spec "### Video"), legacy envelope ({error, message, status, code}):
//   POST /api/generate-video          validate against the model, reserve the pre-charge, start the
//                                     `videoJob` workflow (workflow id = runId = id), answer 202
//   GET  /api/video/status            the job record (never the provider, never a replay)
//   GET  /api/generate-video/status   deprecated legacy status: provider labels, `Deprecation: true`
//   GET  /api/generate-video/recover  the caller's recent jobs (20 per minute)
//   POST /api/generate-video/extend   continue one variant of a Midjourney-style job (20 per minute)
//   GET  /api/generate-video/content  a finished job's bytes (`variant=video`), for the catalog's video models
//   POST /api/generate-video/cancel   cancel a running job through its workflow (the spec names no
//                                     path; this one mirrors OpenAI's POST .../{id}/cancel verbs)
import { publicOrigin } from '../paths.js';
import Router from '@koa/router';
import type { Context } from 'koa';
import { surface } from '../middleware/surface.js';
import { authenticate } from '../middleware/auth.js';
import { refuseUnofferedFeatures } from '../middleware/notOffered.js';
import { perKeyRate } from '../middleware/rateLimit.js';
import { validateBody, validateQuery } from '../validate.js';
import { videoCancelSchema, videoExtendSchema, videoRequestSchema } from '../../activities/surfaces/schemas/video.js';
import { catalog } from '../../activities/catalog/catalog.js';
import { cancelJobAndWait } from '../../activities/jobs/jobs.js';
import { resolveModel } from '../../activities/catalog/resolve.js';
import { planRoute } from '../../activities/routing/planRoute.js';
import {
  MEDIA_FIELDS,
  numberOption,
  planVideo,
  planVideoExtension,
  type VideoBody,
} from '../../activities/video/plan.js';
import { isTerminal, loadVideoJob, recentVideoJobs, type VideoJobRow } from '../../activities/video/jobs.js';
import { startVideoJob } from '../../activities/video/start.js';
import { normalizedVideoStatus, videoStatusData, videoStatusLabel } from '../../activities/video/views.js';
import { readHostedFile } from '../../activities/media/hostedFiles.js';
import type { AppState } from '../state.js';
import { clientAbortSignal } from '../clientAbort.js';
import { checkSourceLength, extendsSource } from '../../activities/video/source.js';
import { RequestError } from '../../activities/core/errors.js';

export const videoRouter = new Router<AppState>();

const NO_NEEDS = { tools: false, images: false, structuredOutput: false, caching: false };

videoRouter.post(
  '/api/generate-video',
  surface('legacy'),
  authenticate,
  refuseUnofferedFeatures,
  validateBody(videoRequestSchema),
  async (ctx) => {
    const body = ctx.request.body as VideoBody;
    const caller = ctx.state.caller;
    const { model } = resolveModel(body.model, 'video');
    const header = ctx.get('x-provider').trim();
    const [route] = planRoute(catalog(), model, caller, header ? { explicit: header } : {}, NO_NEEDS);
    const plan = planVideo(model, route, body);
    // an extend model continues the caller's own video: at most 120 s of it (read from the file)
    const source = plan.input.media.video;
    if (extendsSource(model) && source !== undefined) {
      const field = ['videoUrl', 'videoDataUrl', ...MEDIA_FIELDS.video].find((f) => body[f]) ?? 'videoUrl';
      await checkSourceLength(model, source, field, clientAbortSignal(ctx));
    }
    const conversationUuid = typeof body.conversationUUID === 'string' ? body.conversationUUID : null;
    ctx.status = 202;
    ctx.body = { ...(await startVideoJob({ caller, plan, conversationUuid })), model: model.id };
  },
);

// Finished jobs never change again: keep a few thousand in memory so repeated status checks of
// a done job cost no query (spec: "terminal results are cached for faster later checks").
const finished = new Map<string, VideoJobRow>();
const FINISHED_CACHE = 5000;

/**
 * The caller's job, or 400 without an id; another account's job answers the same 404 as an unknown
 * id, so an id's existence cannot be probed (as files, batches and responses do).
 */
async function ownedJob(ctx: Context, id: unknown, param = 'requestId'): Promise<VideoJobRow> {
  if (typeof id !== 'string' || !id)
    throw new RequestError(
      400,
      'missing_required_parameter',
      `Missing required parameter: '${param}' (the runId that POST /api/generate-video returned).`,
      { param },
    );
  const caller = ctx.state.caller;
  let row = finished.get(id) ?? null;
  if (!row) {
    row = await loadVideoJob(id);
    if (row && isTerminal(row.status)) {
      if (finished.size >= FINISHED_CACHE) finished.delete(finished.keys().next().value!);
      finished.set(id, row);
    }
  }
  if (!row || row.accountId !== caller.accountId)
    throw new RequestError(404, 'not_found', `No video job with id '${id}'.`, { param });
  return row;
}

const statusQuery = validateQuery({
  type: 'object',
  properties: { requestId: { type: 'string' }, runId: { type: 'string' }, model: { type: 'string' } },
});

videoRouter.get('/api/video/status', surface('legacy'), authenticate, statusQuery, async (ctx) => {
  const q = ctx.state.query as { requestId?: string; runId?: string };
  const row = await ownedJob(ctx, q.requestId ?? q.runId);
  ctx.set('Cache-Control', 'no-store');
  ctx.body = { requestId: row.id, model: row.model, data: await videoStatusData(row, publicOrigin(ctx)) };
});

videoRouter.get('/api/generate-video/status', surface('legacy'), authenticate, statusQuery, async (ctx) => {
  const q = ctx.state.query as { requestId?: string; runId?: string };
  const row = await ownedJob(ctx, q.requestId ?? q.runId);
  ctx.set('Deprecation', 'true');
  ctx.set('Link', '</api/video/status>; rel="successor-version"');
  ctx.set('Cache-Control', 'no-store');
  const data = await videoStatusData(row, publicOrigin(ctx));
  // The legacy flow shows the provider's own labels (IN_QUEUE, IN_PROGRESS, COMPLETED, ...).
  const label = videoStatusLabel(row);
  ctx.body = {
    requestId: row.id,
    model: row.model,
    status: label,
    videoUrl: data.videoUrl,
    data: { ...data, status: label, normalizedStatus: data.status },
  };
});

videoRouter.get(
  '/api/generate-video/recover',
  surface('legacy'),
  authenticate,
  perKeyRate('video recover', 20),
  validateQuery({
    type: 'object',
    properties: {
      model: { type: 'string' },
      limit: { type: 'integer', minimum: 1, maximum: 50, default: 10 },
      conversationUUID: { type: 'string' },
    },
  }),
  async (ctx) => {
    const q = ctx.state.query as { model?: string; limit: number; conversationUUID?: string };
    const caller = ctx.state.caller;
    const model = q.model ? (catalog().model(q.model)?.id ?? q.model) : undefined;
    const rows = await recentVideoJobs(caller.accountId, {
      model,
      conversationUuid: q.conversationUUID,
      limit: q.limit,
    });
    const data = await Promise.all(
      rows.map(async (row) => ({
        runId: row.id,
        id: row.id,
        model: row.model,
        conversationUUID: row.conversationUuid,
        prompt: (row.request as { prompt?: string | null }).prompt ?? null,
        ...(await videoStatusData(row, publicOrigin(ctx))),
      })),
    );
    ctx.body = { object: 'list', data, count: data.length };
  },
);

videoRouter.post(
  '/api/generate-video/extend',
  surface('legacy'),
  authenticate,
  perKeyRate('video extend', 20),
  refuseUnofferedFeatures,
  validateBody(videoExtendSchema),
  async (ctx) => {
    const body = ctx.request.body as { runId?: string; taskId?: string; index: number; prompt?: string } & Record<
      string,
      unknown
    >;
    const caller = ctx.state.caller;
    const videoFields = MEDIA_FIELDS.video.filter((f) => body[f] !== undefined);
    if (videoFields.length) {
      throw new RequestError(
        400,
        'invalid_parameter_value',
        `Extend continues the job's own video and takes no video input ('${videoFields.join("', '")}'). To extend a video of your own, POST /api/generate-video with an extend model and videoUrl.`,
        { param: videoFields[0] },
      );
    }
    const source = await ownedJob(ctx, body.runId ?? body.taskId, body.runId ? 'runId' : 'taskId');
    const model = catalog().model(source.model);
    if (model?.options.extendable !== true) {
      throw new RequestError(
        400,
        'invalid_parameter_value',
        `Only Midjourney-style jobs can be extended here; '${source.model}' is not one.`,
        { param: 'runId' },
      );
    }
    if (source.status !== 'completed' || !source.providerRequestId) {
      throw new RequestError(
        409,
        'video_not_ready',
        `Job '${source.id}' is ${normalizedVideoStatus(source.status)}; only a completed job can be extended.`,
        { param: 'runId' },
      );
    }
    const variants = Math.max(1, Math.floor(numberOption(model, 'variants', 1)));
    if (body.index >= variants)
      throw new RequestError(400, 'invalid_parameter_value', `'index' must be 0-${variants - 1} for '${model.id}'.`, {
        param: 'index',
      });
    const route = model.routes.find((r) => r.provider.id === source.providerId && r.available);
    if (!route)
      throw new RequestError(
        503,
        'model_not_available',
        `The provider that made job '${source.id}' is not configured here any more.`,
      );
    const prompt = typeof body.prompt === 'string' && body.prompt.trim() ? body.prompt.trim() : null;
    const plan = planVideoExtension(model, route, { providerRequestId: source.providerRequestId }, body.index, prompt);
    ctx.status = 202;
    ctx.body = {
      ...(await startVideoJob({
        caller,
        plan,
        conversationUuid: source.conversationUuid,
        extendOf: { runId: source.id, index: body.index },
      })),
      model: model.id,
      extendedFrom: { runId: source.id, index: body.index },
    };
  },
);

videoRouter.get(
  '/api/generate-video/content',
  surface('legacy'),
  authenticate,
  validateQuery({
    type: 'object',
    properties: { runId: { type: 'string' }, model: { type: 'string' }, variant: { type: 'string', default: 'video' } },
  }),
  async (ctx) => {
    const q = ctx.state.query as { runId?: string; model?: string; variant: string };
    // `model` is required and names the job's model, one of the video models served here (the
    // catalog's, by id or alias): content is served for whatever the catalog serves, not one name.
    const served = catalog().usable('video');
    if (!q.model)
      throw new RequestError(
        400,
        'missing_required_parameter',
        `Missing required parameter: 'model' (the job's video model: ${served.map((m) => m.id).join(', ') || 'none is served'}).`,
        { param: 'model' },
      );
    const model = catalog().model(q.model);
    if (!model || !served.some((m) => m.id === model.id))
      throw new RequestError(
        400,
        'invalid_parameter_value',
        `'model' must be a video model served here ('${q.model}' is not one): ${served.map((m) => m.id).join(', ') || 'none is served'}.`,
        { param: 'model' },
      );
    const row = await ownedJob(ctx, q.runId, 'runId');
    if (row.model !== model.id) {
      throw new RequestError(
        400,
        'invalid_parameter_value',
        `Job '${row.id}' was made by '${row.model}', not '${model.id}': send model=${row.model}.`,
        { param: 'model' },
      );
    }
    if (!['video', 'thumbnail', 'spritesheet'].includes(q.variant)) {
      throw new RequestError(400, 'invalid_parameter_value', `'variant' must be video, thumbnail or spritesheet.`, {
        param: 'variant',
      });
    }
    if (q.variant !== 'video') {
      throw new RequestError(
        404,
        'variant_not_available',
        `'${row.model}' produces no ${q.variant}; only variant=video is available for this job.`,
        { param: 'variant' },
      );
    }
    if (row.status !== 'completed' || !row.outputFileId) {
      throw new RequestError(
        409,
        'video_not_ready',
        `Job '${row.id}' is ${normalizedVideoStatus(row.status)}; its content is available once it is completed.`,
        { param: 'runId' },
      );
    }
    const file = await readHostedFile(row.outputFileId);
    if (!file)
      throw new RequestError(
        404,
        'not_found',
        'This video no longer exists: hosted outputs are deleted 24 hours after they are made.',
      );
    ctx.set('Cache-Control', 'private, max-age=3600');
    ctx.type = file.contentType;
    ctx.body = file.data;
  },
);

/** How long a cancel waits for the job to end before answering 202 with the job as it is. */
const CANCEL_WAIT_MS = 10_000;
const ENGINE_UNAVAILABLE = {
  code: 'video_unavailable',
  message:
    'The job could not be reached just now (the workflow engine is unavailable). Nothing changed; retry shortly.',
};

videoRouter.post(
  '/api/generate-video/cancel',
  surface('legacy'),
  authenticate,
  validateBody(videoCancelSchema),
  async (ctx) => {
    const { runId } = ctx.request.body as { runId: string };
    const row = await ownedJob(ctx, runId, 'runId');
    if (row.status === 'completed' || row.status === 'failed') {
      throw new RequestError(
        409,
        'job_not_cancellable',
        `Job '${row.id}' has already ${row.status === 'completed' ? 'completed' : 'failed'}; there is nothing to cancel.`,
        { param: 'runId' },
      );
    }
    // the workflow asks the provider to stop, releases the pre-charge and marks the job; its
    // `ended` update answers once it has (within CANCEL_WAIT_MS, else 202 and the job as it is)
    if (row.status !== 'cancelled') await cancelJobAndWait(row.id, CANCEL_WAIT_MS, ENGINE_UNAVAILABLE);
    const now = (await loadVideoJob(row.id)) ?? row;
    ctx.status = isTerminal(now.status) ? 200 : 202;
    ctx.body = { requestId: now.id, model: now.model, data: await videoStatusData(now, publicOrigin(ctx)) };
  },
);
