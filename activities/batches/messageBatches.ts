// Native message batches (`/v1/messages/batches`, spec "Batches" and "Limits"), for the API: the
// checks a batch passes before it is accepted, deleting an ended one, and its rows' outcomes as
// the results file reads them. Running, billing, cancelling and expiring are the batch engine's
// (start.ts, run.ts, workflows/batch.ts): a message batch is a batch of kind `message` whose rows
// are of the `/v1/messages` kind (messageKind.ts).
import type { ModelInfo } from '../catalog/catalog.js';
import { RequestError } from '../core/errors.js';
import { db } from '../db.js';
import { batchModel, checkRow } from './rowRules.js';
import { messages } from './messageKind.js';
import { type BatchRecord, loadBatch, TERMINAL } from './store.js';

/** Native batch limits (spec, Limits): 1-100,000 requests, up to 200 MiB of requests as stored. */
export const MESSAGE_BATCH_LIMITS = { requests: 100_000, inputBytes: 200 * 1024 * 1024 };

const invalid = (message: string, param: string) =>
  new RequestError(400, 'invalid_parameter_value', message, { param });

export type MessageRequest = { custom_id: string; params: Record<string, unknown> };
type MessageRow = { custom_id: string; body: Record<string, unknown> };

/**
 * The requests of a new message batch, checked as the synchronous route would check each one
 * (plus the spec's batch rules), every refusal naming `requests[i]`. Every request names the
 * batch's one model (suffixes may differ). Returns that model and the rows as they will run.
 */
export function checkMessageRequests(requests: MessageRequest[]): { model: ModelInfo; rows: MessageRow[] } {
  if (requests.length > MESSAGE_BATCH_LIMITS.requests)
    throw invalid(
      `A message batch holds at most ${MESSAGE_BATCH_LIMITS.requests} requests; this one has ${requests.length}. Split it.`,
      'requests',
    );
  const checker = new MessageRowChecker();
  const rows = requests.map((r, i) => checker.check(r, i));
  return { model: checker.model!, rows };
}

/**
 * The same checks one request at a time, in order, for a batch read as it arrives: the model is
 * the first request's, and the size as stored is counted as the rows pass (refused as soon as it
 * is past the limit).
 */
export class MessageRowChecker {
  model: ModelInfo | undefined;
  private seen = new Set<string>();
  /** the rows' size as stored, as a JSON array */
  private bytes = 1;

  check(r: MessageRequest, i: number): MessageRow {
    this.model ??= firstModel(r);
    const model = this.model;
    if (this.seen.has(r.custom_id))
      throw invalid(
        `requests[${i}].custom_id '${r.custom_id}' is used by an earlier request; each must be unique.`,
        `requests[${i}].custom_id`,
      );
    this.seen.add(r.custom_id);
    const checked = checkRow(messages, i, r.params, model);
    if ('problem' in checked) {
      const p = checked.problem;
      throw new RequestError(400, p.code, `requests[${i}]: ${p.message}`, {
        param: `requests[${i}].params${p.param ? `.${p.param}` : ''}`,
      });
    }
    const cap = Number(checked.body.max_tokens);
    if (model.maxOutputTokens && cap > model.maxOutputTokens)
      throw invalid(
        `requests[${i}]: max_tokens ${cap} is above the output limit of '${model.id}' (${model.maxOutputTokens}).`,
        `requests[${i}].params.max_tokens`,
      );
    const row = { custom_id: r.custom_id, body: checked.body };
    this.bytes += Buffer.byteLength(JSON.stringify(row)) + 1; // and a comma or the closing bracket
    if (this.bytes > MESSAGE_BATCH_LIMITS.inputBytes)
      throw new RequestError(
        413,
        'request_too_large',
        `The requests are more than ${MESSAGE_BATCH_LIMITS.inputBytes} bytes as stored, the most a message batch ` +
          'takes. Split it.',
        { param: 'requests' },
      );
    return row;
  }
}

function firstModel(r: MessageRequest): ModelInfo {
  try {
    return batchModel(String(r.params.model));
  } catch (err) {
    if (!(err instanceof RequestError)) throw err;
    throw new RequestError(err.status, err.code, `requests[0]: ${err.message}`, { param: 'requests[0].params.model' });
  }
}

/**
 * Delete an ended message batch and its rows (one statement: a batch still running is never
 * deleted, whatever races it). Undefined when the caller has no such batch; the batch as it is
 * (not deleted) when it has not ended.
 */
export async function deleteEndedBatch(id: string, accountId: string): Promise<'deleted' | BatchRecord | undefined> {
  const { rowCount } = await db().pool.query(
    `DELETE FROM batches WHERE id = $1 AND account_id = $2 AND kind = 'message' AND status = ANY($3::text[])`,
    [id, accountId, [...TERMINAL]],
  );
  if (rowCount) return 'deleted';
  const batch = await loadBatch(id, accountId);
  return batch?.kind === 'message' ? batch : undefined;
}

/** A row's outcome as the results file shows it. */
export interface RowOutcome {
  idx: number;
  custom_id: string;
  /** succeeded | failed | cancelled | expired */
  status: string;
  status_code: number | null;
  /** the message (succeeded) or {code, message} (failed) */
  result: Record<string, unknown> | null;
}

/** Every row's outcome, in request order, a page at a time (the results are streamed, never held whole). */
export async function* rowOutcomes(batchId: string, pageRows = 500): AsyncGenerator<RowOutcome[]> {
  for (let from = 0; ; ) {
    const { rows } = await db().pool.query<RowOutcome>(
      `SELECT idx, custom_id, status, status_code, result FROM batch_rows
       WHERE batch_id = $1 AND idx >= $2 AND status <> 'pending' ORDER BY idx LIMIT $3`,
      [batchId, from, pageRows],
    );
    if (!rows.length) return;
    yield rows;
    from = rows.at(-1)!.idx + 1;
  }
}
