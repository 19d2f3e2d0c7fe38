// A background response (`background: true`): one durable run per response, workflow id = the
// response id. The inference and its settlement happen in an activity that heartbeats, so a
// cancellation (POST /v1/responses/{id}/cancel) reaches the upstream call; the compensation
// (release the reservation, mark it cancelled) runs even then; the cancel route waits for it on the
// `ended` update (jobEnded.ts) and answers with the response as it ended.
import { ActivityCancellationType, CancellationScope, isCancellation, proxyActivities } from '@temporalio/workflow';
import type * as activities from '../activities/index.js';
import { answeringEnded } from './jobEnded.js';

const { runBackgroundResponse } = proxyActivities<typeof activities>({
  startToCloseTimeout: '1 hour',
  heartbeatTimeout: '30 seconds',
  retry: { maximumAttempts: 3, initialInterval: '2 seconds' },
  // wait for the activity to stop its upstream call before compensating
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
});

const { closeBackgroundResponse } = proxyActivities<typeof activities>({
  startToCloseTimeout: '1 minute',
  retry: { maximumAttempts: 10 },
});

export function backgroundResponse(responseId: string): Promise<string> {
  return answeringEnded(() => runAndSettle(responseId));
}

async function runAndSettle(responseId: string): Promise<string> {
  try {
    return await runBackgroundResponse(responseId);
  } catch (err) {
    if (isCancellation(err)) {
      await CancellationScope.nonCancellable(() => closeBackgroundResponse(responseId, 'cancelled'));
      throw err;
    }
    await closeBackgroundResponse(responseId, 'failed', err instanceof Error ? err.message : String(err));
    return 'failed';
  }
}
