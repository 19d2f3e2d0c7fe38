// The activities of the batch workflows (workflows/batch.ts): make the rows (`validating`), run
// one row, and close the batch. A row is one metered call, exactly the synchronous request at the
// batch price, with the row's identity as its idempotency key. Where the account can afford it
// (as for synchronous requests: ledger/leases.ts), the row pays from this worker's credit lease:
//   reserve  its worst case from the lease, in memory;
//   call     the provider (fallback between routes as for any request);
//   store    the answer, its count in the batch and its charge (`charge:<row request id>`) in ONE
//            statement (MeteredCall.settleWith): a row is stored and charged together, or neither;
//            rows finishing at once on this worker's lanes share that statement (group commit,
//            ledger/leases.ts).
// Otherwise (an account close to empty, a key with a daily cap) the row holds its own money:
//   reserve  hold key `hold:<batch id>:<idx>`: every attempt of the row finds the same hold;
//   store    the answer and its cost in the row, counted in the batch, in one statement;
//   settle   the hold at the stored cost (idempotent per hold).
// A worker killed anywhere in there loses nothing and charges nothing twice: before the answer is
// stored, the retry calls the provider again (on the same hold, or a new share of a lease; a dead
// worker's lease is given back by the hold sweeper); after, it finds the row stored and at most
// settles the stored answer's hold (the provider is not asked again). A retryable failure (429,
// 5xx, timeouts) is thrown while attempts remain, keeping any hold, so Temporal retries the row
// with backoff; a failure for good (or the last attempt's) releases the reservation and stores the
// row as an error line, uncharged.
// Why leases: per row, the exact path is three statements on the account's balance row and the
// batch's counters (reserve, store, settle); the lease path is at most one, and statements were
// most of what a row cost the worker and PostgreSQL (README, Benchmarks: Batches).
import { Context } from '@temporalio/activity';
import { catalog } from '../catalog/catalog.js';
import { batchPriceBps } from '../billing/pricing.js';
import { config } from '../config.js';
import { RequestError } from '../core/errors.js';
import { toDisplayNumber } from '../core/money.js';
import { hasOutput, type InferenceCall, producedText } from '../inference/execute.js';
import { prepareCall } from '../inference/prepare.js';
import { closeIdleLeases } from '../ledger/leases.js';
import { MeteredCall } from '../metering/meteredCall.js';
import { parseModelName } from '../routing/suffixes.js';
import { finishBatchFiles, readRowsFromFile } from './fileRows.js';
import { rowKind } from './kinds.js';
import { freeSlot, renewSlots, takeSlot } from './slots.js';
import {
  callerOf,
  closePendingRows,
  loadBatch,
  recordFailure,
  successWrite,
  batchInProgress,
  rowRequestId,
  rowToRun,
  rowsToRun,
  rowsWithOpenHolds,
  type RowToRun,
  TERMINAL,
} from './store.js';
import { db } from '../db.js';

/** What a row's run tells the workflow: carry on, or the batch is being cancelled (stop starting rows). */
type RowStep = 'done' | 'stop';

/**
 * `validating`: the batch's rows are made (an inline batch's from its stored requests, checked by
 * the API; a file-backed one's from its input file, checked here), then `in_progress`. Returns
 * the number of rows, or -1 when the batch failed validation (its `errors` say why).
 */
export async function prepareBatch(batchId: string): Promise<number> {
  const batch = await loadBatch(batchId);
  if (!batch) throw new Error(`batch ${batchId} is not stored`);
  if (batch.status === 'failed') return -1;
  // a retry after the rows were made (the statement below makes them only once either way)
  if (batch.status !== 'validating' && batch.status !== 'cancelling') return batch.total;
  if (batch.kind === 'file') {
    if (batch.total > 0 || batch.model !== null) return batch.total; // read before a cancel came
    return readRowsFromFile(batch, () => Context.current().heartbeat());
  }
  const { rows } = await db().pool.query(
    `WITH made AS (
       INSERT INTO batch_rows (batch_id, idx, custom_id, body)
       SELECT $1, (t.ord - 1)::int, t.e->>'custom_id', t.e->'body'
       FROM batches b, jsonb_array_elements(b.input) WITH ORDINALITY AS t(e, ord) WHERE b.id = $1
       ON CONFLICT DO NOTHING
     )
     UPDATE batches SET total = COALESCE(jsonb_array_length(input), total), input = NULL, in_progress_at = now(),
       status = CASE WHEN status = 'validating' THEN 'in_progress' ELSE status END
     WHERE id = $1 RETURNING total`,
    [batchId],
  );
  return rows[0].total;
}

