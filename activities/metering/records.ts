// One row per model request: who, which model and provider, tokens, cost, outcome. Rows are
// buffered and written in batches (one multi-row INSERT every FLUSH_MS, or sooner when the
// buffer fills), off the request path: a busy gateway writes one row per request without one
// commit per request. Records are for reporting; the ledger (written synchronously) is the
// truth about money, so a crash losing the last fraction of a second of records loses no money.
// A request recorded again replaces its record (a charge refunded because the answer never
// reached the caller is recorded once more, as failed).
import { db } from '../db.js';
import type { Currency } from '../core/money.js';

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

type Row = RequestRecordInput & { finishedAt?: Date };

let buffer: Row[] = [];
let timer: NodeJS.Timeout | undefined;
let inflight: Promise<void> = Promise.resolve();

/** Buffer one record. The record is kept as given (stamped with its finish time), not copied. */
export function recordRequest(r: RequestRecordInput): void {
  (r as Row).finishedAt = new Date();
  buffer.push(r);
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

async function write(all: Row[]): Promise<void> {
  // the last record of a request wins (one statement cannot update a row twice)
  const batch = [...new Map(all.map((r) => [r.id, r])).values()];
  // One column array per field: the statement text never changes, so PostgreSQL plans it once
  // (a named statement) however many rows a batch has. Each column goes as its array literal's text
  // (arrayLiteral), which is what pg would send for the array itself.
  const col = (f: (r: Row) => string | number | null) => arrayLiteral(batch.map(f));
  try {
    await db().pool.query({
      name: 'request_records_insert',
      text: `INSERT INTO request_records (id, account_id, api_key_id, surface, model, provider_id, status, input_tokens, output_tokens, currency, cost, hold_id, error_code, started_at, finished_at)
       SELECT * FROM unnest($1::text[], $2::uuid[], $3::uuid[], $4::text[], $5::text[], $6::text[], $7::text[], $8::int[], $9::int[], $10::"Currency"[], $11::numeric[], $12::uuid[], $13::text[], $14::timestamptz[], $15::timestamptz[])
       ON CONFLICT (id) DO UPDATE SET status = EXCLUDED.status, input_tokens = EXCLUDED.input_tokens,
         output_tokens = EXCLUDED.output_tokens, currency = EXCLUDED.currency, cost = EXCLUDED.cost,
         error_code = EXCLUDED.error_code, finished_at = EXCLUDED.finished_at`,
      values: [
        col((r) => r.id),
        col((r) => r.accountId),
        col((r) => r.apiKeyId),
        col((r) => r.surface),
        col((r) => r.model),
        col((r) => r.providerId),
        col((r) => r.status),
        col((r) => r.inputTokens),
        col((r) => r.outputTokens),
        col((r) => r.currency),
        col((r) => r.cost?.toString() ?? null),
        col((r) => r.holdId),
        col((r) => r.errorCode),
        col((r) => r.startedAt.toISOString()),
        col((r) => r.finishedAt!.toISOString()),
      ],
    });
  } catch (err) {
    console.error(`[records] could not record ${batch.length} request(s): ${(err as Error).message}`);
  }
}

/**
 * A PostgreSQL array literal of `values` (null as NULL, every other value quoted), the text pg
 * writes for an array parameter. pg escapes every element with two regular expressions; here only
 * an element holding a quote or a backslash is escaped (ids, numbers and timestamps never do): a
 * third of pg's time for the ~15 elements each request adds to a batch.
 */
export function arrayLiteral(values: ReadonlyArray<string | number | null | undefined>): string {
  let out = '{';
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (i > 0) out += ',';
    if (v === null || v === undefined) out += 'NULL';
    else {
      const text = String(v);
      out += `"${text.includes('"') || text.includes('\\') ? text.replace(/[\\"]/g, '\\$&') : text}"`;
    }
  }
  return `${out}}`;
}
