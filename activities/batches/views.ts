// A batch as the OpenAI-style batch object shows it (spec "Batch resources", wire-details "Files
// and batches"), and a finished row as an output line: `{custom_id, response:{status_code,
// request_id, body}, error:null}` for an answer, `{custom_id, response:null, error:{code,
// message}}` for a failure. The object also carries what the batch cost in all (`cost`, USD) and
// each line its row's cost, inside the answer body like every synchronous answer's. Beside
// OpenAI's per-status times and `errors` list it carries the spec's `finalized_at` and `error`.
import { toDisplayNumber } from '../core/money.js';
import { type BatchRecord, type FinishedRow, rowRequestId } from './store.js';

const unix = (d: Date | null) => (d ? Math.floor(d.getTime() / 1000) : null);
const at = (b: BatchRecord, status: string) => (b.status === status ? unix(b.finished_at) : null);

export function batchObject(b: BatchRecord, results?: object[] | null) {
  const input = Number(b.input_tokens);
  const output = Number(b.output_tokens);
  return {
    id: b.id,
    object: 'batch',
    endpoint: b.endpoint,
    model: b.model,
    errors: b.errors ? { object: 'list', data: b.errors.data } : null,
    // the spec's one-error field: why the batch as a whole failed (the first of `errors`), else null
    error: b.errors?.data?.[0] ?? null,
    input_file_id: b.input_file_id,
    completion_window: '24h',
    status: b.status,
    output_file_id: b.output_file_id,
    error_file_id: b.error_file_id,
    created_at: unix(b.created_at),
    in_progress_at: unix(b.in_progress_at),
    expires_at: unix(b.expires_at),
    finalizing_at: unix(b.finalizing_at),
    completed_at: at(b, 'completed'),
    failed_at: at(b, 'failed'),
    expired_at: at(b, 'expired'),
    cancelling_at: unix(b.cancelling_at),
    cancelled_at: at(b, 'cancelled'),
    // the spec's `finalized_at`: when the batch reached its terminal status, whichever it is
    finalized_at: unix(b.finished_at),
    request_counts: { total: b.total, completed: b.completed, failed: b.failed },
    usage:
      b.completed > 0
        ? {
            input_tokens: input,
            input_tokens_details: { cached_tokens: 0 },
            output_tokens: output,
            output_tokens_details: { reasoning_tokens: 0 },
            total_tokens: input + output,
          }
        : null,
    /** what the batch's rows cost in all, USD, at batch prices */
    cost: toDisplayNumber(BigInt(b.cost), 'USD'),
    metadata: b.metadata,
    ...(results === undefined ? {} : { results }),
  };
}

/** One output (or error) line. */
export function outputLine(batchId: string, r: FinishedRow) {
  if (r.status === 'succeeded')
    return {
      id: `batch_req_${batchId.slice(6)}_${r.idx}`,
      custom_id: r.custom_id,
      response: { status_code: r.status_code ?? 200, request_id: rowRequestId(batchId, r.idx), body: r.result },
      error: null,
    };
  const e = (r.result ?? {}) as { code?: string; message?: string };
  return {
    id: `batch_req_${batchId.slice(6)}_${r.idx}`,
    custom_id: r.custom_id,
    response: null,
    error: { code: e.code ?? 'error', message: e.message ?? 'The row failed.', status_code: r.status_code },
  };
}
