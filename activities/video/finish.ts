// How a video job ends (the `videoJob` workflow's finishVideoJob and closeVideoJob, see run.ts):
// its output fetched and hosted and the seconds produced settled, or the job closed without a
// video and its pre-charge released, with the reason recorded. Money moves only through the hold
// made at submission, idempotently per hold.
import { Context } from '@temporalio/activity';
import { db } from '../db.js';
import { MeteredCall } from '../metering/meteredCall.js';
import type { VideoJobFailure, VideoResult } from '../providers/types.js';
import { safeFetch, MediaFetchError } from '../core/safeFetch.js';
import { storeHostedFile } from '../media/hostedFiles.js';
import { isTerminal, videoSettings, type VideoJobResult, type VideoJobRow } from './jobs.js';
import { job, provider, request, rethrow, type VideoStep } from './jobRow.js';

export const FRIENDLY = {
  nsfw: "Your prompt or image was flagged by the provider's content filter, so no video was made. Nothing was charged; rephrase the prompt or use a different image.",
  failed: 'The video could not be generated. Nothing was charged; you can try again.',
  timeout: 'The video took too long to generate and was stopped. Nothing was charged; you can try again.',
  cancelled: 'The video was cancelled. Nothing was charged.',
};

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

  const hosted = await hostVideos(row, videos, signal);
  if (!hosted) return 'failed';

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

/**
 * Host each output (once: a retry finds the files an earlier attempt stored). Undefined when an
 * output cannot be kept (too large, a forbidden address): the job's failure is recorded then.
 */
async function hostVideos(
  row: VideoJobRow,
  videos: Extract<VideoResult, { ok: true }>['videos'],
  signal: AbortSignal,
): Promise<VideoJobResult['videos'] | undefined> {
  const stored = await db()
    .pool.query<{ id: string; expires_at: Date; content_type: string; byte_size: number }>(
      `SELECT id, expires_at, content_type, byte_size FROM hosted_files WHERE job_id = $1 ORDER BY created_at, id`,
      [row.id],
    )
    .then((r) => r.rows);
  const hosted: VideoJobResult['videos'] = [];
  for (let i = 0; i < videos.length; i++) {
    const requested = request(row).durationSeconds;
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
        return undefined;
      }
      throw err; // network trouble: Temporal retries the activity
    }
    const contentType = videos[i].contentType ?? (media.mediaType.startsWith('video/') ? media.mediaType : 'video/mp4');
    const file = await storeHostedFile({ accountId: row.accountId, jobId: row.id, contentType, data: media.data });
    hosted.push({
      fileId: file.id,
      expiresAt: file.expiresAt.toISOString(),
      contentType,
      bytes: media.data.length,
      seconds,
    });
  }

  return hosted;
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

export async function recordFailure(row: VideoJobRow, f: VideoJobFailure): Promise<void> {
  await closeRow(row, 'failed', f.message, f.nsfw ? FRIENDLY.nsfw : FRIENDLY.failed, f.nsfw);
}

/** Claim the job as ended without a video, then release its pre-charge (unless a finish won the claim). */
export async function closeRow(
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
