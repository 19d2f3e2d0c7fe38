// The activities of the `videoJob` workflow (workflows/videoJob.ts). Each takes only the job id,
// reads the job row, does one step and records it, and is safe to run again after a crash:
//   submitVideoJob  sends the job to the provider once (the provider's request id is stored; a
//                   retry that finds it does nothing), or records the provider's refusal;
//   pollVideoJob    asks the provider's status and keeps the row current (status, provider
//                   label, progress, ETA); never moves a terminal row backwards;
//   watchVideoJob   polls in a loop, heartbeating between checks, until the provider's job
//                   ends or the deadline passes (why a loop here and not a workflow timer: below);
//   finishVideoJob  fetches the output, hosts the file(s), settles the duration's price and marks
//                   the job completed — or records the job's own failure (NSFW included);
//   closeVideoJob   failed / cancelled / timed out: asks the provider to stop when it may still
//                   run, releases the pre-charge, records why.
// The last two are in finish.ts.
// Money moves only through the hold made at submission: settle and release are idempotent per
// hold, so however often these run, the account is charged once or not at all.
import { Context } from '@temporalio/activity';
import { RequestError } from '../core/errors.js';
import type { VideoJobFailure, VideoStatusReply } from '../providers/types.js';
import { closeRow, FRIENDLY, recordFailure } from './finish.js';
import { job, provider, request, rethrow, updateOpen, type VideoStep } from './jobRow.js';
import { isTerminal, type VideoStatus } from './jobs.js';

/**
 * How long a submit may take. The provider may accept a job and its answer still be lost (the
 * network, a worker that dies before the id is stored): fal's queue has no idempotency key, so
 * the retry then submits a second job, which runs at our expense (the caller is charged once,
 * for the job the record follows). What can be narrowed is narrowed: a submit is read to its end
 * even while the worker shuts down, and an id that cannot be stored is cancelled at the provider.
 */
const SUBMIT_TIMEOUT_MS = 20_000;

export async function submitVideoJob(id: string): Promise<VideoStep> {
  const row = await job(id);
  if (isTerminal(row.status)) return row.status as VideoStep;
  if (row.providerRequestId) return row.status as VideoStep; // submitted by an earlier attempt
  const req = request(row);
  const { video, target } = provider(row);
  let requestId: string;
  try {
    // Not the activity's cancellation signal: a worker shutting down cancels its activities at
    // once, and an answer abandoned half-way may be a job the provider has already accepted.
    requestId = await video.submit(target, row.upstreamModel, req.input, AbortSignal.timeout(SUBMIT_TIMEOUT_MS));
  } catch (err) {
    // The provider refused the job itself (bad input it checks, content policy): record it, stop.
    if (
      err instanceof RequestError &&
      err.status >= 400 &&
      err.status < 500 &&
      err.status !== 401 &&
      err.status !== 403 &&
      err.status !== 408 &&
      err.status !== 429
    ) {
      await recordFailure(row, video.jobFailure(err));
      return 'failed';
    }
    rethrow(err);
  }
  try {
    await updateOpen(id, {
      providerRequestId: requestId,
      status: 'queued',
      providerStatus: 'IN_QUEUE',
      progress: 0,
      etaSeconds: req.typicalSeconds,
    });
  } catch (err) {
    // The retry will submit again: stop this job, which nothing would ever poll, pay for or cancel.
    await video.cancel(target, row.upstreamModel, requestId, AbortSignal.timeout(15_000)).catch((e) => {
      console.warn(`[video] ${id}: could not cancel unrecorded request ${requestId}: ${(e as Error).message}`);
    });
    throw err;
  }
  return 'queued';
}

