// One video job, durably: workflow id = the job id (`vid_...`), searchable by the owner's
// account (SwitchyardAccountId). Reads like the process it runs:
//   submit → one activity asks the provider's status every `pollMs`, heartbeating in between
//   (activities/video/run.ts, watchVideoJob, says why not a workflow timer per check) → when it is done, fetch and host the video and settle the price → completed;
//   the provider reports a failure → failed (the activity released the pre-charge);
//   still unfinished at the deadline → the provider is asked to stop, released, failed;
//   cancelled (POST /api/generate-video/cancel) → the provider is asked to stop, released, cancelled;
//   the API, waiting on the `ended` update (jobEnded.ts), then answers with the job's final state.
// A worker that dies mid-job loses nothing: the next worker replays this history and carries on
// from the last completed step; every activity is idempotent, so nothing is charged twice.
import {
  ActivityCancellationType,
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  isCancellation,
  patched,
  proxyActivities,
  sleep,
} from '@temporalio/workflow';
import type * as activities from '../activities/index.js';
import { answeringEnded } from './jobEnded.js';

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

/** The wait for the provider: one activity for the whole of it, alive while it heartbeats. */
function watcher(input: VideoJobInput) {
  return proxyActivities<typeof activities>({
    // the job's whole deadline, plus a last status check after it
    startToCloseTimeout: input.deadlineMs + 60_000,
    // A worker that dies mid-wait is noticed within this (the SDK sends a heartbeat at most every
    // 0.8 × this). It heartbeats around every check, so it must outlast a wait between checks.
    heartbeatTimeout: Math.max(30_000, 2 * input.pollMs + 10_000),
    retry: SHORT.retry,
  }).watchVideoJob;
}

const stillOpen = (step: string) =>
  step === 'queued' || step === 'processing' || step === 'unknown' || step === 'pending';

export function videoJob(input: VideoJobInput): Promise<string> {
  return answeringEnded(() => runVideoJob(input));
}

async function runVideoJob(input: VideoJobInput): Promise<string> {
  const { jobId } = input;
  const deadline = Date.now() + input.deadlineMs; // workflow time: the same on every replay
  const timedOut = () =>
    closeVideoJob(jobId, 'timeout', `the provider did not finish within ${Math.round(input.deadlineMs / 1000)} s`);
  try {
    let step = await submitVideoJob(jobId);
    if (patched('video-watch-activity')) {
      if (stillOpen(step)) step = await watcher(input)(jobId, input.pollMs, deadline);
      // the watch returns an open step only once the deadline has passed
      if (stillOpen(step)) return await timedOut();
    } else {
      // jobs started before the watch activity: a workflow timer and one status check per turn
      while (stillOpen(step)) {
        if (Date.now() >= deadline) return await timedOut();
        await sleep(input.pollMs);
        step = await pollVideoJob(jobId);
      }
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