/**
 * Runs rows [from, to) of the batch, `lanes` at a time, each as described at the top of this file.
 * Many rows per activity: every activity costs the workflow engine a few history writes and a
 * dispatch, which a row's own work is cheaper than. Rows already done are skipped, so a retried
 * activity runs only the rows it has not finished; no row starts once the batch is cancelling
 * (each row checks as it takes its account slot) or after `deadline` (the batch's window). If a
 * row failed retryably and has attempts left, the activity throws once the others are done, and
 * the engine retries it with backoff.
 */
export async function runBatchRows(
  batchId: string,
  from: number,
  to: number,
  lanes: number,
  deadline: number,
): Promise<RowStep> {
  const ctx = Context.current();
  let beats = 0;
  let account: string | undefined;
  const beat = setInterval(() => {
    ctx.heartbeat();
    // the lanes' account slots outlive SLOT_TTL only if renewed
    if (++beats % 60 === 0 && account)
      renewSlots(account, `${batchId}:${from}/`).catch((e) => console.error(`[batches] slot renewal failed:`, e));
  }, 1000);
  try {
    const rows = await rowsToRun(batchId, from, to);
    account = rows.values().next().value?.payer.accountId;
    const inProgress = recentStatus(batchId);
    let next = from;
    let stop = false;
    const failures: unknown[] = [];
    // A lane runs one row at a time and holds one of the account's slots while it has rows to run
    // (taken by a name a retried activity takes back, freed when the lane ends).
    const lane = async (k: number) => {
      const holder = `${batchId}:${from}/${k}`;
      let held = false;
      try {
        while (!stop && next < to && Date.now() < deadline) {
          const idx = next++;
          const row = rows.get(idx);
          try {
            if (!row) throw new Error(`batch ${batchId} has no row ${idx}`);
            if (row.status === 'succeeded') {
              await settleStored(batchId, idx, row); // a retry after the answer was stored: make sure it is charged
              continue;
            }
            if (row.status !== 'pending') continue;
            // no row starts once the batch is cancelling (its status read at most 100 ms ago)
            if (!(await inProgress())) {
              stop = true;
              break;
            }
            if (!held) {
              held = await takeSlot(row.payer.accountId, config.batchAccountConcurrency, holder, batchId, () => {
                if (ctx.cancellationSignal.aborted) throw ctx.cancellationSignal.reason;
              });
              if (!held) {
                stop = true;
                break;
              }
            }
            await runRow(batchId, idx, row, ctx);
          } catch (err) {
            failures.push(err);
          }
        }
      } finally {
        if (held && account) await freeSlot(account, holder);
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, Math.min(lanes, to - from)) }, (_, k) => lane(k)));
    // this activity's rows are settled: what its lease still holds goes back unless other rows use it
    if (account) await closeIdleLeases(account);
    if (failures.length) throw failures[0];
    return stop ? 'stop' : 'done';
  } finally {
    clearInterval(beat);
  }
}

/** Whether the batch is still in progress, asked at most every 100 ms (shared by an activity's lanes). */
function recentStatus(batchId: string): () => Promise<boolean> {
  let checkedAt = 0;
  let running = true;
  let asking: Promise<boolean> | undefined;
  return () => {
    if (Date.now() - checkedAt < 100) return Promise.resolve(running);
    asking ??= batchInProgress(batchId).then((r) => {
      running = r;
      checkedAt = Date.now();
      asking = undefined;
      return r;
    });
    return asking;
  };
}

