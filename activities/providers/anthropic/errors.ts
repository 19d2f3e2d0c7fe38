// Anthropic's error types and the HTTP status each stands for. A non-2xx answer goes through
// http.ts's statusError; this table is for errors that arrive as an `event: error` frame inside
// a 200 stream, where only the type says what happened.
import { transportError } from '../http.js';
import { type RequestError, upstreamError, isRetryableStatus } from '../../core/errors.js';

const ERROR_STATUS: Record<string, number> = {
  invalid_request_error: 400,
  authentication_error: 401,
  billing_error: 402,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  api_error: 500,
  timeout_error: 504,
  overloaded_error: 529,
};

/** `{type:"error", error:{type, message}}` from a stream frame as an UpstreamError. */
export function streamErrorFrame(providerId: string, data: string): RequestError {
  let type = 'api_error';
  let message = data.slice(0, 500) || 'stream error';
  try {
    const j = JSON.parse(data);
    if (typeof j?.error?.type === 'string') type = j.error.type;
    if (typeof j?.error?.message === 'string' && j.error.message) message = j.error.message;
  } catch {
    // not JSON: keep the text
  }
  const status = ERROR_STATUS[type] ?? 500;
  return upstreamError(`${type}: ${message}`, status, isRetryableStatus(status), {
    providerId,
    upstreamBody: data.slice(0, 2000),
  });
}

/**
 * A call whose signal fired, whatever error undici surfaced for it (a custom abort reason is
 * rethrown as-is and would otherwise look like an unreachable upstream). A deadline
 * (`AbortSignal.timeout`) is the upstream being too slow: a retryable timeout. Anything else is
 * the caller going away: not retryable.
 */
export function abortedError(providerId: string, signal: AbortSignal): RequestError {
  const reason = signal.reason as Error | undefined;
  return transportError(
    providerId,
    reason?.name === 'TimeoutError' ? reason : new DOMException('aborted', 'AbortError'),
  );
}
