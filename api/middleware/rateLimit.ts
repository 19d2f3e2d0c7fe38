// A per-key request rate (e.g. the spec's "20 requests per minute" on video recover and extend),
// counted in this process over a sliding minute. Several API processes each allow the rate: a
// deliberate trade — these limits protect the provider bridges from polling storms, not money
// (money is guarded by the ledger's reservations), so they need no shared store on the hot path.
// Over the limit: 429 `rate_limit_exceeded` with Retry-After.
import type { Middleware } from 'koa';
import { RequestError } from '../../activities/core/errors.js';
import type { AppState } from '../state.js';

export function perKeyRate(bucket: string, perMinute: number): Middleware<AppState> {
  const hits = new Map<string, number[]>();
  return async (ctx, next) => {
    const caller = ctx.state.caller;
    const key = caller?.keyId ?? (caller?.userId != null ? `user:${caller.userId}` : ctx.ip);
    const now = Date.now();
    const recent = (hits.get(key) ?? []).filter((t) => t > now - 60_000);
    if (recent.length >= perMinute) {
      const retry = Math.max(1, Math.ceil((recent[0] + 60_000 - now) / 1000));
      throw new RequestError(
        429,
        'rate_limit_exceeded',
        `Too many ${bucket} requests: at most ${perMinute} per minute per API key. Retry in ${retry} s.`,
        {
          type: 'rate_limit_error',
          headers: { 'Retry-After': String(retry) },
        },
      );
    }
    recent.push(now);
    hits.set(key, recent);
    if (hits.size > 10_000) for (const [k, v] of hits) if (v[v.length - 1] <= now - 60_000) hits.delete(k);
    await next();
  };
}
