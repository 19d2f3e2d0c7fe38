// API keys are resolved from a per-process cache (keys.ts). A change made in one process (a key
// revoked through the CLI, or by another API process) reaches the others through PostgreSQL's
// LISTEN/NOTIFY: the process that changes keys announces their hashes on one channel, and every
// API process listening forgets them at once. A listener that loses its connection forgets every
// cached key when it is back (it may have missed announcements); until then, and where nobody
// listens (the embedded database serves one connection), the cache's TTL
// (SWITCHYARD_KEY_CACHE_TTL_MS) bounds how long another process trusts a changed key.
// The same connection carries other caches' announcements (`also`): an account's subscription
// changing (activities/subscriptions/coverage.ts) is announced and forgotten the same way.
import pg from 'pg';
import { db } from '../db.js';

const CHANNEL = 'switchyard_key_changes';
/** Another cache's channel and what to forget: the announced items, or everything (null). */
export type ChangeHandler = (items: string[] | null) => void;
/** NOTIFY payloads are limited to 8000 bytes: 100 hashes of 64 characters (and commas) fit. */
const HASHES_PER_NOTICE = 100;
const RECONNECT_MS = 1000;

/**
 * Tell every listening process that these keys (by hash) changed. The change itself is already
 * stored: if the announcement fails, other processes still see it when their cache entry expires.
 */
export function announceKeyChanges(hashes: string[]): Promise<void> {
  return announceChanges(CHANNEL, hashes);
}

/** Announce changed items (short ids, no commas) on a channel; failures are logged, not thrown. */
export async function announceChanges(channel: string, items: string[]): Promise<void> {
  try {
    for (let i = 0; i < items.length; i += HASHES_PER_NOTICE) {
      await db().pool.query('SELECT pg_notify($1, $2)', [channel, items.slice(i, i + HASHES_PER_NOTICE).join(',')]);
    }
  } catch (err) {
    console.error(
      `[changes] could not announce a change on ${channel} (other processes see it within their cache's TTL): ${(err as Error).message}`,
    );
  }
}

export interface KeyChangeListener {
  stop(): Promise<void>;
}

/**
 * Listen on a connection of its own (not the pool's: LISTEN belongs to one session) and call
 * `forget` with the hashes of changed keys, or with null when every cached key must go.
 */
export function listenForKeyChanges(
  url: string,
  forget: ChangeHandler,
  log: (m: string) => void = console.error,
  also: Record<string, ChangeHandler> = {},
): KeyChangeListener {
  const handlers: Record<string, ChangeHandler> = { ...also, [CHANNEL]: forget };
  let client: pg.Client | undefined;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;

  const connect = async () => {
    const c = new pg.Client({ connectionString: url });
    client = c;
    c.on('notification', (n) => {
      if (n.payload) handlers[n.channel]?.(n.payload.split(','));
    });
    c.on('error', (err) => {
      log(`[keys] key-change listener lost its connection: ${err.message}; reconnecting`);
      retry(c);
    });
    c.on('end', () => retry(c));
    try {
      await c.connect();
      for (const channel of Object.keys(handlers)) await c.query(`LISTEN ${channel}`);
      // announcements made before now (say, while reconnecting) were missed: trust nothing cached
      for (const handler of Object.values(handlers)) handler(null);
    } catch (err) {
      log(`[keys] key-change listener could not connect: ${(err as Error).message}; retrying`);
      retry(c);
    }
  };

  const retry = (c: pg.Client) => {
    if (stopped || client !== c || timer) return;
    client = undefined;
    c.removeAllListeners('end');
    c.end().catch(() => undefined);
    timer = setTimeout(() => {
      timer = undefined;
      if (!stopped) void connect();
    }, RECONNECT_MS);
    timer.unref();
  };

  void connect();
  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      const c = client;
      client = undefined;
      if (c) {
        c.removeAllListeners('end');
        await c.end().catch(() => undefined);
      }
    },
  };
}
