// Waiting for something that happens in another process or later in this one (a workflow, an
// upstream seeing an abort, a cache eviction, a listener's LISTEN): the tests' one way to wait. A
// test sleeps for a fixed time only when the time itself is what it tests (a hold that must have
// expired, nothing arriving within a while, a race at chosen delays), and says so beside the sleep.
import { db } from '../../activities/db.js';

const show = (v: unknown) => JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? x.toString() : x));

/** `fn()` until `ok` holds for its value (returned); past `ms`, a failure naming `what` and the last value. */
export async function until<T>(
  fn: () => Promise<T>,
  ok: (v: T) => unknown,
  ms = 30_000,
  what = 'condition',
): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (ok(v)) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}: ${show(v)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Resolves as soon as `condition()` holds (checked every 10 ms); past `ms`, a failure naming `what`. */
export async function waitFor(condition: () => unknown, ms = 5_000, what = 'condition'): Promise<void> {
  const end = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Resolves once a session of this database has run `LISTEN <channel>` and is idle (its LISTEN done). */
export function untilListening(channel: string, ms = 5_000): Promise<void> {
  return waitFor(
    async () =>
      (
        await db().pool.query(
          `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND state = 'idle' AND query LIKE $1`,
          [`%LISTEN ${channel}%`],
        )
      ).rowCount! > 0,
    ms,
    `a listener on ${channel}`,
  );
}
