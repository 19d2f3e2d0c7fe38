// Queue-style video generation: the video capability's contract.
import type { RequestError } from '../../core/errors.js';
import type { ProviderTarget } from './target.js';

/** A video job as every video protocol gets it; the adapter maps it to its own field names. */
export interface VideoInput {
  prompt: string | null;
  /** seconds of each output video */
  durationSeconds: number;
  aspectRatio?: string;
  resolution?: string;
  seed?: number;
  /** optional parameters the model's catalog entry lists, by their spec names */
  params: Record<string, unknown>;
  /** media inputs, each an http(s) URL or a data URL */
  media: { image?: string; audio?: string; video?: string };
  /** continue one variant of an earlier job of the same provider (Midjourney-style) */
  extend?: { providerRequestId: string; index: number };
}

/** The spec's normalized video states, as a provider reports them. */
export type VideoState = 'queued' | 'processing' | 'completed' | 'failed' | 'cancelled' | 'unknown';

export interface VideoStatusReply {
  state: VideoState;
  /** the provider's own label (IN_QUEUE, IN_PROGRESS, …), shown by the legacy status route */
  label: string;
  queuePosition: number | null;
  /** the runner's log lines, newest last */
  logs: string[];
  /** a failure the provider reports on its status */
  error: string | null;
  errorType: string | null;
}

/** A refusal or failure of the job itself (not of our call): recorded on the job, never retried. */
export interface VideoJobFailure {
  message: string;
  type: string | null;
  nsfw: boolean;
}

interface OutputVideo {
  url: string;
  contentType?: string;
  /** seconds, when the provider says */
  duration?: number;
}

export type VideoResult =
  | { ok: true; videos: OutputVideo[]; details?: Record<string, unknown> }
  | { ok: false; failure: VideoJobFailure };

/**
 * A queue-style video protocol: submit a job, ask its status, fetch its result, cancel it.
 * Transport trouble and our own credentials' refusal throw RequestErrors (retryable or not); the
 * job's own refusal (content policy, bad input the provider checks) is `jobFailure` data.
 */
export interface VideoAdapter {
  /** returns the provider's request id; a 4xx refusal of the job throws (see `jobFailure`) */
  submit(target: ProviderTarget, model: string, input: VideoInput, signal: AbortSignal): Promise<string>;
  status(target: ProviderTarget, model: string, requestId: string, signal: AbortSignal): Promise<VideoStatusReply>;
  result(target: ProviderTarget, model: string, requestId: string, signal: AbortSignal): Promise<VideoResult>;
  cancel(
    target: ProviderTarget,
    model: string,
    requestId: string,
    signal: AbortSignal,
  ): Promise<'requested' | 'already_completed' | 'not_found'>;
  /** how a refusal of `submit` reads as the job's own failure (NSFW or not) */
  jobFailure(err: RequestError): VideoJobFailure;
}
