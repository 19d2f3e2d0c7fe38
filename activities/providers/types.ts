// The fixed shape of a provider adapter (one folder per upstream protocol under
// activities/providers/). Routing, billing and streaming never special-case a provider: they
// only see this interface and UpstreamError.
import type { InferenceRequest, InferenceResult, StreamEvent } from '../inference/types.js';

/** Everything an adapter needs to reach one route of one provider. */
export interface ProviderTarget {
  providerId: string;
  /** base URL, already resolved: `<PROVIDER>_BASE_URL`, else the catalog's */
  baseUrl: string;
  apiKey?: string;
  /** vendor quirks and protocol options from the catalog (provider options merged with route options) */
  options: Record<string, unknown>;
  /** extra headers to pass to the upstream (e.g. `anthropic-beta`) */
  headers?: Record<string, string>;
}

export interface ProviderAdapter {
  /** the `protocol` value in the catalog this adapter serves */
  readonly protocol: string;
  complete(req: InferenceRequest, target: ProviderTarget, signal: AbortSignal): Promise<InferenceResult>;
  /**
   * Streams events. The upstream call is made on the first `next()`, and any failure to get a
   * successful response (connection error, non-2xx status, a stream that ends before its first
   * event) is thrown from THAT call, so the router can still fall back to another provider.
   * Later failures are thrown from later `next()` calls. Aborting `signal` ends the upstream call.
   */
  stream(req: InferenceRequest, target: ProviderTarget, signal: AbortSignal): AsyncIterable<StreamEvent>;
}

/**
 * A failure at the upstream, mapped once by the adapter. `retryable` means another attempt (at
 * another provider) may succeed: timeouts, connection errors, 408, 429, 5xx. `status` is what our
 * caller should see if no fallback succeeds.
 */
export class UpstreamError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly retryable: boolean,
    readonly opts: { code?: string; providerId?: string; retryAfterSeconds?: number; upstreamBody?: string } = {},
  ) {
    super(message);
  }
}

/** The usual mapping of an upstream HTTP status to retryability. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 425 || status === 429 || status >= 500;
}
