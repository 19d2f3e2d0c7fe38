// Applies prisma/migrations with plain `pg`, keeping `_prisma_migrations` exactly as Prisma's schema
// engine keeps it, so `prisma migrate deploy` / `migrate status` (online, native engine) agree with
// what ran here. Why not the engine itself: the native engine cannot be downloaded on offline
// machines, and no @prisma/schema-engine-wasm build matches our engines hash; this file is small,
// works through a single connection (embedded PGlite) and wraps each migration in a transaction.
// The command line is prisma/migrate.ts; a new migration is written by prisma/newMigration.ts.
import { createHash, randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

export const MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/', import.meta.url));
/** The key Prisma's engine locks for migrations, so we also exclude a concurrent `prisma migrate`. */
const PRISMA_LOCK_KEY = 72707369;

export interface ApplyOptions {
  log?: (m: string) => void;
  /** 1 for servers with a single connection slot (embedded PGlite): a refused connection is retried. */
  maxConnections?: number;
  migrationsDir?: string;
  /** How long to wait for another migrator (lock or the single connection slot). Default 120 s. */
  lockTimeoutMs?: number;
}

export class MigrationError extends Error {
  constructor(
    message: string,
    readonly code:
      | 'BAD_MIGRATIONS_DIR'
      | 'FAILED_MIGRATION'
      | 'CHECKSUM_MISMATCH'
      | 'SCHEMA_NOT_EMPTY'
      | 'APPLY_FAILED'
      | 'LOCK_TIMEOUT',
  ) {
    super(message);
    this.name = 'MigrationError';
  }
}

export interface LocalMigration {
  name: string;
  script: string;
  checksum: string;
}

export interface MigrationRow {
  id: string;
  checksum: string;
  migration_name: string;
  finished_at: Date | null;
  rolled_back_at: Date | null;
  started_at: Date;
  logs: string | null;
}

/** Mirrors the engine's `script_matches_checksum`: git may have rewritten line endings. */
function checksumMatches(script: string, stored: string): boolean {
  const variants = [script, script.replaceAll('\r\n', '\n'), script.replaceAll('\n', '\r\n')];
  return variants.some((v) => {
    const digest = createHash('sha256').update(v).digest();
    // Old engines stored checksums without zero padding (prisma-engines#1887).
    const rendered = stored.length === 64 ? digest.toString('hex') : [...digest].map((b) => b.toString(16)).join('');
    return rendered === stored;
  });
}

export async function readMigrations(dir = MIGRATIONS_DIR): Promise<LocalMigration[]> {
  if (!existsSync(dir)) return [];
  const lock = await readFile(join(dir, 'migration_lock.toml'), 'utf8').catch(() => null);
  const provider = lock
    ?.split('\n')
    .find((l) => l.startsWith('provider'))
    ?.replace(/^provider\s*=\s*/, '')
    .replace(/"/g, '')
    .trim();
  if (lock !== null && provider !== 'postgresql') {
    throw new MigrationError(
      `${join(dir, 'migration_lock.toml')} says provider "${provider}", expected "postgresql"`,
      'BAD_MIGRATIONS_DIR',
    );
  }
  const dirs = (await readdir(dir, { withFileTypes: true }))
    .filter((d) => d.isDirectory())
    .map((d) => d.name)
    .sort();
  return Promise.all(
    dirs.map(async (name) => {
      const bytes = await readFile(join(dir, name, 'migration.sql')).catch(() => {
        throw new MigrationError(`migration ${name} has no migration.sql`, 'BAD_MIGRATIONS_DIR');
      });
      return { name, script: bytes.toString('utf8'), checksum: createHash('sha256').update(bytes).digest('hex') };
    }),
  );
}

export async function applyMigrations(databaseUrl: string, opts: ApplyOptions = {}): Promise<{ applied: string[] }> {
  const log = opts.log ?? (() => {});
  const migrations = await readMigrations(opts.migrationsDir ?? MIGRATIONS_DIR);
  const deadline = Date.now() + (opts.lockTimeoutMs ?? 120_000);
  // Everything goes through this one connection: the embedded server has no second one, and the
  // session-level advisory lock belongs to it.
  const client = await connect(databaseUrl, opts.maxConnections === 1 ? deadline : 0, log);
  try {
    await lock(client, deadline, log);
    try {
      return { applied: await applyLocked(client, migrations, log) };
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [PRISMA_LOCK_KEY]).catch(() => {});
    }
  } finally {
    await client.end().catch(() => {});
  }
}

async function connect(databaseUrl: string, retryUntil: number, log: (m: string) => void): Promise<pg.Client> {
  const schema = new URL(databaseUrl).searchParams.get('schema');
  for (let waited = false; ; waited = true) {
    const client = new pg.Client({ connectionString: databaseUrl });
    client.on('error', () => {}); // surfaced by the failing query instead
    try {
      await client.connect();
      if (schema) {
        // Prisma URLs name the schema in `?schema=`; its engine creates the schema if missing.
        const id = `"${schema.replaceAll('"', '""')}"`;
        await client.query(`CREATE SCHEMA IF NOT EXISTS ${id}; SET search_path TO ${id}`);
      }
      return client;
    } catch (e) {
      await client.end().catch(() => {});
      const err = e as Error & { code?: string };
      const busy = err.code === '53300' || err.code === 'ECONNRESET' || /terminated unexpectedly/i.test(err.message);
      if (!busy || Date.now() > retryUntil) throw e;
      if (!waited) log('migrate: the database connection slot is busy; waiting for it');
      await sleep(250);
    }
  }
}

async function lock(client: pg.Client, deadline: number, log: (m: string) => void): Promise<void> {
  for (let waited = false; ; waited = true) {
    const { rows } = await client.query('SELECT pg_try_advisory_lock($1) AS ok', [PRISMA_LOCK_KEY]);
    if (rows[0].ok) return;
    if (Date.now() > deadline) {
      throw new MigrationError(
        `another process holds the migration lock (pg advisory lock ${PRISMA_LOCK_KEY})`,
        'LOCK_TIMEOUT',
      );
    }
    if (!waited) log('migrate: another process is migrating this database; waiting');
    await sleep(250);
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function applyLocked(
  client: pg.Client,
  migrations: LocalMigration[],
  log: (m: string) => void,
): Promise<string[]> {
  await ensureMigrationsTable(client);
  const rows = (
    await client.query<MigrationRow>(
      'SELECT id, checksum, migration_name, finished_at, rolled_back_at, started_at, logs FROM _prisma_migrations ORDER BY started_at',
    )
  ).rows;

  const failed = rows.filter((r) => r.finished_at === null && r.rolled_back_at === null);
  if (failed.length > 0) {
    const f = failed[0];
    throw new MigrationError(
      `migration ${f.migration_name} failed (started ${f.started_at.toISOString()}); no further migrations are applied until it is resolved.\n` +
        `${f.logs ? `${f.logs}\n` : ''}` +
        `Fix the database by hand if needed, then mark it: \`tsx prisma/migrate.ts resolve --rolled-back ${f.migration_name}\` ` +
        `(or \`npx prisma migrate resolve --rolled-back ${f.migration_name}\`) and deploy again. See https://pris.ly/d/migrate-resolve`,
      'FAILED_MIGRATION',
    );
  }
  const live = rows.filter((r) => r.rolled_back_at === null);
  const local = new Map(migrations.map((m) => [m.name, m]));
  const edited = live.filter(
    (r) => local.has(r.migration_name) && !checksumMatches(local.get(r.migration_name)!.script, r.checksum),
  );
  if (edited.length > 0) {
    throw new MigrationError(
      `already-applied migration(s) were modified since they were applied: ${edited.map((r) => r.migration_name).join(', ')}. ` +
        'Restore the original migration.sql and put the change in a new migration.',
      'CHECKSUM_MISMATCH',
    );
  }
  const missing = live.filter((r) => !local.has(r.migration_name)).map((r) => r.migration_name);
  if (missing.length > 0) log(`migrate: warning: applied to the database but not found locally: ${missing.join(', ')}`);

  const appliedNames = new Set(live.map((r) => r.migration_name));
  const applied: string[] = [];
  for (const m of migrations) {
    if (appliedNames.has(m.name)) continue;
    const started = Date.now();
    await applyOne(client, m);
    log(`migrate: applied ${m.name} (${Date.now() - started} ms)`);
    applied.push(m.name);
  }
  return applied;
}

const INSERT_STARTED =
  'INSERT INTO _prisma_migrations (id, checksum, started_at, migration_name) VALUES ($1, $2, now(), $3)';
const MARK_FINISHED =
  'UPDATE _prisma_migrations SET applied_steps_count = applied_steps_count + 1, finished_at = clock_timestamp() WHERE id = $1';

async function applyOne(client: pg.Client, m: LocalMigration): Promise<void> {
  const id = randomUUID();
  try {
    // The engine's record_migration_started / record_successful_step / record_migration_finished,
    // but inside the migration's transaction: a crash half-way leaves neither schema changes nor a
    // dangling "started" row that would block the next start.
    await client.query('BEGIN');
    await client.query(INSERT_STARTED, [id, m.checksum, m.name]);
    await client.query(m.script); // simple-query protocol: multi-statement, as the engine runs it
    await client.query(MARK_FINISHED, [id]);
    await client.query('COMMIT');
    return;
  } catch (e) {
    await client.query('ROLLBACK').catch(() => {});
    if ((e as { code?: string }).code !== '25001') return recordFailure(client, id, m, e, 'was rolled back');
  }
  // 25001: a statement such as CREATE INDEX CONCURRENTLY refuses to run in a transaction block.
  // Then run it exactly as the engine does: row first, script on its own, then mark it finished.
  await client.query(INSERT_STARTED, [id, m.checksum, m.name]);
  try {
    await client.query(m.script);
  } catch (e) {
    return recordFailure(client, id, m, e, 'ran outside a transaction: check what it left behind');
  }
  await client.query(MARK_FINISHED, [id]);
}

async function recordFailure(
  client: pg.Client,
  id: string,
  m: LocalMigration,
  e: unknown,
  what: string,
): Promise<never> {
  const err = e as Error & { code?: string; position?: string };
  const at = err.position ? ` (at character ${err.position})` : '';
  const logs = `Migration name: ${m.name}\n\nDatabase error code: ${err.code ?? 'none'}\n\nDatabase error:\n${err.message}${at}`;
  // Recorded as the engine records a failed migration (finished_at NULL, logs), so the next deploy
  // here or `prisma migrate status` online reports it.
  await client
    .query(
      `INSERT INTO _prisma_migrations (id, checksum, started_at, migration_name, logs) VALUES ($1, $2, now(), $3, $4)
       ON CONFLICT (id) DO UPDATE SET logs = EXCLUDED.logs`,
      [id, m.checksum, m.name, logs],
    )
    .catch(() => {});
  throw new MigrationError(`migration ${m.name} failed and ${what}:\n${logs}`, 'APPLY_FAILED');
}

async function ensureMigrationsTable(client: pg.Client): Promise<void> {
  const { rows } = await client.query<{ relname: string }>(
    `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE c.relkind = 'r' AND n.nspname = current_schema()`,
  );
  if (rows.some((r) => r.relname === '_prisma_migrations')) return;
  if (rows.length > 0) {
    throw new MigrationError(
      `the database schema is not empty (${rows.length} tables) but has no _prisma_migrations table; ` +
        'baseline it first: https://pris.ly/d/migrate-baseline',
      'SCHEMA_NOT_EMPTY',
    );
  }
  // Verbatim from the engine's postgres flavour (create_migrations_table).
  await client.query(`CREATE TABLE _prisma_migrations (
    id                      VARCHAR(36) PRIMARY KEY NOT NULL,
    checksum                VARCHAR(64) NOT NULL,
    finished_at             TIMESTAMPTZ,
    migration_name          VARCHAR(255) NOT NULL,
    logs                    TEXT,
    rolled_back_at          TIMESTAMPTZ,
    started_at              TIMESTAMPTZ NOT NULL DEFAULT now(),
    applied_steps_count     INTEGER NOT NULL DEFAULT 0
);
`);
}

/** Marks a failed migration rolled back, as `prisma migrate resolve --rolled-back` does. */
export async function markRolledBack(databaseUrl: string, name: string): Promise<void> {
  const client = await connect(databaseUrl, 0, () => {});
  try {
    const res = await client.query(
      'UPDATE _prisma_migrations SET rolled_back_at = now() WHERE migration_name = $1 AND finished_at IS NULL AND rolled_back_at IS NULL',
      [name],
    );
    if (res.rowCount === 0) throw new Error(`no failed migration named ${name}`);
  } finally {
    await client.end().catch(() => {});
  }
}

/** The rows of `_prisma_migrations`, oldest first (none while the table does not exist). */
export async function migrationRows(databaseUrl: string): Promise<MigrationRow[]> {
  const client = await connect(databaseUrl, 0, () => {});
  return client
    .query<MigrationRow>(
      'SELECT migration_name, finished_at, rolled_back_at FROM _prisma_migrations ORDER BY started_at',
    )
    .then(
      (r) => r.rows,
      () => [] as MigrationRow[],
    )
    .finally(() => client.end());
}
