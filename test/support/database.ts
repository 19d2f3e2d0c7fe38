// A clean PostgreSQL database per test run, on the machine's server (TEST_DATABASE_ADMIN_URL,
// default postgres@127.0.0.1:5432), migrated with the project's own migrations and dropped
// at the end. SWITCHYARD_TEST_DATABASE_PREFIX names them (mutation testing uses its own prefix, to
// drop the databases of the test processes it kills).
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { applyMigrations } from '../../prisma/applyMigrations.js';

const ADMIN_URL = process.env.TEST_DATABASE_ADMIN_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const PREFIX = process.env.SWITCHYARD_TEST_DATABASE_PREFIX ?? 'switchyard_test';

function databaseUrl(name: string): string {
  const u = new URL(ADMIN_URL);
  u.pathname = `/${name}`;
  return u.toString();
}

export async function createTestDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `${PREFIX}_${process.pid}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = databaseUrl(name);
  await applyMigrations(url, { log: () => undefined });
  return {
    url,
    async drop() {
      const c = new pg.Client({ connectionString: ADMIN_URL });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}
