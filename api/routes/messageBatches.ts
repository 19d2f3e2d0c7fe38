// Native message batches (spec "Batches"; the public Message Batches shape of the message-style
// API), message-style error envelope. Each batch is a `batchJob` workflow whose id is the batch id
// (`msgbatch_...`); these routes only check, start, read, cancel and delete:
//   POST   /v1/messages/batches                {requests:[{custom_id, params}]} → message_batch
//   GET    /v1/messages/batches                list, newest first (before_id, after_id, limit)
//   GET    /v1/messages/batches/{id}           the batch
//   POST   /v1/messages/batches/{id}/cancel    canceling → ended (rows not started: canceled)
//   DELETE /v1/messages/batches/{id}           an ended batch only
//   GET    /v1/messages/batches/{id}/results   JSONL, one line per request, streamed
// (all also under /api). `results_url` is absolute, so the official SDK's `results()` fetches it
// with the same key. An `Idempotency-Key` header makes a create safe to retry: the same key and
// body answer the batch already made; the same key with another body is a 409.
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import Router from '@koa/router';
import type { Middleware } from 'koa';
import {
  checkMessageRequests,
  deleteEndedBatch,
  MESSAGE_BATCH_LIMITS,
  type MessageRequest,
  MessageRowChecker,
  type RowOutcome,
  rowOutcomes,
} from '../../activities/batches/messageBatches.js';
import { cancelBatch, requestHash, startBatch, startStreamedBatch } from '../../activities/batches/start.js';
import {
  type BatchRecord,
  batchExists,
  listBatches,
  loadBatch,
  rowRequestId,
  TERMINAL,
} from '../../activities/batches/store.js';
import { RequestError } from '../../activities/core/errors.js';
import { toDisplayNumber } from '../../activities/core/money.js';
import { toJson } from '../../activities/json.js';
import { renderError } from '../../activities/surfaces/errors.js';
import { authenticate } from '../middleware/auth.js';
import { refuseUnofferedFeatures } from '../middleware/notOffered.js';
import { surface } from '../middleware/surface.js';
import { publicOrigin, v1 } from '../paths.js';
import { messageBatchListQuery, messageBatchSchema } from '../../activities/surfaces/schemas/messageBatches.js';
import type { AppContext, AppState } from '../state.js';
import { readStreamedObject } from '../streamedJson.js';
import { streamedBodyChecks, validateBody, validateQuery } from '../validate.js';

export const messageBatchesRouter = new Router<AppState>();

/**
 * A create's body: up to 200 MiB of requests (spec, Limits), and the values they hold. One larger
 * than `streamAbove` (or of unknown size) is read as it arrives, request by request, into storage
 * (createStreamed); a smaller one is parsed whole, which is faster for it.
 */
const CREATE_BODY = { limitBytes: 200 * 1024 * 1024, maxValues: 20_000_000, streamAbove: 1024 * 1024 };
const streamedChecks = streamedBodyChecks(messageBatchSchema, 'requests');
const MAX_IDEMPOTENCY_KEY = 255;

/**
 * A 409 here (a reused Idempotency-Key, a batch not ended) says so for good: `x-should-retry:
 * false` keeps the official SDK from retrying it, as it otherwise retries every 409.
 */
const conflictsAreFinal: Middleware<AppState> = async (_ctx, next) => {
  try {
    await next();
  } catch (err) {
    if (err instanceof RequestError && err.status === 409)
      throw new RequestError(409, err.code, err.message, {
        ...err.opts,
        headers: { ...err.opts.headers, 'x-should-retry': 'false' },
      });
    throw err;
  }
};

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** processing_status: the engine's statuses as the Message Batches API names them. */
function processingStatus(status: string): 'in_progress' | 'canceling' | 'ended' {
  if (TERMINAL.has(status)) return 'ended';
  return status === 'cancelling' ? 'canceling' : 'in_progress';
}

/** Where the batch's results are read, absolute, under the prefix (`/api` or none) the caller used. */
function resultsUrl(ctx: AppContext, id: string): string {
  const origin = (process.env.SWITCHYARD_PUBLIC_URL || publicOrigin(ctx)).replace(/\/+$/, '');
  return `${origin}${ctx.path.startsWith('/api/') ? '/api' : ''}/v1/messages/batches/${id}/results`;
}

