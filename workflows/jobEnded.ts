// How the API learns that a cancelled job has ended without polling its row: the job's workflow
// answers the `ended` update once its compensation has run (the money given back, the row
// marked), with the state it ended in. The API asks for the cancel, then waits on this update;
// a workflow that has closed already answers no update, and its row says how it ended.
import {
  allHandlersFinished,
  CancellationScope,
  condition,
  defineUpdate,
  isCancellation,
  setHandler,
} from '@temporalio/workflow';

/** Waits until the job has ended; answers how (its workflow's last step: cancelled, completed, …). */
export const jobEndedUpdate = defineUpdate<string>('ended');

/**
 * Run a job's workflow body so that it answers `jobEndedUpdate`: the answer is what the body
 * returned, or `cancelled` / `failed` for what it threw. The wait survives the workflow's own
 * cancellation (that is what the caller waits for), and the workflow closes only once every
 * waiting update has had its answer. No command is added: histories recorded without it replay.
 */
export async function answeringEnded<T extends string>(body: () => Promise<T>): Promise<T> {
  let ended: string | undefined;
  setHandler(jobEndedUpdate, async () => {
    await CancellationScope.nonCancellable(() => condition(() => ended !== undefined));
    return ended!;
  });
  try {
    const step = await body();
    ended = step;
    return step;
  } catch (err) {
    ended = isCancellation(err) ? 'cancelled' : 'failed';
    throw err;
  } finally {
    await CancellationScope.nonCancellable(() => condition(allHandlersFinished));
  }
}
