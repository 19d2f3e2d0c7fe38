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
// Money moves only through the hold made at submission: settle and release are idempotent per
// hold, so however often these run, the account is charged once or not at all.
import { ApplicationFailure, Context } from '@temporalio/activity';
import { db } from '../db.js';
import { catalog } from '../catalog/catalog.js';
import type { Route } from '../catalog/catalog.js';
import { MeteredCall } from '../metering/meteredCall.js';
import { capability, targetFor } from '../providers/registry.js';
import type { VideoJobFailure, VideoResult, VideoStatusReply } from '../providers/types.js';
import { safeFetch, MediaFetchError } from '../core/safeFetch.js';
import { storeHostedFile } from '../media/hostedFiles.js';
import {
  isTerminal,
  loadVideoJob,
  videoSettings,
  type VideoJobRequest,
  type VideoJobResult,
  type VideoJobRow,
  type VideoStatus,
} from './jobs.js';
import { RequestError } from '../core/errors.js';

/** What the workflow learns from one step. */
export type VideoStep = VideoStatus;

const FRIENDLY = {
  nsfw: "Your prompt or image was flagged by the provider's content filter, so no video was made. Nothing was charged; rephrase the prompt or use a different image.",
  failed: 'The video could not be generated. Nothing was charged; you can try again.',
  timeout: 'The video took too long to generate and was stopped. Nothing was charged; you can try again.',
  cancelled: 'The video was cancelled. Nothing was charged.',
};

async function job(id: string): Promise<VideoJobRow> {
  const row = await loadVideoJob(id);
  // A job row is written before its workflow starts and never deleted while it runs.
  if (!row) throw ApplicationFailure.nonRetryable(`video job ${id} is not stored`, 'VideoJobMissing');
  return row;
}

const request = (row: VideoJobRow) => row.request as unknown as VideoJobRequest;

/** The route the API planned for the job (rows from before routes were stored: its provider's route of the model). */
function routeOf(row: VideoJobRow): Route {
  const routes = catalog().model(row.model)?.routes ?? [];
  const id = request(row).routeId;
  const route = routes.find((r) => r.id === id) ?? routes.find((r) => r.provider.id === row.providerId);
  if (!route)
    throw ApplicationFailure.nonRetryable(
      `video job ${row.id}: its route is no longer in the catalog`,
      'VideoRouteMissing',
    );
  return route;
}

/** The job's provider, as its video capability and how to reach it. */
function provider(row: VideoJobRow) {
  const route = routeOf(row);
  return { video: capability(route, 'video'), target: targetFor(route) };
}

/** Update a job that is not finished yet (a late poll must not undo a cancellation). */
async function updateOpen(id: string, data: Record<string, unknown>): Promise<boolean> {
  const { count } = await db().prisma.mediaJob.updateMany({
    where: { id, status: { notIn: ['completed', 'failed', 'cancelled'] } },
    data,
  });
  return count > 0;
}

/** Upstream trouble that retrying cannot fix (our credentials, a 4xx that is not the job's fault) stops the retries. */
function rethrow(err: unknown): never {
  if (err instanceof RequestError && !err.retryable)
    throw ApplicationFailure.nonRetryable(err.message, 'VideoProviderError');
  throw err;
}

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

/**
 * Fetch, host and settle (the workflow's `finishVideoJob`). Downloads may take minutes (each is
 * limited to 5), so the activity heartbeats while it works: the workflow's heartbeat timeout then
 * catches a dead or hung worker within seconds, and never a download that is merely long.
 */
export async function finishVideoJob(id: string): Promise<VideoStep> {
  const ctx = Context.current();
  const beat = setInterval(() => ctx.heartbeat(), 5000);
  try {
    return await finish(id, ctx.cancellationSignal);
  } finally {
    clearInterval(beat);
  }
}

async function finish(id: string, signal: AbortSignal): Promise<VideoStep> {
  const row = await job(id);
  if (isTerminal(row.status)) return finishMoney(row);
  const req = request(row);
  let result: VideoResult;
  try {
    const { video, target } = provider(row);
    result = await video.result(target, row.upstreamModel, row.providerRequestId!, signal);
  } catch (err) {
    rethrow(err);
  }
  if (!result.ok) {
    await recordFailure(row, result.failure);
    return 'failed';
  }
  const videos = result.videos;
  if (videos.length === 0) {
    await recordFailure(row, {
      message: `${row.providerId} finished the job without a video in its result`,
      type: 'empty_response',
      nsfw: false,
    });
    return 'failed';
  }

  // Host each output (once: a retry finds the files an earlier attempt stored).
  const stored = await db()
    .pool.query<{ id: string; expires_at: Date; content_type: string; byte_size: number }>(
      `SELECT id, expires_at, content_type, byte_size FROM hosted_files WHERE job_id = $1 ORDER BY created_at, id`,
      [id],
    )
    .then((r) => r.rows);
  const hosted: VideoJobResult['videos'] = [];
  for (let i = 0; i < videos.length; i++) {
    const requested = req.durationSeconds;
    const seconds = Math.min(requested, Math.ceil(videos[i].duration ?? requested));
    if (stored[i]) {
      hosted.push({
        fileId: stored[i].id,
        expiresAt: stored[i].expires_at.toISOString(),
        contentType: stored[i].content_type,
        bytes: Number(stored[i].byte_size),
        seconds,
      });
      continue;
    }
    let media: Awaited<ReturnType<typeof safeFetch>>;
    try {
      media = await safeFetch(videos[i].url, {
        signal,
        maxBytes: videoSettings.maxBytes(),
        timeoutMs: 300_000,
        errorCode: 'video_download_failed',
      });
    } catch (err) {
      if (
        err instanceof MediaFetchError &&
        (err.reason === 'too_large' || err.reason === 'bad_url' || err.reason === 'forbidden_address')
      ) {
        await recordFailure(row, {
          message: `the finished video could not be kept: ${err.message}`,
          type: 'video_download_failed',
          nsfw: false,
        });
        return 'failed';
      }
      throw err; // network trouble: Temporal retries the activity
    }
    const contentType = videos[i].contentType ?? (media.mediaType.startsWith('video/') ? media.mediaType : 'video/mp4');
    const file = await storeHostedFile({ accountId: row.accountId, jobId: id, contentType, data: media.data });
    hosted.push({
      fileId: file.id,
      expiresAt: file.expiresAt.toISOString(),
      contentType,
      bytes: media.data.length,
      seconds,
    });
  }

  // Claim the job as completed (one conditional update: a close racing us either won already, so
  // its release stands and nothing is charged, or loses here), then settle the seconds produced.
  const billedSeconds = hosted.reduce((n, v) => n + v.seconds, 0);
  const cached: VideoJobResult = { videos: hosted, billedSeconds, details: result.details };
  await db().prisma.mediaJob.updateMany({
    where: { id, status: { notIn: ['completed', 'failed', 'cancelled'] } },
    data: {
      // the charge the settlement below will make (it corrects the figure if the ledger differs)
      cost: expectedCharge(row, BigInt(req.perSecond) * BigInt(billedSeconds)).toString(),
      status: 'completed',
      providerStatus: 'COMPLETED',
      progress: 100,
      etaSeconds: 0,
      outputFileId: hosted[0].fileId,
      outputUrl: videos[0].url,
      result: cached as object,
      completedAt: new Date(),
    },
  });
  return finishMoney(await job(id));
}