/**
 * The `message_batch` object. Counts are live: a row leaves `processing` as soon as it has an
 * outcome, so progress shows while the batch runs (they always sum to the batch's requests).
 * `cost` (USD, batch prices) is the gateway's addition, as on every billed answer.
 */
function messageBatchObject(ctx: AppContext, b: BatchRecord) {
  const ended = TERMINAL.has(b.status);
  return {
    id: b.id,
    type: 'message_batch',
    processing_status: processingStatus(b.status),
    request_counts: {
      processing: Math.max(0, b.total - b.completed - b.failed - b.cancelled - b.expired),
      succeeded: b.completed,
      errored: b.failed,
      canceled: b.cancelled,
      expired: b.expired,
    },
    ended_at: ended ? iso(b.finished_at) : null,
    created_at: iso(b.created_at),
    expires_at: iso(b.expires_at),
    archived_at: null,
    cancel_initiated_at: iso(b.cancelling_at),
    results_url: ended ? resultsUrl(ctx, b.id) : null,
    cost: toDisplayNumber(BigInt(b.cost), 'USD'),
  };
}

/** One line of the results: the message, the error (message-style envelope), or why it never ran. */
function resultLine(batchId: string, r: RowOutcome) {
  switch (r.status) {
    case 'succeeded':
      return { custom_id: r.custom_id, result: { type: 'succeeded', message: r.result } };
    case 'cancelled':
      return { custom_id: r.custom_id, result: { type: 'canceled' } };
    case 'expired':
      return { custom_id: r.custom_id, result: { type: 'expired' } };
    default: {
      const e = (r.result ?? {}) as { code?: string; message?: string };
      const err = new RequestError(r.status_code ?? 500, e.code ?? 'error', e.message ?? 'The request failed.');
      return {
        custom_id: r.custom_id,
        result: {
          type: 'errored',
          error: { ...renderError(err, 'message'), request_id: rowRequestId(batchId, r.idx) },
        },
      };
    }
  }
}

async function* resultsJsonl(batchId: string): AsyncGenerator<Buffer> {
  for await (const page of rowOutcomes(batchId))
    yield Buffer.from(page.map((r) => `${toJson(resultLine(batchId, r))}\n`).join(''));
}

const notFound = (id: string) =>
  new RequestError(404, 'batch_not_found', `No message batch with id '${id}' (it may belong to another account).`);

async function ownBatch(ctx: AppContext): Promise<BatchRecord> {
  const id = String(ctx.params.id);
  const batch = await loadBatch(id, ctx.state.caller.accountId);
  if (batch?.kind !== 'message') throw notFound(id);
  return batch;
}

messageBatchesRouter.post(
  v1('/messages/batches'),
  surface('message', CREATE_BODY),
  conflictsAreFinal,
  authenticate,
  refuseUnofferedFeatures,
  validateBody(messageBatchSchema),
  async (ctx) => {
    const key = ctx.get('idempotency-key').trim() || undefined;
    if (key && key.length > MAX_IDEMPOTENCY_KEY)
      throw new RequestError(
        400,
        'invalid_parameter_value',
        `The Idempotency-Key header is ${key.length} characters; at most ${MAX_IDEMPOTENCY_KEY}.`,
      );
    const streamed = ctx.request.streamedBody;
    if (streamed) {
      ctx.body = messageBatchObject(ctx, await createStreamed(ctx, streamed, key));
      return;
    }
    const body = ctx.request.body as { requests: MessageRequest[] };
    const { model, rows } = checkMessageRequests(body.requests);
    const batch = await startBatch({
      caller: ctx.state.caller,
      kind: 'message',
      endpoint: '/v1/messages',
      model: model.id,
      requests: rows,
      metadata: null,
      idempotencyKey: key,
      hash: requestHash({ kind: 'message', requests: body.requests }),
    });
    ctx.body = messageBatchObject(ctx, batch);
  },
);

/**
 * A large create, read as it arrives: each request is checked (schema, then the batch's rules) and
 * stored as soon as it is whole, so memory holds a request at a time rather than the body. The
 * refusals are those of a body parsed whole, naming `requests[i]`; a refusal half-way stores
 * nothing. The Idempotency-Key hash is over the same text as requestHash() gives for a whole body.
 */
