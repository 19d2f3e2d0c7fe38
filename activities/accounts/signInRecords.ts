// What sign-in leaves behind and nothing reads again: sessions ended (expired or revoked) a day
// ago, e-mail codes issued a day ago, rate-limit windows over a day old. Deleted by the hourly
// Schedule `switchyard-sign-in-sweeper` (workflows/signInSweeper.ts), a batch at a time.
import { db } from '../db.js';

/** Activity: delete up to `limit` stale rows of each kind; returns how many in all. */
export async function deleteStaleSignInRecords(limit: number): Promise<number> {
  const pool = db().pool;
  const counts = await Promise.all([
    pool.query(
      `DELETE FROM sessions WHERE id IN (SELECT id FROM sessions
         WHERE expires_at < now() - interval '1 day' OR revoked_at < now() - interval '1 day' LIMIT $1)`,
      [limit],
    ),
    pool.query(
      `DELETE FROM email_codes WHERE id IN (SELECT id FROM email_codes
         WHERE created_at < now() - interval '1 day' LIMIT $1)`,
      [limit],
    ),
    pool.query(
      `DELETE FROM auth_throttle WHERE (scope, subject, window_start) IN (SELECT scope, subject, window_start
         FROM auth_throttle WHERE window_start < now() - interval '1 day' LIMIT $1)`,
      [limit],
    ),
  ]);
  // a full batch of any kind means there may be more: report the largest so the sweep goes on
  return Math.max(...counts.map((c) => c.rowCount ?? 0));
}
