// Per-key daily caps (requests per UTC day, USD per UTC day). The request counter is bumped
// by one conditional upsert, so concurrent requests from any number of API processes cannot
// pass the cap; USD spent is added by the ledger when a hold is settled (ledger.settle).
import { db } from '../db.js';
import type { Caller } from '../core/caller.js';

export type DailyLimitVerdict =
  | { ok: true }
  | { ok: false; code: 'daily_rpd_limit_exceeded' | 'daily_usd_limit_exceeded'; retryAfterSeconds: number };

function secondsUntilUtcMidnight(now = new Date()): number {
  const next = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1);
  return Math.max(1, Math.ceil((next - now.getTime()) / 1000));
}

/** Whether the key has a daily cap, i.e. whether `admitRequest` has anything to count (most keys have none). */
export function hasDailyCap(caller: Caller): boolean {
  return caller.dailyRequestLimit != null || caller.dailyUsdLimit != null;
}

/** Count this request against the key's caps, or say which cap it would break (and count nothing). */
export async function admitRequest(caller: Caller): Promise<DailyLimitVerdict> {
  if (!hasDailyCap(caller)) return { ok: true };
  const rpd = caller.dailyRequestLimit;
  const usd = caller.dailyUsdLimit;
  const { rows } = await db().pool.query(
    `INSERT INTO key_daily_usage AS u (key_id, day, requests, usd_spent)
     SELECT $1, (now() AT TIME ZONE 'UTC')::date, 1, 0
     WHERE ($2::int IS NULL OR $2::int > 0) AND ($3::numeric IS NULL OR $3::numeric > 0)
     ON CONFLICT (key_id, day) DO UPDATE SET requests = u.requests + 1
       WHERE ($2::int IS NULL OR u.requests < $2::int) AND ($3::numeric IS NULL OR u.usd_spent < $3::numeric)
     RETURNING requests`,
    [caller.keyId, rpd, usd?.toString() ?? null],
  );
  if (rows.length > 0) return { ok: true };
  // Refused: find out which cap (rare path, one more read).
  const { rows: u } = await db().pool.query(
    `SELECT requests, usd_spent FROM key_daily_usage WHERE key_id = $1 AND day = (now() AT TIME ZONE 'UTC')::date`,
    [caller.keyId],
  );
  const requests = u[0] ? Number(u[0].requests) : 0;
  const code = rpd != null && requests >= rpd ? 'daily_rpd_limit_exceeded' : 'daily_usd_limit_exceeded';
  return { ok: false, code, retryAfterSeconds: secondsUntilUtcMidnight() };
}