function createStreamed(
  ctx: AppContext,
  body: NonNullable<AppContext['request']['streamedBody']>,
  key: string | undefined,
): Promise<BatchRecord> {
  return startStreamedBatch(
    { caller: ctx.state.caller, kind: 'message', endpoint: '/v1/messages', metadata: null, idempotencyKey: key },
    async (store) => {
      const checker = new MessageRowChecker();
      const hash = createHash('sha256').update('{"kind":"message","requests":[');
      const { fields, items } = await readStreamedObject(body.chunks(), 'requests', body.limits, async (item, i) => {
        // past the most a batch holds: refused now (the schema's maxItems), not after reading the rest
        if (i >= MESSAGE_BATCH_LIMITS.requests) streamedChecks.rest({}, i + 1);
        streamedChecks.item(item, i);
        const row = checker.check(item as MessageRequest, i);
        hash.update(i ? `,${JSON.stringify(item)}` : JSON.stringify(item));
        await store(row);
      });
      streamedChecks.rest(fields, items);
      return { model: checker.model!.id, hash: hash.update(']}').digest('hex') };
    },
  );
}

messageBatchesRouter.get(
  v1('/messages/batches'),
  surface('message'),
  authenticate,
  validateQuery(messageBatchListQuery),
  async (ctx) => {
    const q = ctx.state.query as { limit: number; before_id?: string; after_id?: string };
    if (q.before_id !== undefined && q.after_id !== undefined)
      throw new RequestError(400, 'invalid_parameter_value', "Use 'before_id' or 'after_id', not both.");
    const cursor = q.after_id ?? q.before_id;
    if (cursor !== undefined && !(await batchExists(ctx.state.caller.accountId, cursor)))
      throw new RequestError(
        400,
        'invalid_parameter_value',
        `'${q.after_id ? 'after_id' : 'before_id'}' names no batch of yours: ${cursor}.`,
      );
    const { rows, hasMore } = await listBatches({
      accountId: ctx.state.caller.accountId,
      kind: 'message',
      limit: q.limit,
      after: q.after_id,
      before: q.before_id,
    });
    const data = rows.map((b) => messageBatchObject(ctx, b));
    ctx.body = { data, has_more: hasMore, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null };
  },
);

messageBatchesRouter.get(v1('/messages/batches/:id'), surface('message'), authenticate, async (ctx) => {
  ctx.body = messageBatchObject(ctx, await ownBatch(ctx));
});

messageBatchesRouter.post(
  v1('/messages/batches/:id/cancel'),
  surface('message'),
  conflictsAreFinal,
  authenticate,
  async (ctx) => {
    const { id } = await ownBatch(ctx);
    ctx.body = messageBatchObject(ctx, (await cancelBatch(id, ctx.state.caller.accountId))!);
  },
);

messageBatchesRouter.delete(
  v1('/messages/batches/:id'),
  surface('message'),
  conflictsAreFinal,
  authenticate,
  async (ctx) => {
    const id = String(ctx.params.id);
    const outcome = await deleteEndedBatch(id, ctx.state.caller.accountId);
    if (outcome === undefined) throw notFound(id);
    if (outcome !== 'deleted')
      throw new RequestError(
        409,
        'batch_not_ended',
        `Message batch ${id} is still ${processingStatus(outcome.status)}; only an ended batch can be deleted. ` +
          'Cancel it first, then delete it once it has ended.',
      );
    ctx.body = { id, type: 'message_batch_deleted' };
  },
);

messageBatchesRouter.get(
  v1('/messages/batches/:id/results'),
  surface('message'),
  conflictsAreFinal,
  authenticate,
  async (ctx) => {
    const batch = await ownBatch(ctx);
    if (!TERMINAL.has(batch.status))
      throw new RequestError(
        409,
        'batch_not_ended',
        `Message batch ${batch.id} is still ${processingStatus(batch.status)}; its results are ready once it has ended ` +
          '(when its results_url is set).',
      );
    ctx.type = 'application/x-jsonl';
    ctx.body = Readable.from(resultsJsonl(batch.id));
  },
);