async function runRow(batchId: string, idx: number, row: RowToRun, ctx: Context): Promise<void> {
  const kind = rowKind(row.endpoint);
  const requestId = rowRequestId(batchId, idx);
  let call: InferenceCall | undefined;
  try {
    const model = catalog().model(row.model);
    if (!model) throw new RequestError(404, 'model_not_found', `Model '${row.model}' is no longer in the catalog.`);
    const name = parseModelName(String(row.body.model ?? model.id), (n) => catalog().model(n) !== undefined);
    const input = kind.translate(row.body, model, name);
    call = await prepareCall({
      caller: callerOf(row.payer),
      requestId,
      surface: kind.surface,
      model,
      ...input,
      // the hold must outlive the row's retries; the batch's window bounds them
      holdTtlSeconds: config.batchWindowSeconds + 3600,
      priceBps: batchPriceBps(model),
      holdKey: `hold:${requestId}`,
      // paid from this worker's credit lease where the account can afford one: the answer and
      // its charge are then one statement (no hold of its own to reserve and settle)
      storesAnswer: true,
    });
    const { result, route } = await call.complete(ctx.cancellationSignal);
    if (!hasOutput(result))
      throw new RequestError(
        502,
        'empty_response',
        `${route.provider.id} returned an empty response. Nothing was charged.`,
      );
    const produced = producedText(result);
    const usage = call.billable(result.usage, produced);
    const cost = call.costOf(route, usage);
    const bill = {
      amount: toDisplayNumber(cost, 'USD'),
      currency: 'USD' as const,
      cost: toDisplayNumber(cost, 'USD'),
      paymentSource: 'USD' as const,
      remainingBalance: 0,
      inputTokens: usage.promptTokens,
      outputTokens: usage.completionTokens,
    };
    const body = kind.render(result, usage, bill, { model: model.id, provider: route.provider.id, body: row.body });
    // A row's answer is stored with (or before) its charge, so the balance after it is not known here.
    delete (body as { remainingBalance?: number }).remainingBalance;
    const stored = await call.settleWith(
      usage,
      produced,
      successWrite(batchId, idx, {
        result: body,
        inputTokens: usage.promptTokens,
        outputTokens: usage.completionTokens,
        cost,
        providerId: route.provider.id,
      }),
    );
    if (!stored) await settleStored(batchId, idx, (await rowToRun(batchId, idx))!); // another attempt stored first
  } catch (err) {
    const attempt = ctx.info.attempt;
    const retryable = err instanceof RequestError ? err.retryable : true;
    // the worker is shutting down (the row runs again elsewhere), or the engine retries the row:
    // an exact hold is kept for the next attempt, which finds it by the row's key
    if (ctx.cancellationSignal.aborted || (retryable && attempt < config.batchRowAttempts)) {
      call?.metered.suspend();
      throw err;
    }
    await call?.fail((err as { code?: string }).code ?? 'error');
    const failure =
      err instanceof RequestError
        ? { statusCode: err.status, code: err.code, message: err.message }
        : {
            statusCode: 500,
            code: 'internal_error',
            message: 'The gateway could not run this row. It was not charged.',
          };
    if (!(err instanceof RequestError)) console.error(`[batches] ${requestId} failed:`, err);
    await recordFailure(batchId, idx, failure);
  }
}

/** Settle a stored answer at its stored cost (a second settle of a hold returns the first). */
async function settleStored(batchId: string, idx: number, row: RowToRun): Promise<void> {
  if (!row.hold_id || row.cost === null) return;
  const kind = rowKind(row.endpoint);
  await MeteredCall.adopted({
    caller: callerOf(row.payer),
    requestId: rowRequestId(batchId, idx),
    surface: kind.surface,
    modelId: row.model,
    holdId: row.hold_id,
    providerId: row.provider_id ?? undefined,
  }).settle(BigInt(row.cost), { inputUnits: row.input_tokens, outputUnits: row.output_tokens });
}

/**
 * The batch is over: rows not run are closed (`cancelled` when it was cancelled, `expired` when
 * its window closed, else `failed`: lost), the output and error files written (file-backed
 * batches), and the terminal status set. Idempotent.
 */
export async function finishBatch(batchId: string, how: { cancelled: boolean; expired: boolean }): Promise<string> {
  const batch = await loadBatch(batchId);
  if (!batch) throw new Error(`batch ${batchId} is not stored`);
  if (TERMINAL.has(batch.status)) return batch.status;
  const cancelled = how.cancelled || batch.status === 'cancelling';
  if (!cancelled)
    await db().pool.query(
      `UPDATE batches SET status = 'finalizing', finalizing_at = now() WHERE id = $1 AND status = 'in_progress'`,
      [batchId],
    );
  const left = await closePendingRows(batchId, cancelled ? 'cancelled' : how.expired ? 'expired' : 'failed');
  // No row runs any more: a stored answer's open hold is charged (settled at its stored cost), any
  // other row's is given back, instead of staying held until it expires a day later.
  for (const row of await rowsWithOpenHolds(batchId)) {
    if (row.status === 'succeeded' && row.hold_id === row.open_hold) await settleStored(batchId, row.idx, row);
    else
      await MeteredCall.adopted({
        caller: callerOf(row.payer),
        requestId: rowRequestId(batchId, row.idx),
        surface: rowKind(row.endpoint).surface,
        modelId: row.model,
        holdId: row.open_hold,
      }).fail('batch_row_not_run');
  }
  const files = batch.kind === 'file' ? await finishBatchFiles(batch, () => Context.current().heartbeat()) : {};
  // counted with an earlier attempt's closing too (this one may be a retry that finds none left)
  const status = cancelled ? 'cancelled' : how.expired && batch.expired + left > 0 ? 'expired' : 'completed';
  await db().pool.query(
    `UPDATE batches SET status = $2, finished_at = now(), output_file_id = $3, error_file_id = $4 WHERE id = $1`,
    [batchId, status, files.outputFileId ?? null, files.errorFileId ?? null],
  );
  return status;
}
