// Applies prisma/migrations with plain `pg`, keeping `_prisma_migrations` exactly as Prisma's schema
// engine keeps it, so `prisma migrate deploy` / `migrate status` (online, native engine) agree with
// what ran here. Why not the engine itself: the native engine cannot be downloaded on offline
// machines, and no @prisma/schema-engine-wasm build matches our engines hash; this file is small,
// works through a single connection (embedded PGlite) and wraps each migration in a transaction.
//
//   tsx prisma/migrate.ts deploy                    apply pending migrations to DATABASE_URL
//   tsx prisma/migrate.ts status                    list applied / pending migrations
//   tsx prisma/migrate.ts new <name> [--empty]      new migration: diff of migrations -> schema.prisma
//   tsx prisma/migrate.ts resolve --rolled-back <name>   mark a failed migration as rolled back
import { createHash, randomUUID } from 'node:crypto';
import { existsSync, realpathSync } from 'node:fs';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import pg from 'pg';

export const MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/', import.meta.url));
const SCHEMA_PATH = fileURLToPath(new URL('./schema.prisma', import.meta.url));
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

interface MigrationRow {
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

// ---- `new`: diff (existing migrations -> schema.prisma) with Prisma's own schema engine in WASM.

/** Loads @prisma/schema-engine-wasm (devDependency) without --experimental-wasm-modules. */
export async function loadSchemaEngineWasm(): Promise<any> {
  const { createRequire } = await import('node:module');
  const require = createRequire(import.meta.url);
  const gluePath = require.resolve('@prisma/schema-engine-wasm/schema_engine_bg');
  // Where the engine writes a Rust panic's message before it traps (the Prisma CLI sets this too).
  const g = globalThis as { PRISMA_WASM_PANIC_REGISTRY?: { message: string; set_message(m: string): void } };
  g.PRISMA_WASM_PANIC_REGISTRY ??= {
    message: '',
    set_message(m: string) {
      this.message = `RuntimeError: ${m}`;
    },
  };
  const glue = await import(pathToFileURL(gluePath).href);
  const instance = new WebAssembly.Instance(
    new WebAssembly.Module(await readFile(gluePath.replace(/\.js$/, '.wasm'))),
    {
      './schema_engine_bg.js': glue,
    },
  );
  glue.__wbg_set_wasm(instance.exports);
  (instance.exports as any).__wbindgen_start();
  return glue;
}

/**
 * A migration-aware Prisma adapter factory for the WASM engine. Its schema describer reads catalog
 * columns of Postgres type "char" (oid 18) and wants them as Character values; @prisma/adapter-pg
 * 7.10 rejects that type. The pg client marks such columns (text type, tagged name) and the
 * adapter wrapper turns them into Character columns again.
 */
export async function engineAdapterFactory(
  mainUrl: string,
  shadowUrl: string,
): Promise<{ factory: unknown; close(): Promise<void> }> {
  const { PrismaPg } = await import('@prisma/adapter-pg');
  const { bindMigrationAwareSqlAdapterFactory, ColumnTypeEnum } = await import('@prisma/driver-adapter-utils');
  const TAG = '\u0000char';
  const markFields = (res: any) => {
    for (const r of [res].flat()) {
      for (const f of r?.fields ?? [])
        if (f.dataTypeID === 18) Object.assign(f, { dataTypeID: 25, name: f.name + TAG });
    }
    return res;
  };
  class CharMarkingClient extends pg.Client {
    override query(...args: any[]): any {
      const cb = args[args.length - 1];
      if (typeof cb === 'function')
        args[args.length - 1] = (err: unknown, res: unknown) => cb(err, res && markFields(res));
      const ret = (super.query as (...a: unknown[]) => any)(...args);
      return ret && typeof ret.then === 'function' ? ret.then(markFields) : ret;
    }
  }
  const unmark = (rs: { columnNames: string[]; columnTypes: number[] }) => {
    rs.columnNames.forEach((n, i) => {
      if (n.endsWith(TAG)) {
        rs.columnNames[i] = n.slice(0, -TAG.length);
        rs.columnTypes[i] = ColumnTypeEnum.Character;
      }
    });
    return rs;
  };
  const wrap = <T extends object>(q: T): T =>
    new Proxy(q, {
      get(target, prop) {
        const v = Reflect.get(target, prop, target);
        if (typeof v !== 'function') return v;
        if (prop === 'queryRaw') return async (...a: unknown[]) => unmark(await v.apply(target, a));
        if (prop === 'startTransaction') return async (...a: unknown[]) => wrap(await v.apply(target, a));
        return v.bind(target);
      },
    });
  const pools = [mainUrl, shadowUrl].map((url) => {
    const pool = new pg.Pool({ connectionString: url, Client: CharMarkingClient, max: 1 });
    pool.on('error', () => {}); // an idle connection dropped: the next query reports it
    return pool;
  });
  const [main, shadow] = pools.map((pool) => new PrismaPg(pool));
  return {
    factory: bindMigrationAwareSqlAdapterFactory({
      provider: 'postgres',
      adapterName: '@prisma/adapter-pg',
      connect: async () => wrap(await main.connect()),
      connectToShadowDb: async () => wrap(await shadow.connect()),
    }),
    close: async () => {
      await Promise.all(pools.map((p) => p.end().catch(() => {})));
    },
  };
}

/** The migrations folder in the shape the engine's `MigrationList` takes. */
export async function engineMigrationList(migrationsDir = MIGRATIONS_DIR): Promise<object> {
  const migrations = await readMigrations(migrationsDir);
  // No lockfile yet (first migration): it is about to be written with this content.
  const lockfile = await readFile(join(migrationsDir, 'migration_lock.toml'), 'utf8').catch(() => LOCKFILE);
  return {
    baseDir: migrationsDir,
    lockfile: { path: 'migration_lock.toml', content: lockfile },
    shadowDbInitScript: '',
    migrationDirectories: migrations.map((m) => ({
      path: m.name,
      migrationFile: { path: 'migration.sql', content: { tag: 'ok', value: m.script } },
    })),
  };
}

export async function diffMigrationsToSchema(
  migrationsDir = MIGRATIONS_DIR,
  schemaPath = SCHEMA_PATH,
): Promise<string> {
  const schema = await readFile(schemaPath, 'utf8');
  const from = { tag: 'migrations', ...(await engineMigrationList(migrationsDir)) };
  const engineWasm = await loadSchemaEngineWasm();
  // The shadow database the engine replays the migrations into: an in-memory PGlite, so this
  // needs no database server. In-process is fine for a CLI; two slots: the engine's main
  // connection stays idle while it works on the shadow one.
  const { PGlite } = await import('@electric-sql/pglite');
  const { PGLiteSocketServer } = await import('@electric-sql/pglite-socket');
  const db = await PGlite.create();
  const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: 0, maxConnections: 2 });
  await server.start();
  const url = `postgresql://postgres@${server.getServerConn()}/postgres`;
  try {
    const adapter = await engineAdapterFactory(url, url);
    const engine = await engineWasm.SchemaEngine.new({ datamodels: [[schemaPath, schema]] }, () => {}, adapter.factory);
    try {
      const res = await engine.diff({
        from,
        to: { tag: 'schemaDatamodel', files: [{ path: schemaPath, content: schema }] },
        script: true,
        exitCode: null,
        filters: { externalTables: [], externalEnums: [] },
      });
      return res.stdout ?? '';
    } finally {
      engine.free();
      await adapter.close();
    }
  } finally {
    await server.stop();
    await db.close();
  }
}

