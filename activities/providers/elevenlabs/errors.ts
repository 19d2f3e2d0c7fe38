// ElevenLabs' request headers and its error bodies, shared by text to speech and music.
import type { UpstreamResponse } from '../http.js';
import type { ProviderTarget } from '../types.js';
import { type RequestError, isRetryableStatus, upstreamError } from '../../core/errors.js';

export function elevenlabsHeaders(target: ProviderTarget): Record<string, string> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'audio/mpeg',
    ...target.headers,
  };
  if (target.apiKey) headers['xi-api-key'] = target.apiKey;
  return headers;
}

/** ElevenLabs' error bodies are `{"detail":{"status":"invalid_api_key","message":"..."}}` (or `detail` as text, or FastAPI's list). */
export async function elevenlabsError(target: ProviderTarget, res: UpstreamResponse): Promise<RequestError> {
  const text = await res.body.text().catch(() => '');
  let message = text.slice(0, 500) || `HTTP ${res.status}`;
  try {
    const d = JSON.parse(text)?.detail;
    const m = typeof d === 'string' ? d : (d?.message ?? d?.[0]?.msg);
    if (typeof m === 'string' && m) message = m;
  } catch {
    // not JSON: keep the text
  }
  const retryAfter = Number(res.headers['retry-after']);
  return upstreamError(message, res.status, isRetryableStatus(res.status), {
    providerId: target.providerId,
    retryAfterSeconds: Number.isFinite(retryAfter) ? retryAfter : undefined,
    upstreamBody: text.slice(0, 2000),
  });
}
