// An asynchronous speech or music job (POST /api/tts answered 202): one run per job, workflow
// id = the job id (`tts_...`). The audio is made, hosted and billed in one activity that
// heartbeats every second, so a worker that dies mid-job is noticed within the heartbeat timeout
// and the job is retried on another worker; the same reservation is settled once whichever
// attempt finishes. When the retries are spent, the compensation releases the reservation and
// records the error.
import { ActivityFailure, TimeoutFailure, proxyActivities } from '@temporalio/workflow';
import type * as activities from '../activities/index.js';

/** How long an attempt may go without a heartbeat (the activity sends one every second) before it is given up. */
const HEARTBEAT_TIMEOUT = '10 seconds';

const { runSpeechJob } = proxyActivities<typeof activities>({
  startToCloseTimeout: '15 minutes',
  heartbeatTimeout: HEARTBEAT_TIMEOUT,
  retry: { maximumAttempts: 3, initialInterval: '1 second', backoffCoefficient: 2 },
});

const { closeSpeechJob } = proxyActivities<typeof activities>({
  startToCloseTimeout: '1 minute',
  retry: { maximumAttempts: 10 },
});

export async function speechJob(jobId: string): Promise<string> {
  try {
    return await runSpeechJob(jobId);
  } catch (err) {
    await closeSpeechJob(jobId, whyItFailed(err));
    return 'error';
  }
}

/** The last attempt's failure, as the job's record says it. */
function whyItFailed(err: unknown): string {
  const cause = err instanceof ActivityFailure && err.cause ? err.cause : err;
  if (cause instanceof TimeoutFailure && cause.timeoutType === 'HEARTBEAT')
    return `The worker making the audio stopped responding (no heartbeat within ${HEARTBEAT_TIMEOUT}), and the retries are spent.`;
  return cause instanceof Error ? cause.message : String(cause);
}
