// Batches (spec "Batches"), OpenAI-style envelope. Each batch is a `batchJob` workflow (workflow
// id = batch id); these routes only check, start, read the batch's row and cancel:
//   POST /api/beta/batches                 inline: {endpoint, model, requests:[{custom_id, body}], metadata?} → 202
//   GET  /api/beta/batches                 list (newest first; `results` null)
//   GET  /api/beta/batches/{id}            the batch; once it has ended, `results` (one output line per row)
//   POST /api/beta/batches/{id}/cancel     cancelling → cancelled
//   POST /api/v1/batches (and /v1/batches) file-backed: {input_file_id, endpoint, completion_window:"24h",
//                                          metadata?}; the file is read and checked by the workflow
//                                          (`validating`); output and error files when it ends
//   GET  /api/v1/batches, GET /api/v1/batches/{id}, POST /api/v1/batches/{id}/cancel
// An `Idempotency-Key` header makes a create safe to retry: the same key and body answer the
// batch already made; the same key with another body is a 409.
import Router from '@koa/router';
import { RequestError } from '../../activities/core/errors.js';
import { resolveModel } from '../../activities/catalog/resolve.js';
import { cancelBatch, checkInlineRequests, requestHash, startBatch } from '../../activities/batches/start.js';
import {
  type BatchRecord,
  batchExists,
  finishedRows,
  listBatches,
  loadBatch,
  TERMINAL,
} from '../../activities/batches/store.js';
import { batchObject, outputLine } from '../../activities/batches/views.js';
import { authenticate } from '../middleware/auth.js';
import { refuseUnofferedRedaction } from '../middleware/notOffered.js';
import { surface } from '../middleware/surface.js';
import { batchListQuery, fileBatchSchema, inlineBatchSchema } from '../../activities/surfaces/schemas/batches.js';
import { v1 } from '../paths.js';
import type { AppContext, AppState } from '../state.js';
import { validateBody, validateQuery } from '../validate.js';

export const batchesRouter = new Router<AppState>();

/** An inline batch's body: 20 MiB of requests as they run, plus the JSON around them. */
const INLINE_BODY = { limitBytes: 32 * 1024 * 1024, maxValues: 2_000_000 };

const notFound = (id: string) =>
  new RequestError(404, 'batch_not_found', `No batch with id '${id}' (it may belong to another account).`, {
    param: 'batch_id',
  });

async function ownBatch(ctx: AppContext, kind: 'inline' | 'file'): Promise<BatchRecord> {
  const id = String(ctx.params.id);
  const batch = await loadBatch(id, ctx.state.caller.accountId);
  if (!batch || batch.kind !== kind) throw notFound(id);
  return batch;
}

/** Unix seconds or ISO 8601 (the schema has checked the form; the date itself is checked here). */
function instant(v: unknown, param: string): Date | undefined {
  if (v === undefined) return undefined;
  const d = /^\d+$/.test(String(v)) ? new Date(Number(v) * 1000) : new Date(String(v));
  if (Number.isNaN(d.getTime()) || d.getUTCFullYear() > 9999)
    throw new RequestError(400, 'invalid_parameter_value', `'${param}' is not a date: ${String(v)}.`, { param });
  return d;
}

/** GET list, for either kind: filters of the spec, newest first, the list envelope. */
async function listRoute(ctx: AppContext, kind: 'inline' | 'file'): Promise<void> {
  const q = ctx.state.query as Record<string, string | number | undefined>;
  if (q.after !== undefined && q.before !== undefined)
    throw new RequestError(400, 'invalid_parameter_value', "Use 'after' or 'before', not both.", { param: 'before' });
  const cursor = (q.after ?? q.before) as string | undefined;
  if (cursor !== undefined && !(await batchExists(ctx.state.caller.accountId, cursor)))
    throw new RequestError(
      400,
      'invalid_parameter_value',
      `'${q.after ? 'after' : 'before'}' names no batch of yours: ${cursor}.`,
      {
        param: q.after ? 'after' : 'before',
      },
    );
  const { rows, hasMore } = await listBatches({
    accountId: ctx.state.caller.accountId,
    kind,
    limit: Number(q.limit),
    after: q.after as string | undefined,
    before: q.before as string | undefined,
    status: q.status as string | undefined,
    createdAfter: instant(q.created_after, 'created_after'),
    createdBefore: instant(q.created_before, 'created_before'),
  });
  const data = rows.map((b) => batchObject(b, kind === 'inline' ? null : undefined));
  ctx.body = {
    object: 'list',
    data,
    first_id: data[0]?.id ?? null,
    last_id: data.at(-1)?.id ?? null,
    has_more: hasMore,
  };
}

