// One video job, durably: workflow id = the job id (`vid_...`), searchable by the owner's
// account (SwitchyardAccountId). Reads like the process it runs:
//   submit → every `pollMs` (a workflow timer, not a sleeping activity) ask the provider's status
//   → when it is done, fetch and host the video and settle the price → completed;
//   the provider reports a failure → failed (the activity released the pre-charge);
//   still unfinished at the deadline → the provider is asked to stop, released, failed;
//   cancelled (POST /api/generate-video/cancel) → the provider is asked to stop, released, cancelled.
// A worker that dies mid-job loses nothing: the next worker replays this history and carries on
// from the last completed step; every activity is idempotent, so nothing is charged twice.
import {
  ActivityCancellationType,
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  isCancellation,
  proxyActivities,
  sleep,
} from '@temporalio/workflow';
import type * as activities from '../activities/index.js';

export interface VideoJobInput {
  jobId: string;
  /** between status checks (the spec's polling guidance is about 5 s) */
  pollMs: number;
  /** give up after this long */
  deadlineMs: number;
}

// Short calls to the provider and the database: retried with backoff when the provider or the
// network stumbles; a non-retryable failure (our credentials, a refused call) ends the job.
const SHORT = {
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 8 },
} as const;
const { pollVideoJob, closeVideoJob } = proxyActivities<typeof activities>(SHORT);
// A cancellation that arrives mid-submit waits for the submit to finish, so the provider's
// request id is on record and closeVideoJob can tell the provider to stop.
const { submitVideoJob } = proxyActivities<typeof activities>({
  ...SHORT,
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
});

// Downloading and hosting the output can take a while (up to SWITCHYARD_VIDEO_MAX_BYTES); the
// activity heartbeats every 5 s meanwhile, so a worker that dies here is replaced within 30 s.
const { finishVideoJob } = proxyActivities<typeof activities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '30 seconds',
  retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 6 },
});

export async function videoJob(input: VideoJobInput): Promise<string> {
  const { jobId } = input;
  const deadline = Date.now() + input.deadlineMs; // workflow time: the same on every replay
  try {
    let step = await submitVideoJob(jobId);
    while (step === 'queued' || step === 'processing' || step === 'unknown' || step === 'pending') {
      if (Date.now() >= deadline) {
        return await closeVideoJob(
          jobId,
          'timeout',
          `the provider did not finish within ${Math.round(input.deadlineMs / 1000)} s`,
        );
      }
      await sleep(input.pollMs);
      step = await pollVideoJob(jobId);
    }
    if (step === 'completed') {
      // The provider has done the work: storing and billing it is no longer cancellable.
      step = await CancellationScope.nonCancellable(() => finishVideoJob(jobId));
    }
    return step;
  } catch (err) {
    if (isCancellation(err)) {
      await CancellationScope.nonCancellable(() => closeVideoJob(jobId, 'cancelled'));
      throw err;
    }
    // An activity out of retries (provider unreachable, credentials refused): the job fails, released.
    const cause =
      err instanceof ActivityFailure && err.cause instanceof ApplicationFailure
        ? err.cause.message
        : err instanceof Error
          ? err.message
          : String(err);
    return await closeVideoJob(jobId, 'failed', cause);
  }
}
