// Video jobs as the API and the status routes see them: one `media_jobs` row per job (kind
// 'video'), created with its pre-charge reserved, kept current by the `videoJob` workflow's
// activities (activities/video/run.ts), and read — never replayed — by the status routes.
// Money: the job is a metered call (videoCall) whose pre-charge is one exact hold (idempotency key
// `video:<job id>`), settled to the real duration's price when the video is stored, released on
// failure, cancellation or timeout. Settle and release are idempotent per hold, so a retried
// activity never charges twice.
import { db } from '../db.js';
import type { VideoInput } from '../providers/types.js';

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

export async function loadVideoJob(id: string) {
  const row = await db().prisma.mediaJob.findUnique({ where: { id } });
  return row && row.kind === 'video' ? row : null;
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