/**
 * Status checks every `pollMs` until the job leaves the provider's queue or `deadlineAt` (epoch
 * ms) passes; returns the last step (still open only when the deadline passed).
 *
 * Polling every few seconds from the workflow (a timer, then a one-check activity) writes about
 * ten history events per check: with a few hundred jobs in flight that kept the Temporal server's
 * persistence busy enough to slow every workflow start (bench:jobs). Temporal's advice for polling
 * this often is this: one long activity that checks in a loop and heartbeats. Heartbeats are
 * throttled by the SDK to one server call per ~0.8 × heartbeatTimeout, so a check costs the server
 * nothing; a worker that dies stops heartbeating and the activity is retried on another within the
 * heartbeat timeout; a cancelled workflow does not wait for this activity (it closes the job itself),
 * and the cancellation reaches the loop with its next heartbeat.
 */
export async function watchVideoJob(id: string, pollMs: number, deadlineAt: number): Promise<VideoStep> {
  const ctx = Context.current();
  for (;;) {
    // rejects when the activity is cancelled (the workflow was, or the worker is shutting down)
    await ctx.sleep(Math.min(pollMs, Math.max(0, deadlineAt - Date.now())));
    ctx.heartbeat();
    const step = await pollVideoJob(id);
    if (isTerminal(step) || Date.now() >= deadlineAt) return step;
    ctx.heartbeat(step);
  }
}

/** One status check. `completed` means the provider finished: the workflow then runs finishVideoJob. */
export async function pollVideoJob(id: string): Promise<VideoStep> {
  const row = await job(id);
  if (isTerminal(row.status)) return row.status as VideoStep;
  const req = request(row);
  let reply: VideoStatusReply;
  try {
    const { video, target } = provider(row);
    reply = await video.status(target, row.upstreamModel, row.providerRequestId!, Context.current().cancellationSignal);
  } catch (err) {
    rethrow(err);
  }
  const status = reply.state;
  if (status === 'failed' || status === 'cancelled') {
    // the provider ended it (fal: COMPLETED with `error`; bridges: FAILED / CANCELED)
    const failure: VideoJobFailure = reply.error
      ? {
          message: `${row.providerId}: ${reply.error}`,
          type: reply.errorType,
          nsfw: /content[_ ]policy|nsfw/i.test(`${reply.errorType} ${reply.error}`),
        }
      : { message: `${row.providerId} reports the job ${reply.label}`, type: null, nsfw: false };
    if (status === 'cancelled') await closeRow(row, 'cancelled', failure.message, FRIENDLY.cancelled, false);
    else await recordFailure(row, failure);
    return status;
  }
  const elapsed = (Date.now() - row.createdAt.getTime()) / 1000;
  const { progress, eta } = estimate(status, reply.logs, reply.queuePosition, elapsed, req.typicalSeconds);
  // `completed` stays `processing` (at most 99%) on the row until the output is stored and paid for
  const stored =
    status === 'completed'
      ? { status: 'processing', progress: 99, etaSeconds: 1 }
      : { status, progress, etaSeconds: eta };
  await updateOpen(id, { ...stored, providerStatus: reply.label });
  return status;
}

/**
 * Progress and ETA. fal reports no percentage, so: the last "NN%" a runner logged when there is
 * one, else the time elapsed against the model's typical run (`typical_seconds`), capped at 95
 * until the job is really done.
 */
function estimate(
  status: VideoStatus,
  logs: string[],
  queuePosition: number | null,
  elapsed: number,
  typical: number,
): { progress: number; eta: number } {
  if (status === 'completed') return { progress: 100, eta: 0 };
  if (status === 'queued') return { progress: 0, eta: Math.round(typical * (1 + (queuePosition ?? 0) * 0.1)) };
  for (let i = logs.length - 1; i >= 0; i--) {
    const m = /(\d{1,3}(?:\.\d+)?)\s*%/.exec(logs[i]);
    if (m && Number(m[1]) <= 100) {
      const p = Math.min(99, Math.floor(Number(m[1])));
      return { progress: p, eta: p > 0 ? Math.max(1, Math.round((elapsed * (100 - p)) / p)) : Math.round(typical) };
    }
  }
  return {
    progress: Math.min(95, Math.floor((elapsed / typical) * 100)),
    eta: Math.max(1, Math.round(typical - elapsed)),
  };
}
