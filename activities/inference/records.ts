// One row per model request: who, which model and provider, tokens, cost, outcome. Rows are
// buffered and written in batches (one multi-row INSERT every FLUSH_MS, or sooner when the
// buffer fills), off the request path: a busy gateway writes one row per request without one
// commit per request. Records are for reporting; the ledger (written synchronously) is the
// truth about money, so a crash losing the last fraction of a second of records loses no money.
import { db } from '../db.js';
import type { Currency } from '../ledger/money.js';

export interface RequestRecordInput {
  id: string;
  accountId: string;
  apiKeyId: string | null;
  surface: string;
  model: string;
  providerId: string | null;
  status: string;
  inputTokens: number | null;
  outputTokens: number | null;
  currency: Currency | null;
  cost: bigint | null;
  holdId: string | null;
  errorCode: string | null;
  startedAt: Date;
}

const FLUSH_MS = 100;
const MAX_BATCH = 500;
const COLUMNS = 15;

let buffer: Array<RequestRecordInput & { finishedAt: Date }> = [];
let timer: NodeJS.Timeout | undefined;
let inflight: Promise<void> = Promise.resolve();

export function recordRequest(r: RequestRecordInput): void {
  buffer.push({ ...r, finishedAt: new Date() });
  if (buffer.length >= MAX_BATCH) void flushRequestRecords();
  else if (!timer) {
    timer = setTimeout(() => void flushRequestRecords(), FLUSH_MS);
    timer.unref();
  }
}

/** Write what is buffered now (also called at shutdown and by tests). */
export function flushRequestRecords(): Promise<void> {
  if (timer) clearTimeout(timer);
  timer = undefined;
  const batch = buffer;
  buffer = [];
  if (batch.length === 0) return inflight;
  inflight = inflight.then(() => write(batch));
  return inflight;
}

async function write(batch: Array<RequestRecordInput & { finishedAt: Date }>): Promise<void> {
  const values: unknown[] = [];
  const rows = batch.map((r, i) => {
    values.push(r.id, r.accountId, r.apiKeyId, r.surface, r.model, r.providerId, r.status, r.inputTokens, r.outputTokens, r.currency, r.cost?.toString() ?? null, r.holdId, r.errorCode, r.startedAt, r.finishedAt);
    const p = (k: number) => `$${i * COLUMNS + k}`;
    return `(${p(1)}, ${p(2)}::uuid, ${p(3)}::uuid, ${p(4)}, ${p(5)}, ${p(6)}, ${p(7)}, ${p(8)}::int, ${p(9)}::int, ${p(10)}::"Currency", ${p(11)}::numeric, ${p(12)}::uuid, ${p(13)}, ${p(14)}::timestamptz, ${p(15)}::timestamptz)`;
  });
  try {
    await db().pool.query(
      `INSERT INTO request_records (id, account_id, api_key_id, surface, model, provider_id, status, input_tokens, output_tokens, currency, cost, hold_id, error_code, started_at, finished_at)
       VALUES ${rows.join(', ')} ON CONFLICT (id) DO NOTHING`,
      values,
    );
  } catch (err) {
    console.error(`[records] could not record ${batch.length} request(s): ${(err as Error).message}`);
  }
}
