// `tsx prisma/migrate.ts new <name>`: a new migration, the diff from the existing migrations to
// schema.prisma, made by Prisma's own schema engine in WASM (no native engine, no database server:
// the migrations are replayed into an in-memory PGlite).
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import pg from 'pg';
import { MIGRATIONS_DIR, readMigrations } from './applyMigrations.js';

const SCHEMA_PATH = fileURLToPath(new URL('./schema.prisma', import.meta.url));

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
