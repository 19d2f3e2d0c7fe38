// One batch, durably: workflow id = the batch id (`batch_...`), searchable by the owner's
// account (SwitchyardAccountId). Reads like the process it runs:
//   validating   make the rows (an inline batch's requests, a file-backed batch's checked lines)
//   in_progress  the rows, a chunk at a time, each chunk a child workflow (`<batch id>:rows:<from>`)
//                running its rows as activities (`rowsPerActivity` rows each, a few at a time), at
//                most `concurrency` rows at once; so a batch of 100,000 rows never grows one history
//                past a chunk's few thousand events
//   finalizing   rows not run are closed, the output written → completed
//   cancelled    (POST .../cancel cancels this workflow) no new row starts; rows already running
//                finish and are kept and charged; the rest are `cancelled`, never charged
//   expired      the completion window closed first: rows not run are `expired`
// Rows run in a non-cancellable scope: a row is never abandoned halfway, so its money is always
// settled or released by its own activity. A worker that dies mid-row loses nothing: the row's
// activity times out on its heartbeat and runs again elsewhere (activities/batches/run.ts says
// why that charges once).
import {
  CancellationScope,
  condition,
  defineSignal,
  proxyActivities,
  setHandler,
  startChild,
  type ChildWorkflowHandle,
} from '@temporalio/workflow';
import type * as activities from '../activities/index.js';

export interface BatchJobInput {
  batchId: string;
  /** rows of this batch running at once */
  concurrency: number;
  /** rows per child workflow */
  chunkRows: number;
  /** the completion window, from the workflow's start */
  windowMs: number;
  /** attempts of a row whose provider fails retryably (the activity stores the last one's failure) */
  rowAttempts: number;
  /** rows one activity runs (LANES at a time) */
  rowsPerActivity: number;
}

interface ChunkInput {
  batchId: string;
  from: number;
  to: number;
  concurrency: number;
  /** workflow time (epoch ms) after which no row starts */
  deadline: number;
  rowAttempts: number;
  rowsPerActivity: number;
}

/** Rows one activity runs at the same time (its lanes); more rows at once take more activities. */
const LANES = 4;

/** Parent → chunk: the batch is being cancelled, start no more rows. */
const stopRows = defineSignal('stopRows');

const { prepareBatch, finishBatch } = proxyActivities<typeof activities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 20 },
});

export async function batchJob(input: BatchJobInput): Promise<string> {
  const { batchId } = input;
  const deadline = Date.now() + input.windowMs; // workflow time: the same on every replay
  let cancelled = false;
  let chunk: ChildWorkflowHandle<typeof batchChunk> | undefined;
  // the root scope is cancelled by then: the signal goes out from a scope of its own
  const stopChunk = (c: ChildWorkflowHandle<typeof batchChunk>) =>
    CancellationScope.nonCancellable(() => c.signal(stopRows)).catch(() => undefined);
  CancellationScope.current().cancelRequested.catch(() => {
    cancelled = true;
    if (chunk) void stopChunk(chunk);
  });
  // Cancellation is observed (the flag above), not delivered: nothing below is abandoned halfway.
  return CancellationScope.nonCancellable(async () => {
    const total = await prepareBatch(batchId);
    if (total < 0) return 'failed';
    for (let from = 0; from < total && !cancelled && Date.now() < deadline; from += input.chunkRows) {
      chunk = await startChild(batchChunk, {
        workflowId: `${batchId}:rows:${from}`,
        args: [
          {
            batchId,
            from,
            to: Math.min(total, from + input.chunkRows),
            concurrency: input.concurrency,
            deadline,
            rowAttempts: input.rowAttempts,
            rowsPerActivity: input.rowsPerActivity,
          },
        ],
      });
      if (cancelled) await stopChunk(chunk);
      if ((await chunk.result()) === 'stop') cancelled = true;
      chunk = undefined;
    }
    return finishBatch(batchId, { cancelled, expired: Date.now() >= deadline });
  });
}

/** Rows [from, to) of a batch, at most `concurrency` at once. 'stop' = the batch is being cancelled. */
export async function batchChunk(c: ChunkInput): Promise<'done' | 'stop'> {
  const { runBatchRows } = proxyActivities<typeof activities>({
    // a slice of slow rows may take long; a worker that dies is noticed by the heartbeat timeout
    startToCloseTimeout: '2 hours',
    // a worker that dies mid-row is noticed within this, and its rows run again on another
    heartbeatTimeout: '10 seconds',
    // the activity itself turns a row's last attempt's failure into an error line; the extra
    // attempts are for failures outside the rows (the database unreachable for a moment)
    retry: {
      initialInterval: '1 second',
      backoffCoefficient: 2,
      maximumInterval: '1 minute',
      maximumAttempts: c.rowAttempts + 3,
    },
  });
  let stop = false;
  setHandler(stopRows, () => {
    stop = true;
  });
  // slices of `rowsPerActivity` rows, each activity running up to LANES of them at a time, as many
  // activities at once as keep `concurrency` rows running
  let lanesInUse = 0;
  let running = 0;
  for (let from = c.from; from < c.to; from += c.rowsPerActivity) {
    const left = c.deadline - Date.now();
    if (left <= 0 || !(await condition(() => lanesInUse < c.concurrency || stop, left)) || stop) break;
    const lanes = Math.min(LANES, c.concurrency - lanesInUse);
    lanesInUse += lanes;
    running++;
    runBatchRows(c.batchId, from, Math.min(c.to, from + c.rowsPerActivity), lanes, c.deadline)
      .then((step) => {
        if (step === 'stop') stop = true;
      })
      // out of attempts without an outcome: the rows stay pending and finishBatch fails them
      .catch(() => undefined)
      .finally(() => {
        lanesInUse -= lanes;
        running--;
      });
  }
  await condition(() => running === 0);
  return stop ? 'stop' : 'done';
}
