// A batch's rows in PostgreSQL: the batch (status, counts, usage, cost) and one row per request.
// Every change a row's run makes is ONE statement that moves the row out of `pending` and adds it
// to the batch's counts together, so a retried or duplicated attempt can never count a row twice,
// and progress is visible to the status routes while the batch runs.
import type { Caller } from '../core/caller.js';
import { db } from '../db.js';
import type { WriteWithCharge } from '../ledger/leases.js';

/** The batch as its columns hold it (SQL names). */
export interface BatchRecord {
  id: string;
  /** `message`: a native message batch (/v1/messages/batches) */
  kind: 'inline' | 'file' | 'message';
  account_id: string;
  api_key_id: string | null;
  endpoint: string;
  model: string | null;
  status: string;
  input_file_id: string | null;
  output_file_id: string | null;
  error_file_id: string | null;
  metadata: Record<string, string> | null;
  payer: StoredCaller;
  total: number;
  completed: number;
  failed: number;
  cancelled: number;
  expired: number;
  input_tokens: string;
  output_tokens: string;
  cost: string;
  errors: { data: Array<{ code: string; message: string; line: number | null; param: string | null }> } | null;
  request_hash: string | null;
  created_at: Date;
  in_progress_at: Date | null;
  finalizing_at: Date | null;
  finished_at: Date | null;
  cancelling_at: Date | null;
  expires_at: Date;
}

/** The caller as a JSON column holds it (the daily cap as text: JSON has no bigint). */
export type StoredCaller = Omit<Caller, 'dailyUsdLimit'> & { dailyUsdLimit: string | null };

export const storedCaller = (c: Caller): StoredCaller => ({
  ...c,
  dailyUsdLimit: c.dailyUsdLimit === null ? null : c.dailyUsdLimit.toString(),
});

export const callerOf = (s: StoredCaller): Caller => ({
  ...s,
  dailyUsdLimit: s.dailyUsdLimit === null ? null : BigInt(s.dailyUsdLimit),
});

/** The request id of a row: its records, its hold's key, its charge. */
export const rowRequestId = (batchId: string, idx: number) => `${batchId}:${idx}`;

export const TERMINAL = new Set(['completed', 'failed', 'expired', 'cancelled']);

const COLUMNS = `id, kind, account_id, api_key_id, endpoint, model, status, input_file_id, output_file_id,
  error_file_id, metadata, payer, total, completed, failed, cancelled, expired, input_tokens::text,
  output_tokens::text, cost::text, errors, request_hash, created_at, in_progress_at, finalizing_at, finished_at,
  cancelling_at, expires_at`;

export async function loadBatch(id: string, accountId?: string): Promise<BatchRecord | undefined> {
  const { rows } = await db().pool.query<BatchRecord>(
    `SELECT ${COLUMNS} FROM batches WHERE id = $1 AND ($2::uuid IS NULL OR account_id = $2::uuid)`,
    [id, accountId ?? null],
  );
  return rows[0];
}

/** Is the batch still running its rows (not cancelling, not ended)? */
export async function batchInProgress(batchId: string): Promise<boolean> {
  const { rowCount } = await db().requestPool.query({
    name: 'batch_in_progress',
    text: `SELECT 1 FROM batches WHERE id = $1 AND status = 'in_progress'`,
    values: [batchId],
  });
  return (rowCount ?? 0) > 0;
}

export async function batchByIdempotencyKey(accountId: string, key: string): Promise<BatchRecord | undefined> {
  const { rows } = await db().pool.query<BatchRecord>(
    `SELECT ${COLUMNS} FROM batches WHERE account_id = $1 AND idempotency_key = $2`,
    [accountId, key],
  );
  return rows[0];
}

export interface ListFilter {
  accountId: string;
  kind: BatchRecord['kind'];
  limit: number;
  /** older than this batch (a page further back) */
  after?: string;
  /** newer than this batch (a page nearer the present) */
  before?: string;
  status?: string;
  createdAfter?: Date;
  createdBefore?: Date;
}

