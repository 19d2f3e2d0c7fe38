// biome-ignore-all lint/suspicious/noExplicitAny: creation bodies are wire JSON, read field by field
// Creating and cancelling batches, for the API: the checks an inline batch passes before its 202
// (the spec's limits and every row's rules), the Idempotency-Key, and the job pattern (the row
// and the `batchJob` workflow, workflow id = batch id, started together or not at all).
import { createHash, randomBytes } from 'node:crypto';
import type { Caller } from '../core/caller.js';
import { config } from '../config.js';
import { RequestError } from '../core/errors.js';
import { db, isUniqueViolation } from '../db.js';
import { inTransaction } from '../files/files.js';
import { holdFile, releaseFileHolds } from '../files/holds.js';
import { cancelJob, startJob } from '../jobs/jobs.js';
import { batchJob } from '../../workflows/batch.js';
import { INLINE_DEFAULT_OUTPUT_CAP, rowKind } from './kinds.js';
import { batchModel, capOf, checkRow } from './rowRules.js';
import { type BatchRecord, batchByIdempotencyKey, loadBatch, storedCaller } from './store.js';

/** Inline batch limits (spec, Limits). */
const INLINE_LIMITS = { requests: 10_000, inputBytes: 20 * 1024 * 1024, outputTokens: 250_000 };

/** The public id, also the workflow's: `msgbatch_...` for native message batches, else `batch_...`. */
const newBatchId = (kind: NewBatch['kind']) =>
  `${kind === 'message' ? 'msgbatch' : 'batch'}_${randomBytes(16).toString('hex')}`;

/** What an Idempotency-Key is compared by: the creation body, canonical enough for a replay. */
export const requestHash = (body: unknown) => createHash('sha256').update(JSON.stringify(body)).digest('hex');

/**
 * An inline batch's requests, checked against the spec's limits and each row's rules (a refusal
 * names `requests[i]`), with the model and the output cap filled in as they will run.
 */
export function checkInlineRequests(
  endpoint: string,
  modelName: string,
  requests: Array<{ custom_id: string; body: any }>,
): Array<{ custom_id: string; body: Record<string, any> }> {
  const kind = rowKind(endpoint);
  const model = batchModel(modelName);
  if (requests.length > INLINE_LIMITS.requests)
    throw new RequestError(
      400,
      'invalid_parameter_value',
      `An inline batch holds at most ${INLINE_LIMITS.requests} requests; this one has ${requests.length}. Split it.`,
      { param: 'requests' },
    );
  const seen = new Set<string>();
  let outputTokens = 0;
  const rows = requests.map((r, i) => {
    if (seen.has(r.custom_id))
      throw new RequestError(
        400,
        'invalid_parameter_value',
        `requests[${i}].custom_id '${r.custom_id}' is used twice.`,
        {
          param: `requests[${i}].custom_id`,
        },
      );
    seen.add(r.custom_id);
    const checked = checkRow(kind, i, r.body, model, INLINE_DEFAULT_OUTPUT_CAP);
    if ('problem' in checked) {
      const p = checked.problem;
      throw new RequestError(400, p.code, `requests[${i}]: ${p.message}`, {
        param: `requests[${i}].body${p.param ? `.${p.param}` : ''}`,
      });
    }
    outputTokens += capOf(kind, checked.body);
    return { custom_id: r.custom_id, body: checked.body };
  });
  if (outputTokens > INLINE_LIMITS.outputTokens)
    throw new RequestError(
      400,
      'invalid_parameter_value',
      `The requests ask for up to ${outputTokens} output tokens in all; an inline batch may ask for ${INLINE_LIMITS.outputTokens}. ` +
        `Lower the rows' output caps (a row without one gets ${INLINE_DEFAULT_OUTPUT_CAP}) or split the batch.`,
      { param: 'requests' },
    );
  const bytes = Buffer.byteLength(JSON.stringify(rows));
  if (bytes > INLINE_LIMITS.inputBytes)
    throw new RequestError(
      413,
      'payload_too_large',
      `The requests are ${bytes} bytes as they will run; an inline batch takes at most ${INLINE_LIMITS.inputBytes}. Split it.`,
      { param: 'requests' },
    );
  return rows;
}

