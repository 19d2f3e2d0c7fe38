// How this adapter talks HTTP to the Messages API: Anthropic's headers, its endpoint layout, and
// what to do with a streamed body when reading stops (keep the connection, or drop it). Shared by
// the translated calls (index.ts) and the pass-through (native.ts).
import { send, statusError, transportError, type UpstreamResponse } from '../http.js';
import type { ProviderTarget } from '../types.js';
import { abortedError } from './errors.js';
import type { RequestError } from '../../core/errors.js';

const ANTHROPIC_VERSION = '2023-06-01';
/** The beta that lets a cache breakpoint live an hour (`cache_control.ttl: '1h'`; README, Prompt caching). */
const EXTENDED_CACHE_TTL_BETA = 'extended-cache-ttl-2025-04-11';
/** A 1-hour breakpoint in the JSON text (text inside strings has its quotes escaped, so cannot match). */
const ONE_HOUR_BREAKPOINT = '"ttl":"1h"';

/**
 * The route's and caller's headers, with the extended-cache beta added to `anthropic-beta` when the
 * body holds a 1-hour breakpoint (kept once, beside any betas already asked for).
 */
function headersFor(target: ProviderTarget, json: string): Record<string, string> {
  const headers = { ...target.headers };
  if (!json.includes(ONE_HOUR_BREAKPOINT)) return headers;
  const name = Object.keys(headers).find((k) => k.toLowerCase() === 'anthropic-beta') ?? 'anthropic-beta';
  const betas = (headers[name] ?? '')
    .split(',')
    .map((b) => b.trim())
    .filter(Boolean);
  if (!betas.includes(EXTENDED_CACHE_TTL_BETA)) betas.push(EXTENDED_CACHE_TTL_BETA);
  headers[name] = betas.join(',');
  return headers;
}

/** POST a JSON body; any non-2xx answer becomes an UpstreamError carrying Anthropic's message. */
export async function post(
  target: ProviderTarget,
  path: string,
  body: unknown,
  signal: AbortSignal,
): Promise<UpstreamResponse> {
  const json = JSON.stringify(body);
  const res = await send(target.providerId, endpoint(target.baseUrl, path), {
    headers: {
      'content-type': 'application/json',
      'anthropic-version': ANTHROPIC_VERSION,
      ...(target.apiKey ? { 'x-api-key': target.apiKey } : {}),
      // catalog/route headers (e.g. anthropic-beta) last: they may also pin another version
      ...headersFor(target, json),
    },
    body: json,
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