/** Newest first; `has_more` by reading one more than asked. */
export async function listBatches(f: ListFilter): Promise<{ rows: BatchRecord[]; hasMore: boolean }> {
  const cursor = f.after ?? f.before;
  const { rows } = await db().pool.query<BatchRecord>(
    `WITH c AS (SELECT created_at, id FROM batches WHERE id = $2 AND account_id = $1)
     SELECT ${COLUMNS} FROM batches b
     WHERE account_id = $1 AND kind = $3
       AND ($4::text IS NULL OR status = $4)
       AND ($5::timestamptz IS NULL OR created_at >= $5) AND ($6::timestamptz IS NULL OR created_at <= $6)
       AND ($2::text IS NULL OR ($7 AND (b.created_at, b.id) < (SELECT created_at, id FROM c))
                              OR (NOT $7 AND (b.created_at, b.id) > (SELECT created_at, id FROM c)))
     ORDER BY created_at ${f.before ? 'ASC' : 'DESC'}, id ${f.before ? 'ASC' : 'DESC'} LIMIT $8`,
    [
      f.accountId,
      cursor ?? null,
      f.kind,
      f.status ?? null,
      f.createdAfter ?? null,
      f.createdBefore ?? null,
      f.before === undefined,
      f.limit + 1,
    ],
  );
  const hasMore = rows.length > f.limit;
  const page = rows.slice(0, f.limit);
  // a page of newer batches is read oldest first (nearest the cursor); it is shown newest first
  if (f.before) page.reverse();
  return { rows: page, hasMore };
}

/** Has a batch with this id ever been stored for the account (a cursor that names nothing is a 400)? */
export async function batchExists(accountId: string, id: string): Promise<boolean> {
  const { rowCount } = await db().pool.query('SELECT 1 FROM batches WHERE id = $1 AND account_id = $2', [
    id,
    accountId,
  ]);
  return (rowCount ?? 0) > 0;
}

/** One row as its run needs it, with the batch facts it runs under. */
export interface RowToRun {
  status: string;
  custom_id: string;
  body: Record<string, unknown>;
  hold_id: string | null;
  cost: string | null;
  provider_id: string | null;
  input_tokens: number | null;
  output_tokens: number | null;
  batch_status: string;
  endpoint: string;
  model: string;
  payer: StoredCaller;
}

/** Rows [from, to) as their runs need them, in one query, by index. */
export async function rowsToRun(batchId: string, from: number, to: number): Promise<Map<number, RowToRun>> {
  const { rows } = await db().requestPool.query<RowToRun & { idx: number }>({
    name: 'batch_rows_load',
    text: `SELECT r.idx, r.status, r.custom_id, r.body, r.hold_id, r.cost::text, r.provider_id, r.input_tokens,
             r.output_tokens, b.status AS batch_status, b.endpoint, b.model, b.payer
           FROM batch_rows r JOIN batches b ON b.id = r.batch_id WHERE r.batch_id = $1 AND r.idx >= $2 AND r.idx < $3`,
    values: [batchId, from, to],
  });
  return new Map(rows.map((r) => [r.idx, r]));
}

export async function rowToRun(batchId: string, idx: number): Promise<RowToRun | undefined> {
  const { rows } = await db().requestPool.query<RowToRun>({
    name: 'batch_row_load',
    text: `SELECT r.status, r.custom_id, r.body, r.hold_id, r.cost::text, r.provider_id, r.input_tokens,
             r.output_tokens, b.status AS batch_status, b.endpoint, b.model, b.payer
           FROM batch_rows r JOIN batches b ON b.id = r.batch_id WHERE r.batch_id = $1 AND r.idx = $2`,
    values: [batchId, idx],
  });
  return rows[0];
}

export interface RowSuccess {
  result: object;
  inputTokens: number;
  outputTokens: number;
  /** nano-USD at the batch price */
  cost: bigint;
  providerId: string;
}

/**
 * The row's answer stored and counted in the batch, as the write that goes with its charge
 * (MeteredCall.settleWith): paid from a lease, one statement stores, counts and charges; paid
 * from the row's own hold (`holdId`), the answer is stored BEFORE the hold is settled, so a retry
 * after a crash settles the stored answer instead of asking the provider again. Writes nothing if
 * the row had already left `pending` (another attempt stored it first).
 */
export function successWrite(batchId: string, idx: number, s: RowSuccess) {
  return (holdId: string | null): WriteWithCharge => ({
    name: 'batch_row_success',
    types: ['text', 'int', 'text', 'int', 'int', 'numeric', 'uuid', 'text'],
    // rows of several batches may share a statement: each batch counts its own
    ctes: `r AS (
        UPDATE batch_rows br SET status = 'succeeded', status_code = 200, result = i.v3::jsonb, input_tokens = i.v4,
          output_tokens = i.v5, cost = i.v6, hold_id = i.v7, provider_id = i.v8, finished_at = now()
        FROM i, l WHERE br.batch_id = i.v1 AND br.idx = i.v2 AND br.status = 'pending'
        RETURNING i.n, br.batch_id, br.input_tokens, br.output_tokens, br.cost
      ), counted AS (
        UPDATE batches b SET completed = b.completed + s.rows, input_tokens = b.input_tokens + s.input_tokens,
          output_tokens = b.output_tokens + s.output_tokens, cost = b.cost + s.cost
        FROM (SELECT batch_id, count(*)::int AS rows, sum(input_tokens) AS input_tokens,
                     sum(output_tokens) AS output_tokens, sum(cost) AS cost FROM r GROUP BY batch_id) s
        WHERE b.id = s.batch_id
      ), x AS (SELECT n FROM r)`,
    values: [
      batchId,
      idx,
      JSON.stringify(s.result),
      s.inputTokens,
      s.outputTokens,
      s.cost.toString(),
      holdId,
      s.providerId,
    ],
  });
}