export interface NewBatch {
  caller: Caller;
  kind: BatchRecord['kind'];
  endpoint: string;
  /** the catalog model id (inline); a file-backed batch learns it from its rows */
  model: string | null;
  /** inline and message batches: the checked requests */
  requests?: Array<{ custom_id: string; body: Record<string, any> }>;
  inputFileId?: string;
  metadata: Record<string, string> | null;
  idempotencyKey?: string;
  /** requestHash() of the creation body */
  hash: string;
}

/**
 * Store the batch and start its workflow; with an Idempotency-Key, a replay of the same request
 * answers the batch it made, and the same key with another body is a 409.
 */
export async function startBatch(b: NewBatch): Promise<BatchRecord> {
  const accountId = b.caller.accountId;
  if (b.idempotencyKey) {
    const earlier = await batchByIdempotencyKey(accountId, b.idempotencyKey);
    if (earlier) return sameRequest(earlier, b.hash);
  }
  const id = newBatchId(b.kind);
  // the input file is the batch's from here on: it cannot be deleted while the batch may read it
  // (404 / 400 here if it is not the caller's batch file)
  if (b.inputFileId) await holdFile(b.inputFileId, accountId, id);
  try {
    await startBatchJob(id, batchColumns(id, b));
  } catch (err) {
    if (b.inputFileId) await releaseFileHolds(id);
    // the same key raced in from another request and was stored first: answer that one
    if (!b.idempotencyKey || !isUniqueViolation(err)) throw err;
    const earlier = await batchByIdempotencyKey(accountId, b.idempotencyKey);
    if (!earlier) throw err;
    return sameRequest(earlier, b.hash);
  }
  return (await loadBatch(id))!;
}

/** The batch's row as it is first stored, `validating`. */
function batchColumns(id: string, b: Omit<NewBatch, 'hash'> & { hash: string | null }) {
  return {
    id,
    kind: b.kind,
    account_id: b.caller.accountId,
    api_key_id: b.caller.keyId,
    endpoint: b.endpoint,
    model: b.model,
    status: 'validating',
    input_file_id: b.inputFileId ?? null,
    metadata: b.metadata,
    input: b.requests ?? null,
    total: b.requests?.length ?? 0,
    payer: storedCaller(b.caller),
    idempotency_key: b.idempotencyKey ?? null,
    request_hash: b.hash,
    expires_at: new Date(Date.now() + config.batchWindowSeconds * 1000),
  };
}

/** The batch's workflow started, with its row (`stored`: the row is already written). */
function startBatchJob(id: string, columns: ReturnType<typeof batchColumns>, stored = false): Promise<void> {
  return startJob({
    id,
    accountId: columns.account_id,
    workflow: batchJob,
    args: [
      {
        batchId: id,
        concurrency: config.batchConcurrency,
        chunkRows: config.batchChunkRows,
        windowMs: config.batchWindowSeconds * 1000,
        rowAttempts: config.batchRowAttempts,
        rowsPerActivity: config.batchRowsPerActivity,
      },
    ],
    row: { table: 'batches', columns },
    stored,
    unavailable: {
      code: 'batches_unavailable',
      message:
        'Batches are unavailable right now (the workflow engine did not accept the batch). Nothing was charged; retry.',
    },
  });
}

/** What a batch read as it arrives gives back once its last row is stored. */
export interface StreamedRows {
  /** the catalog model id */
  model: string;
  /** requestHash() of the creation body */
  hash: string;
}

/** An earlier batch under the same Idempotency-Key, found once the body was read: nothing is kept. */
class Replay extends Error {
  constructor(readonly earlier: BatchRecord) {
    super(`a replay of batch ${earlier.id}`);
  }
}

/** Rows are written to the database this many bytes (as JSON) at a time. */
const ROW_WRITE_BYTES = 1024 * 1024;

/**
 * A batch whose requests are read as they arrive (a create body of up to 200 MiB): `fill` checks
 * each and hands it to `store`, which writes the rows in chunks. The batch and its rows are one
 * transaction, so a body refused half-way (a bad row, the limit, a dropped connection) leaves
 * nothing behind; once committed, the workflow starts as for any batch (its rows are already made,
 * so it skips straight to running them). The Idempotency-Key is settled once the body's hash is
 * known: a replay answers the earlier batch and keeps nothing of this one.
 */
