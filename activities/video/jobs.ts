// Video jobs as the API and the status routes see them: one `media_jobs` row per job (kind
// 'video'), created with its pre-charge reserved, kept current by the `videoJob` workflow's
// activities (activities/video/run.ts), and read — never replayed — by the status routes.
// Money: the job is a metered call (videoCall) whose pre-charge is one exact hold (idempotency key
// `video:<job id>`), settled to the real duration's price when the video is stored, released on
// failure, cancellation or timeout. Settle and release are idempotent per hold, so a retried
// activity never charges twice.
import { randomBytes } from 'node:crypto';
import { db } from '../db.js';
import type { Caller } from '../accounts/keys.js';
import { formatAmount, toDisplayNumber, type Currency } from '../core/money.js';
import { startJob } from '../jobs/jobs.js';
import type { Payer } from '../metering/callSpec.js';
import { MeteredCall } from '../metering/meteredCall.js';
import type { VideoInput } from '../providers/types.js';
import { videoJob, type VideoJobInput } from '../../workflows/videoJob.js';
import type { VideoPlan } from './plan.js';

function envInt(name: string, fallback: number): number {
  const raw = process.env[name];
  const n = raw ? Number(raw) : NaN;
  return Number.isInteger(n) && n > 0 ? n : fallback;
}

/** Module settings (README "Configuration"): read per call so tests and operators can change them. */
export const videoSettings = {
  /** a job still unfinished after this long is given up: failed, released */
  deadlineSeconds: () => envInt('SWITCHYARD_VIDEO_DEADLINE_SECONDS', 1800),
  /** how often the workflow asks the provider (a workflow timer between polls) */
  pollMs: () => envInt('SWITCHYARD_VIDEO_POLL_MS', 5000),
  /** largest output video accepted from a provider */
  maxBytes: () => envInt('SWITCHYARD_VIDEO_MAX_BYTES', 200 * 1024 * 1024),
};

/** Normalized statuses (spec "States and transitions"); `pending` until the workflow first looks. */
export type VideoStatus = 'pending' | 'queued' | 'processing' | 'completed' | 'failed' | 'cancelled' | 'unknown';
const TERMINAL: readonly VideoStatus[] = ['completed', 'failed', 'cancelled'];
export const isTerminal = (s: string) => (TERMINAL as readonly string[]).includes(s);

/** What the API stores in `media_jobs.request` for the worker: everything a retry needs. */
export interface VideoJobRequest {
  /** the route the API planned (its provider, upstream model and options) */
  routeId: string;
  input: VideoInput;
  durationSeconds: number;
  variants: number;
  /** customer nano-USD per second of output, as text */
  perSecond: string;
  maxUsd: string;
  prechargeLabel: string;
  prompt: string | null;
  typicalSeconds: number;
  /** an extension of another job's variant (Midjourney-style) */
  extendOf?: { runId: string; index: number };
}

/** The terminal result cached on the row (`media_jobs.result`). */
export interface VideoJobResult {
  /** one per output video, the first is `videoUrl` */
  videos: Array<{ fileId: string; expiresAt: string; contentType: string; bytes: number; seconds: number }>;
  billedSeconds: number;
  details?: Record<string, unknown>;
}

export type VideoJobRow = NonNullable<Awaited<ReturnType<typeof loadVideoJob>>>;

function newVideoJobId(): string {
  return `vid_${randomBytes(12).toString('hex')}`;
}

export async function loadVideoJob(id: string) {
  const row = await db().prisma.mediaJob.findUnique({ where: { id } });
  return row && row.kind === 'video' ? row : null;
}

export interface StartedVideoJob {
  runId: string;
  id: string;
  status: 'pending';
  cost: number;
  paymentSource: Currency;
  remainingBalance: number;
  prechargeLabel: string;
}

