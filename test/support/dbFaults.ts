// Faults made in the database, where the code under test cannot tell them from real ones: a
// write that waits (as behind another session's lock) until the test lets it go, so a test can
// kill a process at an exact step; and a write that fails once (as in a database outage). Both
// are triggers on the table, matching rows by a SQL condition over OLD and NEW; each is removed
// when the test is done with it.
import pg from 'pg';
import { config } from '../../activities/config.js';

let made = 0;

function newName(): { name: string; key: number } {
  made++;
  // an advisory lock key of its own (below 2^31: pg_locks shows it whole in `objid`)
  return { name: `test_fault_${process.pid}_${made}`, key: ((process.pid % 100_000) * 1000 + made) % 2 ** 31 };
}

async function connect(): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: config.databaseUrl });
  await client.connect();
  return client;
}

export interface HeldUpdates {
  /** the database sessions (pids) waiting to make a held update now */
  waiting(): Promise<number[]>;
  /** end the waiting sessions (their statement rolls back), as when the process behind them dies */
  dropWaiting(): Promise<void>;
  /** let held and later updates through, and remove the gate */
  release(): Promise<void>;
}

/**
 * Every UPDATE of a `table` row for which `when` holds waits until `release()` (or until its
 * session is dropped). The update has not happened while it waits: what the statement would
 * write is not visible to anyone, and dropping the session rolls it back.
 */
export async function holdUpdates(table: string, when: string): Promise<HeldUpdates> {
  const { name, key } = newName();
  const client = await connect();
  await client.query('SELECT pg_advisory_lock($1)', [key]);
  await client.query(`CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF ${when} THEN
        PERFORM pg_advisory_lock_shared(${key});
        PERFORM pg_advisory_unlock_shared(${key});
      END IF;
      RETURN NEW;
    END $$`);
  await client.query(`CREATE TRIGGER ${name} BEFORE UPDATE ON ${table} FOR EACH ROW EXECUTE FUNCTION ${name}()`);
  const waiting = async () =>
    (
      await client.query(
        `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND classid = 0 AND objid = $1 AND objsubid = 1`,
        [key],
      )
    ).rows.map((r) => r.pid as number);
  return held(client, waiting, async () => {
    // unlock first: dropping the trigger waits for the updates inside it to finish
    await client.query('SELECT pg_advisory_unlock($1)', [key]);
    await client.query(`DROP TRIGGER ${name} ON ${table}`);
    await client.query(`DROP FUNCTION ${name}()`);
  });
}

/** What waits behind `client`'s lock: the sessions `waiting()` finds, ended or let go (once). */
function held(client: pg.Client, waiting: () => Promise<number[]>, unlock: () => Promise<void>): HeldUpdates {
  let released = false;
  return {
    waiting,
    async dropWaiting() {
      for (const pid of await waiting()) await client.query('SELECT pg_terminate_backend($1)', [pid]);
    },
    async release() {
      if (released) return;
      released = true;
      await unlock();
      await client.end();
    },
  };
}

/**
 * The first UPDATE of a `table` row for which `when` holds fails with `message`; later ones go
 * through. Returns what removes the fault.
 */
export async function failUpdateOnce(table: string, when: string, message: string): Promise<() => Promise<void>> {
  const { name } = newName();
  const client = await connect();
  // a sequence counts the failures: unlike a row, it is not rolled back with the failed statement
  await client.query(`CREATE SEQUENCE ${name}`);
  await client.query(`CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF ${when} THEN
        IF nextval('${name}') = 1 THEN
          RAISE EXCEPTION '%', ${pg.escapeLiteral(message)};
        END IF;
      END IF;
      RETURN NEW;
    END $$`);
  await client.query(`CREATE TRIGGER ${name} BEFORE UPDATE ON ${table} FOR EACH ROW EXECUTE FUNCTION ${name}()`);
  return async () => {
    await client.query(`DROP TRIGGER ${name} ON ${table}`);
    await client.query(`DROP FUNCTION ${name}()`);
    await client.query(`DROP SEQUENCE ${name}`);
    await client.end();
  };
}

/**
 * Every statement that touches `table` (a read too) waits until `release()`, behind a lock held by
 * a session of the test's own; `dropWaiting()` ends the sessions waiting now, as when an operator
 * or a failover kills the pool's connections under the queries in flight.
 */
export async function holdTable(table: string): Promise<HeldUpdates> {
  const client = await connect();
  await client.query('BEGIN');
  await client.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
  const waiting = async () =>
    (
      await client.query(
        `SELECT pid FROM pg_locks WHERE NOT granted AND locktype = 'relation' AND relation = $1::regclass`,
        [table],
      )
    ).rows.map((r) => r.pid as number);
  return held(client, waiting, async () => {
    await client.query('ROLLBACK');
  });
}
