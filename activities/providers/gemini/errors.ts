// Google's error envelope as UpstreamError. The status carries the retryability (429
// RESOURCE_EXHAUSTED and 5xx UNAVAILABLE/INTERNAL retry; 400 INVALID_ARGUMENT, 403 and 404 do not)
// through http.ts's statusError. One Gemini quirk is evened out here: a wrong API key is a 400
// INVALID_ARGUMENT (reason API_KEY_INVALID) where every other vendor answers 401, and 400 would
// read as "the caller's request was bad".
import { statusError, type UpstreamResponse } from '../http.js';
import type { GeminiErrorBody } from './wire.js';
import { type RequestError, upstreamError, isRetryableStatus } from '../../core/errors.js';

export async function geminiStatusError(providerId: string, res: UpstreamResponse): Promise<RequestError> {
  const err = await statusError(providerId, res);
  if (err.status === 400 && err.opts.upstreamBody?.includes('API_KEY_INVALID')) {
    return upstreamError(`its API key was rejected: ${err.opts.detail}`, 401, false, {
      ...err.opts,
      code: 'upstream_auth',
    });
  }
  return err;
}

/** An `{error:{...}}` object sent as a stream frame, after the 200 was already given. */
export function streamFrameError(providerId: string, body: GeminiErrorBody, raw: string): RequestError {
  const status = Number(body.error.code) || 500;
  const label = body.error.status ? `${status} ${body.error.status}` : String(status);
  return upstreamError(
    `failed mid-stream (${label}): ${body.error.message ?? 'no message'}`,
    status,
    isRetryableStatus(status),
    {
      providerId,
      upstreamBody: raw.slice(0, 2000),
    },
  );
}
