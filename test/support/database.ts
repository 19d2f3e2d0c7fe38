// Clean PostgreSQL databases for test runs, on the machine's server (TEST_DATABASE_ADMIN_URL, default
// postgres@127.0.0.1:5432), migrated with the project's own migrations and dropped at the end.
// SWITCHYARD_TEST_DATABASE_PREFIX names them (mutation testing uses its own prefix, to drop the
// databases of the test processes it kills). A run migrates one template database once and gives
// each parallel worker a copy of it (CREATE DATABASE ... TEMPLATE copies files: no migrations rerun).
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { applyMigrations } from '../../prisma/applyMigrations.js';

const ADMIN_URL = process.env.TEST_DATABASE_ADMIN_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const PREFIX = process.env.SWITCHYARD_TEST_DATABASE_PREFIX ?? 'switchyard_test';

export interface TestDatabase {
  name: string;
  url: string;
  drop(): Promise<void>;
}

function databaseUrl(name: string): string {
  const u = new URL(ADMIN_URL);
  u.pathname = `/${name}`;
  return u.toString();
}

async function admin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: ADMIN_URL });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

function handle(name: string): TestDatabase {
  return {
    name,
    url: databaseUrl(name),
    drop: () => admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined),
  };
}

/** A new, migrated database named `<prefix>_<tag>_<random>` (tag: the process id unless given). */
export async function createTestDatabase(tag = String(process.pid)): Promise<TestDatabase> {
  const database = handle(`${PREFIX}_${tag}_${randomBytes(4).toString('hex')}`);
  await admin((c) => c.query(`CREATE DATABASE ${database.name}`));
  await applyMigrations(database.url, { log: () => undefined });
  return database;
}

/** A copy of `template` (which nobody may be connected to), named like createTestDatabase's. */
export async function copyTestDatabase(template: string, tag: string): Promise<TestDatabase> {
  const database = handle(`${PREFIX}_${tag}_${randomBytes(4).toString('hex')}`);
  // Two copies of one template started at the same instant can see each other's connection to it
  // (55006, "source database is being accessed by other users"): try again shortly.
  for (let attempt = 1; ; attempt++) {
    try {
      await admin((c) => c.query(`CREATE DATABASE ${database.name} TEMPLATE ${template}`));
      return database;
    } catch (err) {
      if ((err as { code?: string }).code !== '55006' || attempt >= 20) throw err;
      await new Promise((r) => setTimeout(r, 100 * attempt));
    }
  }
}

/** Drops every database whose name starts with `<prefix>_<tag>_` (a run's copies, whatever became of its workers). */
export async function dropTestDatabases(tag: string): Promise<void> {
  await admin(async (c) => {
    const { rows } = await c.query<{ datname: string }>(
      `SELECT datname FROM pg_database WHERE starts_with(datname, $1) AND NOT datistemplate`,
      [`${PREFIX}_${tag}_`],
    );
    for (const { datname } of rows) await c.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`);
  });
}