/** POST cancel, for either kind. */
async function cancelRoute(ctx: AppContext, kind: 'inline' | 'file'): Promise<void> {
  await ownBatch(ctx, kind);
  const batch = await cancelBatch(String(ctx.params.id), ctx.state.caller.accountId);
  ctx.body = batchObject(batch!, kind === 'inline' ? null : undefined);
}

batchesRouter.post(
  '/api/beta/batches',
  surface('openai', INLINE_BODY),
  authenticate,
  refuseUnofferedRedaction,
  validateBody(inlineBatchSchema),
  async (ctx) => {
    const body = ctx.request.body as {
      endpoint: string;
      model: string;
      requests: Array<{ custom_id: string; body: Record<string, unknown> }>;
      metadata?: Record<string, string> | null;
    };
    // the batch rules first: a model a batch cannot run is their unsupported_model
    const requests = checkInlineRequests(body.endpoint, body.model, body.requests);
    const { model } = resolveModel(body.model);
    const batch = await startBatch({
      caller: ctx.state.caller,
      kind: 'inline',
      endpoint: body.endpoint,
      model: model.id,
      requests,
      metadata: body.metadata ?? null,
      idempotencyKey: ctx.get('idempotency-key') || undefined,
      hash: requestHash(body),
    });
    ctx.status = 202;
    ctx.body = batchObject(batch, null);
  },
);

batchesRouter.get('/api/beta/batches', surface('openai'), authenticate, validateQuery(batchListQuery), (ctx) =>
  listRoute(ctx, 'inline'),
);

batchesRouter.get('/api/beta/batches/:id', surface('openai'), authenticate, async (ctx) => {
  const batch = await ownBatch(ctx, 'inline');
  // results are read from the ended batch: one line per row that ran, in the order of the requests
  const results = TERMINAL.has(batch.status)
    ? (await finishedRows(batch.id, 0, batch.total)).map((r) => outputLine(batch.id, r))
    : null;
  ctx.body = batchObject(batch, results);
});

batchesRouter.post('/api/beta/batches/:id/cancel', surface('openai'), authenticate, (ctx) =>
  cancelRoute(ctx, 'inline'),
);

const fileBatchPreamble = [surface('openai'), authenticate, refuseUnofferedRedaction, validateBody(fileBatchSchema)];

batchesRouter.post(v1('/batches'), ...fileBatchPreamble, async (ctx) => {
  const body = ctx.request.body as {
    input_file_id: string;
    endpoint: string;
    metadata?: Record<string, string> | null;
  };
  const batch = await startBatch({
    caller: ctx.state.caller,
    kind: 'file',
    endpoint: body.endpoint,
    model: null,
    inputFileId: body.input_file_id,
    metadata: body.metadata ?? null,
    idempotencyKey: ctx.get('idempotency-key') || undefined,
    hash: requestHash(body),
  });
  ctx.body = batchObject(batch);
});

batchesRouter.get(v1('/batches'), surface('openai'), authenticate, validateQuery(batchListQuery), (ctx) =>
  listRoute(ctx, 'file'),
);

batchesRouter.get(v1('/batches/:id'), surface('openai'), authenticate, async (ctx) => {
  ctx.body = batchObject(await ownBatch(ctx, 'file'));
});

batchesRouter.post(v1('/batches/:id/cancel'), surface('openai'), authenticate, (ctx) => cancelRoute(ctx, 'file'));
