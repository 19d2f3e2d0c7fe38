// A video job row as the status routes show it (spec "Video job": the normalized status record
// plus the job's fields). Output URLs are minted fresh on every call (signed, about an hour), so
// a cached terminal row never hands out an expired link.
import { signedUrl } from '../media/hostedFiles.js';
import { toDisplayNumber, type Currency } from '../core/money.js';
import type { VideoJobResult, VideoJobRow } from './jobs.js';

/** The spec's normalized video job states ("States and transitions"). */
export type NormalizedVideoStatus = 'queued' | 'processing' | 'completed' | 'failed' | 'cancelled' | 'unknown';

/**
 * A stored status as the status routes show it. The row says `pending` until the workflow has
 * submitted the job (the spec's initial response says so too), but `pending` is not a normalized
 * state: a job not picked up yet is waiting in line, `queued`.
 */
export function normalizedVideoStatus(status: string): NormalizedVideoStatus {
  switch (status) {
    case 'pending':
    case 'queued':
      return 'queued';
    case 'processing':
    case 'completed':
    case 'failed':
    case 'cancelled':
      return status;
    default:
      return 'unknown';
  }
}

export interface VideoStatusData {
  status: NormalizedVideoStatus;
  requestId: string;
  videoUrl: string | null;
  error: string | null;
  createdAt: string;
  completedAt: string | null;
  progress?: number;
  estimatedTimeRemaining?: number;
  output?: { video: { url: string }; videos?: Array<{ index: number; url: string }> };
  details?: Record<string, unknown>;
  cost?: number;
  paymentSource?: string | null;
  prechargeLabel?: string;
  isNSFWError?: boolean;
  userFriendlyError?: string | null;
}

export async function videoStatusData(row: VideoJobRow, origin: string): Promise<VideoStatusData> {
  const result = row.result as VideoJobResult | null;
  const currency = (row.currency ?? 'USD') as Currency;
  const data: VideoStatusData = {
    status: normalizedVideoStatus(row.status),
    requestId: row.id,
    videoUrl: null,
    error: row.error,
    createdAt: row.createdAt.toISOString(),
    completedAt: row.completedAt?.toISOString() ?? null,
    prechargeLabel: (row.request as { prechargeLabel?: string }).prechargeLabel,
    paymentSource: row.paymentSource,
  };
  if (row.progress !== null) data.progress = row.progress;
  if (row.etaSeconds !== null) data.estimatedTimeRemaining = row.etaSeconds;
  if (row.status === 'completed' && result?.videos.length) {
    const urls = await Promise.all(result.videos.map((v) => signedUrl(v.fileId, origin, new Date(v.expiresAt))));
    data.videoUrl = urls[0];
    data.output = {
      video: { url: urls[0] },
      ...(urls.length > 1 ? { videos: urls.map((url, index) => ({ index, url })) } : {}),
    };
    if (result.details) data.details = { ...result.details, billedSeconds: result.billedSeconds };
    else data.details = { billedSeconds: result.billedSeconds };
  }
  if (row.status === 'completed' || row.status === 'failed' || row.status === 'cancelled') {
    data.cost = toDisplayNumber(BigInt(row.cost?.toString() ?? '0'), currency);
  }
  if (row.status === 'failed' || row.status === 'cancelled') {
    data.isNSFWError = row.isNsfwError;
    data.userFriendlyError = row.userFriendlyError;
  }
  return data;
}

/** The provider-style label of the deprecated legacy status route. */
export function videoStatusLabel(row: VideoJobRow): string {
  switch (row.status) {
    case 'completed':
      return 'COMPLETED';
    case 'failed':
      return 'FAILED';
    case 'cancelled':
      return 'CANCELED';
    default:
      return row.providerStatus ?? 'IN_QUEUE';
  }
}