/** The row failed for good: stored as an error line, counted, never charged. */
export async function recordFailure(
  batchId: string,
  idx: number,
  f: { statusCode: number; code: string; message: string },
): Promise<void> {
  await db().requestPool.query({
    name: 'batch_row_failure',
    text: `WITH r AS (
        UPDATE batch_rows SET status = 'failed', status_code = $3, result = $4, finished_at = now()
        WHERE batch_id = $1 AND idx = $2 AND status = 'pending' RETURNING 1
      ) UPDATE batches SET failed = failed + 1 FROM r WHERE id = $1`,
    values: [batchId, idx, f.statusCode, { code: f.code, message: f.message }],
  });
}

/**
 * Rows still pending when the batch ends: `cancelled` (the batch was cancelled), `expired` (its
 * window closed) or `failed` (lost: their attempts ran out without an outcome). Counted in the
 * same statement. Returns how many.
 */
export async function closePendingRows(batchId: string, as: 'cancelled' | 'expired' | 'failed'): Promise<number> {
  const { rows } = await db().pool.query(
    `WITH r AS (
        UPDATE batch_rows SET status = $2, finished_at = now(),
          status_code = CASE WHEN $2 = 'failed' THEN 500 END,
          result = CASE WHEN $2 = 'failed' THEN '{"code":"batch_row_not_run","message":"The row could not be run (its attempts ended without an answer). It was not charged."}'::jsonb END
        WHERE batch_id = $1 AND status = 'pending' RETURNING 1
      ), n AS (SELECT count(*)::int AS n FROM r)
      UPDATE batches SET cancelled = cancelled + CASE WHEN $2 = 'cancelled' THEN n.n ELSE 0 END,
        expired = expired + CASE WHEN $2 = 'expired' THEN n.n ELSE 0 END,
        failed = failed + CASE WHEN $2 = 'failed' THEN n.n ELSE 0 END
      FROM n WHERE id = $1 RETURNING n.n`,
    [batchId, as],
  );
  return rows[0]?.n ?? 0;
}

/**
 * Rows whose own hold is still open once the batch's rows have all run: answers stored whose
 * charge never followed (their activity ran out of attempts between the two) and rows that ended
 * without an answer while holding (their last attempt died). Found by the rows' hold keys. (Rows
 * paid from a lease have no hold of their own: their charge was written with their answer.)
 */
export async function rowsWithOpenHolds(
  batchId: string,
): Promise<Array<RowToRun & { idx: number; open_hold: string }>> {
  const { rows } = await db().pool.query<RowToRun & { idx: number; open_hold: string }>(
    `SELECT r.idx, r.status, r.custom_id, r.body, r.hold_id, r.cost::text, r.provider_id, r.input_tokens,
            r.output_tokens, b.status AS batch_status, b.endpoint, b.model, b.payer, h.id AS open_hold
     FROM batch_rows r JOIN batches b ON b.id = r.batch_id
       JOIN balance_holds h ON h.idempotency_key = 'hold:' || r.batch_id || ':' || r.idx AND h.status = 'active'
     WHERE r.batch_id = $1`,
    [batchId],
  );
  return rows;
}

/** A finished row as the output (or error) file and inline `results` show it. */
export interface FinishedRow {
  idx: number;
  custom_id: string;
  status: string;
  status_code: number | null;
  result: Record<string, unknown> | null;
  cost: string | null;
}

/** Finished rows in order, a page at a time (the output is written without holding it all). */
export async function finishedRows(
  batchId: string,
  fromIdx: number,
  limit: number,
  status?: 'succeeded' | 'failed',
): Promise<FinishedRow[]> {
  const { rows } = await db().pool.query<FinishedRow>(
    `SELECT idx, custom_id, status, status_code, result, cost::text FROM batch_rows
     WHERE batch_id = $1 AND idx >= $2 AND status = ANY($4::text[]) ORDER BY idx LIMIT $3`,
    [batchId, fromIdx, limit, status ? [status] : ['succeeded', 'failed']],
  );
  return rows;
}
