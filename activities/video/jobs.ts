// Video jobs as the API and the status routes see them: one `media_jobs` row per job (kind
// 'video'), created with its pre-charge reserved, kept current by the `videoJob` workflow's
// activities (activities/video/run.ts), and read — never replayed — by the status routes.
// Money: the pre-charge is a ledger HOLD (idempotency key `video:<job id>`), settled to the
// real duration's price when the video is stored, released on failure, cancellation or
// timeout. Settle and release are idempotent per hold, so a retried activity never charges twice.
import { randomBytes } from 'node:crypto';
import { db } from '../db.js';
import type { Caller } from '../accounts/keys.js';
import { InsufficientFunds, release, reserve } from '../ledger/ledger.js';
import { formatAmount, toDisplayNumber, type Currency } from '../core/money.js';
import type { VideoPlan } from './plan.js';
import { RequestError } from '../core/errors.js';

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
export const TERMINAL: readonly VideoStatus[] = ['completed', 'failed', 'cancelled'];
export const isTerminal = (s: string) => (TERMINAL as readonly string[]).includes(s);

/** What the API stores in `media_jobs.request` for the worker: everything a retry needs. */
export interface VideoJobRequest {
  submitPath: string;
  input: Record<string, unknown>;
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

export function newVideoJobId(): string {
  return `vid_${randomBytes(12).toString('hex')}`;
}

export async function loadVideoJob(id: string) {
  const row = await db().prisma.mediaJob.findUnique({ where: { id } });
  return row && row.kind === 'video' ? row : null;
}

export interface CreatedVideoJob {
  id: string;
  cost: number;
  paymentSource: Currency;
  remainingBalance: number;
  prechargeLabel: string;
}

/**
 * Reserve the pre-charge and store the job as `pending`. On any failure nothing is left behind:
 * the hold is released and no row exists. The caller starts the workflow next (and calls
 * `abandonVideoJob` if that fails).
 */
export async function createVideoJob(a: {
  caller: Caller;
  plan: VideoPlan;
  conversationUuid: string | null;
  id?: string;
  extendOf?: VideoJobRequest['extendOf'];
}): Promise<CreatedVideoJob> {
  const { caller, plan } = a;
  if (caller.billingMode === 'subscription_only') {
    throw new RequestError(
      402,
      'subscription_required',
      'This API key is limited to subscription billing, and no subscription covers video. Use a pay-as-you-go key.',
    );
  }
  const id = a.id ?? newVideoJobId();
  let hold: Awaited<ReturnType<typeof reserve>> | null = null;
  if (plan.maxUsd > 0n) {
    try {
      hold = await reserve({
        accountId: caller.accountId,
        usd: plan.maxUsd,
        idempotencyKey: `video:${id}`,
        requestId: id,
        apiKeyId: caller.keyId,
        // the hold must outlive the job, or the hold sweeper would hand the money back mid-run
        ttlSeconds: videoSettings.deadlineSeconds() + 3600,
      });
    } catch (err) {
      if (err instanceof InsufficientFunds) {
        throw new RequestError(
          402,
          'insufficient_balance',
          `Insufficient balance: this video is pre-charged $${formatAmount(err.requiredUsd, 'USD')} (${plan.prechargeLabel.replace(/^Pre-charged for /, '')} at $${formatAmount(plan.perSecond, 'USD')}/s) and $${formatAmount(err.availableUsd, 'USD')} is available. Add funds, or ask for a shorter video.`,
          {
            details: {
              requiredBalance: toDisplayNumber(err.requiredUsd, 'USD'),
              availableBalance: toDisplayNumber(err.availableUsd, 'USD'),
            },
          },
        );
      }
      throw err;
    }
  }
  const request: VideoJobRequest = {
    submitPath: plan.submitPath,
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
  try {
    await db().prisma.mediaJob.create({
      data: {
        id,
        kind: 'video',
        accountId: caller.accountId,
        apiKeyId: caller.keyId,
        model: plan.model.id,
        providerId: plan.route.provider.id,
        upstreamModel: plan.route.upstreamModel,
        status: 'pending',
        request: request as object,
        conversationUuid: a.conversationUuid,
        currency,
        precharge: (hold?.amount ?? 0n).toString(),
        holdId: hold?.id ?? null,
        paymentSource: currency,
      },
    });
  } catch (err) {
    if (hold) await release(hold.id);
    throw err;
  }
  return {
    id,
    cost: toDisplayNumber(plan.maxUsd, 'USD'),
    paymentSource: currency,
    remainingBalance: hold ? toDisplayNumber(hold.available, currency) : 0,
    prechargeLabel: plan.prechargeLabel,
  };
}

/** The workflow could not be started: give the pre-charge back and forget the job. */
export async function abandonVideoJob(id: string): Promise<void> {
  const row = await loadVideoJob(id);
  if (!row) return;
  if (row.holdId) await release(row.holdId);
  await db().prisma.mediaJob.deleteMany({ where: { id, status: 'pending' } });
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