const EMPTY_SCRIPT = '-- This is an empty migration.';
const LOCKFILE =
  '# Please do not edit this file manually\n# It should be added in your version-control system (e.g., Git)\nprovider = "postgresql"\n';

export async function createMigration(
  name: string,
  opts: { empty?: boolean; migrationsDir?: string } = {},
): Promise<string | null> {
  const dir = opts.migrationsDir ?? MIGRATIONS_DIR;
  const slug = name
    .replace(/[^A-Za-z0-9_]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, 200);
  if (!slug) throw new Error('migration name is empty');
  let script = EMPTY_SCRIPT;
  if (!opts.empty) {
    script = (await diffMigrationsToSchema(dir)).trim();
    if (!script || script === EMPTY_SCRIPT) return null;
  }
  const stamp = new Date().toISOString().replace(/\D/g, '').slice(0, 14); // UTC YYYYMMDDHHMMSS, as Prisma
  const folder = join(dir, `${stamp}_${slug}`);
  await mkdir(folder, { recursive: true });
  await writeFile(join(folder, 'migration.sql'), `${script}\n`);
  if (!existsSync(join(dir, 'migration_lock.toml'))) await writeFile(join(dir, 'migration_lock.toml'), LOCKFILE);
  return folder;
}

async function cli(argv: string[]): Promise<number> {
  await import('dotenv/config');
  const [command, ...rest] = argv;
  const url = () => {
    const u = process.env.DATABASE_URL;
    if (!u) throw new Error('DATABASE_URL is not set');
    return u;
  };
  switch (command) {
    case 'deploy': {
      const { applied } = await applyMigrations(url(), { log: console.log });
      console.log(applied.length ? `applied ${applied.length} migration(s)` : 'no pending migrations');
      return 0;
    }
    case 'status': {
      const client = await connect(url(), 0, () => {});
      const rows = await client
        .query<MigrationRow>(
          'SELECT migration_name, finished_at, rolled_back_at FROM _prisma_migrations ORDER BY started_at',
        )
        .then(
          (r) => r.rows,
          () => [] as MigrationRow[],
        )
        .finally(() => client.end());
      for (const m of await readMigrations()) {
        const r = rows.filter((x) => x.migration_name === m.name && !x.rolled_back_at).pop();
        console.log(`${r ? (r.finished_at ? 'applied' : 'FAILED ') : 'pending'}  ${m.name}`);
      }
      return 0;
    }
    case 'new': {
      const name = rest.find((a) => !a.startsWith('--'));
      if (!name) throw new Error('usage: tsx prisma/migrate.ts new <name> [--empty]');
      // An engine panic surfaces as an uncaught trap; its message is in the panic registry.
      process.once('uncaughtException', (e) => {
        const panic = (globalThis as { PRISMA_WASM_PANIC_REGISTRY?: { message: string } }).PRISMA_WASM_PANIC_REGISTRY
          ?.message;
        console.error(`schema engine failed: ${panic || e}`);
        process.exit(1);
      });
      let folder: string | null;
      try {
        folder = await createMigration(name, { empty: rest.includes('--empty') });
      } catch (e) {
        if (
          (e as { code?: string }).code !== 'ERR_MODULE_NOT_FOUND' &&
          (e as { code?: string }).code !== 'MODULE_NOT_FOUND'
        )
          throw e;
        console.error(
          `@prisma/schema-engine-wasm is not installed (it is a devDependency). With internet and a dev database in DATABASE_URL:\n` +
            `  npx prisma migrate dev --create-only --name ${name}`,
        );
        return 1;
      }
      console.log(
        folder
          ? `created ${folder}/migration.sql`
          : 'schema.prisma matches the migrations: nothing to do (use --empty for a hand-written migration)',
      );
      return 0;
    }
    case 'resolve': {
      const name = rest[rest.indexOf('--rolled-back') + 1];
      if (!rest.includes('--rolled-back') || !name)
        throw new Error('usage: tsx prisma/migrate.ts resolve --rolled-back <name>');
      await markRolledBack(url(), name);
      console.log(`marked ${name} as rolled back`);
      return 0;
    }
    default:
      console.error(
        'usage: tsx prisma/migrate.ts deploy | status | new <name> [--empty] | resolve --rolled-back <name>',
      );
      return 2;
  }
}

function isMain(): boolean {
  try {
    return !!process.argv[1] && realpathSync(resolve(process.argv[1])) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isMain()) {
  cli(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (e) => {
      console.error(e instanceof MigrationError || e instanceof Error ? e.message : e);
      process.exit(1);
    },
  );
}
