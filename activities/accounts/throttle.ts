// Sign-in attempts per e-mail address and per client address, so passwords and codes cannot be
// guessed at speed. Unlike the per-process counters of the API-key path (api/authFailures.ts),
// these are shared by every API process: one conditional upsert per attempt on a fixed window's
// row, which refuses once the window holds `limit` hits, so concurrent attempts from any number of
// processes cannot pass it. Sign-in is not the hot path; exactness is worth the round trip.
// Old windows are deleted by the sign-in sweeper (signInRecords.ts).
// A fixed window lets a burst straddling two windows reach twice the limit: the limits are set
// with that in mind. Attempts are counted before the secret is checked (a success counts too),
// so a flood of parallel guesses is cut at the limit, not after the failures are known.
// Crypto deposit creation (api/routes/deposits.ts) is counted the same way, in its own scope.
import { db } from '../db.js';

export type AttemptVerdict = { ok: true } | { ok: false; retryAfterSeconds: number };

/** Count one attempt of `scope` by `subject`; refuse (counting nothing) past `limit` per window. */
export async function admitAttempt(
  scope: string,
  subject: string,
  limit: number,
  windowSeconds: number,
): Promise<AttemptVerdict> {
  if (limit <= 0) return { ok: true };
  const now = Date.now();
  const windowMs = windowSeconds * 1000;
  const windowStart = Math.floor(now / windowMs) * windowMs;
  const { rows } = await db().pool.query(
    `INSERT INTO auth_throttle AS t (scope, subject, window_start, hits) VALUES ($1, $2, $3, 1)
     ON CONFLICT (scope, subject, window_start) DO UPDATE SET hits = t.hits + 1 WHERE t.hits < $4
     RETURNING hits`,
    [scope, subject, new Date(windowStart), limit],
  );
  if (rows.length > 0) return { ok: true };
  return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil((windowStart + windowMs - now) / 1000)) };
}
