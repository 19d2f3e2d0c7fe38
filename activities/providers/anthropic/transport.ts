// How this adapter talks HTTP to the Messages API: Anthropic's headers, its endpoint layout, and
// what to do with a streamed body when reading stops (keep the connection, or drop it). Shared by
// the translated calls (index.ts) and the pass-through (native.ts).
import { send, statusError, transportError, type UpstreamResponse } from '../http.js';
import type { ProviderTarget } from '../types.js';
import { abortedError } from './errors.js';
import type { RequestError } from '../../core/errors.js';

const ANTHROPIC_VERSION = '2023-06-01';

/** POST a JSON body; any non-2xx answer becomes an UpstreamError carrying Anthropic's message. */
export async function post(
  target: ProviderTarget,
  path: string,
  body: unknown,
  signal: AbortSignal,
): Promise<UpstreamResponse> {
  const res = await send(target.providerId, endpoint(target.baseUrl, path), {
    headers: {
      'content-type': 'application/json',
      'anthropic-version': ANTHROPIC_VERSION,
      ...(target.apiKey ? { 'x-api-key': target.apiKey } : {}),
      // catalog/route headers (e.g. anthropic-beta) last: they may also pin another version
      ...target.headers,
    },
    body: JSON.stringify(body),
    signal,
  }).catch((err) => {
    throw abortAware(target, signal, err);
  });
  if (res.status < 200 || res.status >= 300) throw await statusError(target.providerId, res);
  return res;
}

/** The catalog's base is the bare host; one that already ends in /v1 is accepted too. */
function endpoint(baseUrl: string, path: string): string {
  const base = baseUrl.replace(/\/+$/, '');
  return base.endsWith('/v1') ? base + path.slice(3) : base + path;
}

/** An abort is never a provider failure (see abortedError). */
export function abortAware(target: ProviderTarget, signal: AbortSignal, err: unknown): RequestError {
  return signal.aborted ? abortedError(target.providerId, signal) : transportError(target.providerId, err);
}
