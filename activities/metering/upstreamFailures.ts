// How an upstream's failure reads, to the caller and to the operator: the metered call
// (meteredCall.ts) turns each failed attempt into one of these and, when every route failed, into
// one error for the caller. The provider's own words go to the operator's log, never to the caller.
import type { Route } from '../catalog/catalog.js';
import { isCallersOwn, RequestError, UPSTREAM_ERROR } from '../core/errors.js';

/**
 * How an upstream's failure reads to our caller. Their credentials problem is not the caller's
 * (401/403/402 become 502), nor is a 404 (a model or endpoint the provider does not serve: the
 * catalog's business), a timeout is a 504, their rate limit stays a 429 with its Retry-After, their
 * judgement of the request itself (400/413/422) stays a 400.
 */
function callerStatus(upstream: number): number {
  if (upstream === 499) return 499;
  if (upstream === 429) return 429;
  if (upstream === 408 || upstream === 504) return 504;
  if (isCallersOwn(upstream)) return 400;
  return 502;
}

/**
 * Why every attempt failed, as one error for the caller. `retryable`: every failure was one that
 * a later attempt may get past (a job's engine retries then).
 */
export function exhausted(modelId: string, failures: RequestError[], requestId: string): RequestError {
  const last = failures.at(-1);
  if (!last) return new RequestError(503, 'model_not_available', `Model '${modelId}' has no configured provider here.`);
  const retryable = failures.every((f) => f.retryable);
  const pointer = failures.some(pointsToLog) ? logPointer(requestId) : '';
  if (failures.length === 1) {
    const status = callerStatus(last.status);
    const named = last.code !== UPSTREAM_ERROR ? last.code : undefined;
    const code =
      named ?? (status === 400 ? 'upstream_rejected_request' : status === 429 ? 'rate_limit_exceeded' : UPSTREAM_ERROR);
    return new RequestError(status, code, last.message + pointer, {
      retryAfterSeconds: last.opts.retryAfterSeconds,
      retryable,
      providerId: last.opts.providerId,
    });
  }
  const summary = failures.map((f) => f.message).join(' ');
  return new RequestError(502, 'all_fallbacks_failed', `Every provider failed. ${summary}${pointer}`, { retryable });
}

/**
 * A failure after the caller had the first byte (a stream that broke midway): logged for the
 * operator like any upstream failure, and told to the caller without the upstream's words.
 */
export function midwayFailure(err: unknown, providerId: string | undefined, requestId: string): RequestError {
  const e =
    err instanceof RequestError
      ? err
      : new RequestError(502, (err as { code?: string }).code ?? UPSTREAM_ERROR, 'The stream broke after it began.', {
          providerId,
          detail: String((err as Error)?.message ?? err),
        });
  logUpstreamFailure(requestId, e);
  if (!pointsToLog(e)) return e;
  return new RequestError(e.status, e.code, e.message + logPointer(requestId), e.opts);
}

/** The operator's copy of an upstream failure: what the upstream said, which the caller is not shown. */
export function logUpstreamFailure(requestId: string, e: RequestError): void {
  if (e.status === 499 || !e.opts.providerId) return; // the caller's own abort; the gateway's own refusal
  const body = e.opts.upstreamBody ? ` | body: ${e.opts.upstreamBody.slice(0, 1000)}` : '';
  console.warn(
    `[upstream] ${requestId} ${e.opts.providerId} ${e.status} ${e.code}: ${e.opts.detail ?? e.message}${body}`,
  );
}

/**
 * An upstream failure reads to the caller as the provider and the kind of failure (upstreamError),
 * plus the request id under which the operator's log has the provider's own words. A refusal of
 * the caller's own request already carries them; an abort is the caller's own doing.
 */
const pointsToLog = (e: RequestError) => !!e.opts.providerId && !isCallersOwn(e.status) && e.status !== 499;
const logPointer = (requestId: string) =>
  ` The provider's own reply is in the gateway's log under request id ${requestId}.`;

/** An adapter bug is not the caller's business: log it, answer a generic provider failure. */
export function asUpstreamFailure(route: Route, err: unknown): RequestError {
  if (err instanceof RequestError) return err;
  console.error(`[metering] adapter for ${route.provider.id} failed unexpectedly:`, err);
  return new RequestError(502, 'provider_error', `${route.provider.id} failed unexpectedly`, {
    providerId: route.provider.id,
  });
}
