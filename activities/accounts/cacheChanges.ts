// API keys (keys.ts) and whom a user bills to (ledger/teamBudget.ts) are read from per-process
// caches. A change made in one process (a key revoked through the CLI, a team setting changed
// through another API process or the worker) reaches the others through PostgreSQL's
// LISTEN/NOTIFY, one channel per cache: the process that changes keys announces their hashes; the
// database itself announces team billing changes (triggers on teams and team_members). Every API
// process listens on one connection and forgets what changed at once. A listener that loses its
// connection forgets everything cached when it is back (it may have missed announcements); until
// then, and where nobody listens (the embedded database serves one connection), the caches' TTL
// (SWITCHYARD_KEY_CACHE_TTL_MS) bounds how long another process trusts a changed entry.
import pg from 'pg';
import { db, retryOnLostConnection } from '../db.js';

/** Payload: hashes of changed keys, comma-separated. */
export const KEY_CHANGES = 'switchyard_key_changes';
/** Payload (from the triggers of migration team_billing_changes): "u<user id>" or "t<team id>". */
export const TEAM_BILLING_CHANGES = 'switchyard_team_billing_changes';
/** NOTIFY payloads are limited to 8000 bytes: 100 hashes of 64 characters (and commas) fit. */
const HASHES_PER_NOTICE = 100;
const RECONNECT_MS = 1000;

/**
 * Tell every listening process that these keys (by hash) changed. The change itself is already
 * stored: if the announcement fails, other processes still see it when their cache entry expires.
 */
export async function announceKeyChanges(hashes: string[]): Promise<void> {
  try {
    for (let i = 0; i < hashes.length; i += HASHES_PER_NOTICE) {
      const notice = hashes.slice(i, i + HASHES_PER_NOTICE).join(',');
      // hearing a change twice costs a listener nothing; missing it leaves a revoked key cached
      await retryOnLostConnection(() => db().pool.query('SELECT pg_notify($1, $2)', [KEY_CHANGES, notice]));
    }
  } catch (err) {
    console.error(
      `[keys] could not announce a key change (other processes see it within the key cache TTL): ${(err as Error).message}`,
    );
  }
}

export interface ChangeListener {
  stop(): Promise<void>;
}

/**
 * Listen on a connection of its own (not the pool's: LISTEN belongs to one session) to each
 * channel of `forget` (channel → the cache's forget function) and call its function with what
 * changed (the payload, split at commas), or with null when everything cached must go.
 */
export function listenForChanges(
  url: string,
  forget: Record<string, (changes: string[] | null) => void>,
  log: (m: string) => void = console.error,
): ChangeListener {
  const forgetAll = () => {
    for (const f of Object.values(forget)) f(null);
  };
  let client: pg.Client | undefined;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;

  const connect = async () => {
    const c = new pg.Client({ connectionString: url });
    client = c;
    c.on('notification', (n) => {
      if (n.payload && Object.hasOwn(forget, n.channel)) forget[n.channel](n.payload.split(','));
    });
    c.on('error', (err) => {
      log(`[caches] change listener lost its connection: ${err.message}; reconnecting`);
      retry(c);
    });
    c.on('end', () => retry(c));
    try {
      await c.connect();
      // one statement, so the session's query reads `LISTEN switchyard_key_changes; LISTEN ...`
      await c.query(
        Object.keys(forget)
          .map((channel) => `LISTEN ${channel}`)
          .join('; '),
      );
      // announcements made before now (say, while reconnecting) were missed: trust nothing cached
      forgetAll();
    } catch (err) {
      log(`[caches] change listener could not connect: ${(err as Error).message}; retrying`);
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