export async function startStreamedBatch(
  b: Omit<NewBatch, 'requests' | 'hash' | 'model' | 'inputFileId'>,
  fill: (store: (row: { custom_id: string; body: Record<string, any> }) => Promise<void>) => Promise<StreamedRows>,
): Promise<BatchRecord> {
  const id = newBatchId(b.kind);
  const columns = batchColumns(id, { ...b, model: null, hash: null, idempotencyKey: undefined });
  let hash = '';
  try {
    await inTransaction(async (client) => {
      const names = Object.keys(columns);
      await client.query(
        `INSERT INTO batches (${names.join(', ')}) VALUES (${names.map((_, i) => `$${i + 1}`).join(', ')})`,
        // JSON columns as JSON text (pg would write an array as a Postgres array literal)
        Object.values(columns).map((v) =>
          v !== null && typeof v === 'object' && !(v instanceof Date) ? JSON.stringify(v) : v,
        ),
      );
      let pending: string[] = [];
      let pendingBytes = 0;
      let total = 0;
      const flush = async () => {
        if (!pending.length) return;
        await client.query(
          `INSERT INTO batch_rows (batch_id, idx, custom_id, body)
           SELECT $1, $2 + (t.ord - 1)::int, t.e->>'custom_id', t.e->'body'
           FROM jsonb_array_elements($3::jsonb) WITH ORDINALITY AS t(e, ord)`,
          [id, total - pending.length, `[${pending.join(',')}]`],
        );
        pending = [];
        pendingBytes = 0;
      };
      const filled = await fill(async (row) => {
        const json = JSON.stringify(row);
        pending.push(json);
        pendingBytes += json.length;
        total++;
        if (pendingBytes >= ROW_WRITE_BYTES) await flush();
      });
      await flush();
      hash = filled.hash;
      if (b.idempotencyKey) {
        const earlier = await batchByIdempotencyKey(b.caller.accountId, b.idempotencyKey);
        if (earlier) throw new Replay(earlier);
      }
      await client.query(
        'UPDATE batches SET model = $2, total = $3, idempotency_key = $4, request_hash = $5 WHERE id = $1',
        [id, filled.model, total, b.idempotencyKey ?? null, hash],
      );
    });
  } catch (err) {
    if (err instanceof Replay) return sameRequest(err.earlier, hash);
    // the same key raced in from another request and was committed first: answer that one
    if (!b.idempotencyKey || !isUniqueViolation(err)) throw err;
    const earlier = await batchByIdempotencyKey(b.caller.accountId, b.idempotencyKey);
    if (!earlier) throw err;
    return sameRequest(earlier, hash);
  }
  await startBatchJob(id, columns, true);
  return (await loadBatch(id))!;
}

function sameRequest(earlier: BatchRecord, hash: string): BatchRecord {
  if (earlier.request_hash !== hash)
    throw new RequestError(
      409,
      'idempotency_key_reused',
      `This Idempotency-Key was used for a different request (batch ${earlier.id}). Use a new key for a new batch.`,
    );
  return earlier;
}

/**
 * Cancel a batch through its workflow: `cancelling` at once (no new row starts), `cancelled` when
 * the rows already running have finished. Cancelling a batch that is already cancelling or
 * cancelled answers it as it is; one that has ended otherwise is a 409.
 */
export async function cancelBatch(id: string, accountId: string): Promise<BatchRecord | undefined> {
  const { rowCount } = await db().pool.query(
    `UPDATE batches SET status = 'cancelling', cancelling_at = now()
     WHERE id = $1 AND account_id = $2 AND status IN ('validating', 'in_progress')`,
    [id, accountId],
  );
  const batch = await loadBatch(id, accountId);
  if (!batch) return undefined;
  if (rowCount) await cancelJob(id);
  else if (batch.status !== 'cancelling' && batch.status !== 'cancelled')
    throw new RequestError(
      409,
      'batch_not_cancellable',
      `Batch ${id} is ${batch.status}; only a validating or in-progress batch can be cancelled.`,
    );
  return batch;
}
