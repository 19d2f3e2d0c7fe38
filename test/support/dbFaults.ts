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