/** A video job's money as a metered call: one route (planned by the API), its pre-charge held past the deadline. */
function videoCall(
  caller: Payer,
  plan: Pick<VideoPlan, 'model' | 'route' | 'maxUsd' | 'perSecond' | 'prechargeLabel'>,
  id: string,
): MeteredCall {
  return new MeteredCall({
    caller,
    requestId: id,
    surface: 'video',
    modelId: plan.model.id,
    routes: [plan.route],
    holdKey: `video:${id}`,
    // the hold must outlive the job, or the hold sweeper would hand the money back mid-run
    holdTtlSeconds: videoSettings.deadlineSeconds() + 3600,
    worstCase: () => plan.maxUsd,
    shortfall: (required, available) =>
      `this video is pre-charged $${required} (${plan.prechargeLabel.replace(/^Pre-charged for /, '')} at $${formatAmount(plan.perSecond, 'USD')}/s) and $${available} is available. Add funds, or ask for a shorter video.`,
  });
}

/**
 * Reserve the pre-charge and start the job (the job pattern, activities/jobs/jobs.ts): the
 * row is stored as `pending`, the `videoJob` workflow started with workflow id = the job id, and
 * on a refusal from the engine both are undone and nothing is charged.
 */
export async function startVideoJob(a: {
  caller: Caller;
  plan: VideoPlan;
  conversationUuid: string | null;
  extendOf?: VideoJobRequest['extendOf'];
}): Promise<StartedVideoJob> {
  const { caller, plan } = a;
  const id = newVideoJobId();
  const call = videoCall(caller, plan, id);
  const hold = await call.reserve();
  const request: VideoJobRequest = {
    routeId: plan.route.id,
    input: plan.input,
    durationSeconds: plan.durationSeconds,
    variants: plan.variants,
    perSecond: plan.perSecond.toString(),
    maxUsd: plan.maxUsd.toString(),
    prechargeLabel: plan.prechargeLabel,
    prompt: plan.prompt,
    typicalSeconds: plan.typicalSeconds,
    ...(a.extendOf ? { extendOf: a.extendOf } : {}),
  };
  const currency: Currency = hold?.currency ?? 'USD';
  const input: VideoJobInput = {
    jobId: id,
    pollMs: videoSettings.pollMs(),
    deadlineMs: videoSettings.deadlineSeconds() * 1000,
  };
  await startJob({
    id,
    accountId: caller.accountId,
    workflow: videoJob,
    args: [input],
    reservation: call,
    row: {
      table: 'media_jobs',
      columns: {
        id,
        kind: 'video',
        account_id: caller.accountId,
        api_key_id: caller.keyId,
        model: plan.model.id,
        provider_id: plan.route.provider.id,
        upstream_model: plan.route.upstreamModel,
        status: 'pending',
        request,
        conversation_uuid: a.conversationUuid,
        currency,
        precharge: (hold?.amount ?? 0n).toString(),
        hold_id: call.reservation ?? null,
        payment_source: currency,
      },
    },
    unavailable: {
      code: 'video_unavailable',
      message:
        'Video generation is unavailable right now (the workflow engine did not accept the job). Nothing was charged; retry shortly.',
    },
  });
  return {
    runId: id,
    id,
    status: 'pending',
    cost: toDisplayNumber(plan.maxUsd, 'USD'),
    paymentSource: currency,
    remainingBalance: hold ? toDisplayNumber(hold.available, currency) : 0,
    prechargeLabel: plan.prechargeLabel,
  };
}

/** The caller's recent video jobs, newest first (GET /api/generate-video/recover). */
export async function recentVideoJobs(
  accountId: string,
  opts: { model?: string; conversationUuid?: string; limit: number },
) {
  return db().prisma.mediaJob.findMany({
    where: {
      accountId,
      kind: 'video',
      ...(opts.model ? { model: opts.model } : {}),
      ...(opts.conversationUuid ? { conversationUuid: opts.conversationUuid } : {}),
    },
    orderBy: { createdAt: 'desc' },
    take: opts.limit,
  });
}