/** What settling `usd` on the job's hold charges, in the hold's currency (as ledger.settle computes it). */
function expectedCharge(row: VideoJobRow, usd: bigint): bigint {
  const held = BigInt(row.precharge?.toString() ?? '0');
  const quoted = BigInt(request(row).maxUsd);
  if (!row.holdId || quoted === 0n) return 0n;
  const charge = row.currency === 'XNO' ? (usd * held + quoted - 1n) / quoted : usd;
  return charge < held ? charge : held;
}

/**
 * The money side of a finished job, idempotent: a completed job's hold is settled to the seconds
 * it delivered (never more than was held; a second settle returns the first), a failed or
 * cancelled one's hold released. Runs again on every retry, so a crash between recording the
 * outcome and moving the money is repaired by the next attempt.
 */
async function finishMoney(row: VideoJobRow): Promise<VideoStep> {
  if (!row.holdId) return row.status as VideoStep;
  const call = MeteredCall.adopted({
    caller: { accountId: row.accountId, keyId: row.apiKeyId, billingMode: 'paygo', dailyUsdLimit: null },
    requestId: row.id,
    surface: 'video',
    modelId: row.model,
    holdId: row.holdId,
    providerId: row.providerId,
  });
  if (row.status === 'completed') {
    const billedSeconds = (row.result as unknown as VideoJobResult).billedSeconds;
    const charge = await call.settle(BigInt(request(row).perSecond) * BigInt(billedSeconds), {
      inputUnits: null,
      outputUnits: billedSeconds,
    });
    if (row.cost?.toString() !== charge.charged.toString())
      await db().prisma.mediaJob.update({ where: { id: row.id }, data: { cost: charge.charged.toString() } });
  } else if (row.status === 'failed' || row.status === 'cancelled') {
    await call.fail(row.isNsfwError ? 'content_policy_violation' : row.status);
  }
  return row.status as VideoStep;
}

/** The job ended without a video: release the pre-charge and record why (idempotent). */
export async function closeVideoJob(
  id: string,
  how: 'failed' | 'cancelled' | 'timeout',
  message?: string,
): Promise<VideoStep> {
  const row = await job(id);
  if (isTerminal(row.status)) return finishMoney(row);
  if (row.providerRequestId) {
    // stop the provider's work (best effort: it may have finished, or be unreachable)
    const { video, target } = provider(row);
    await video.cancel(target, row.upstreamModel, row.providerRequestId, AbortSignal.timeout(15_000)).catch((err) => {
      console.warn(`[video] could not cancel ${id} at ${row.providerId}: ${(err as Error).message}`);
    });
  }
  // the outcome that stands: ours, or a finish's that got there first
  if (how === 'cancelled') return closeRow(row, 'cancelled', 'cancelled by the caller', FRIENDLY.cancelled, false);
  if (how === 'timeout')
    return closeRow(row, 'failed', message ?? 'the job did not finish in time', FRIENDLY.timeout, false);
  return closeRow(row, 'failed', message ?? 'the job failed', FRIENDLY.failed, false);
}

async function recordFailure(row: VideoJobRow, f: VideoJobFailure): Promise<void> {
  await closeRow(row, 'failed', f.message, f.nsfw ? FRIENDLY.nsfw : FRIENDLY.failed, f.nsfw);
}

/** Claim the job as ended without a video, then release its pre-charge (unless a finish won the claim). */
async function closeRow(
  row: VideoJobRow,
  status: 'failed' | 'cancelled',
  error: string,
  friendly: string,
  nsfw: boolean,
): Promise<VideoStep> {
  await db().prisma.mediaJob.updateMany({
    where: { id: row.id, status: { notIn: ['completed', 'failed', 'cancelled'] } },
    data: {
      status,
      error,
      userFriendlyError: friendly,
      isNsfwError: nsfw,
      cost: '0',
      etaSeconds: null,
      completedAt: new Date(),
    },
  });
  return finishMoney(await job(row.id));
}
