// Migrations against the system Postgres (127.0.0.1:5432, or TEST_PG_ADMIN_URL): each test works
// in scratch databases that are dropped afterwards.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { cp, mkdtemp, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '../prisma/generated/client.js';
import {
  applyMigrations,
  markRolledBack,
  MIGRATIONS_DIR,
  MigrationError,
  readMigrations,
} from '../prisma/applyMigrations.js';
import { engineAdapterFactory, engineMigrationList, loadSchemaEngineWasm } from '../prisma/newMigration.js';

const ADMIN_URL = process.env.TEST_PG_ADMIN_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const created: string[] = [];
const tempDirs: string[] = [];

async function withClient<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

async function scratchDb(): Promise<string> {
  const name = `switchyard_mig_${randomBytes(5).toString('hex')}`;
  await withClient(ADMIN_URL, (c) => c.query(`CREATE DATABASE ${name}`));
  created.push(name);
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

async function migrationsCopy(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'switchyard-migrations-'));
  tempDirs.push(dir);
  await cp(MIGRATIONS_DIR, dir, { recursive: true });
  return `${dir}/`;
}

const expectMigrationError = (code: MigrationError['code']) => (e: unknown) => {
  assert.ok(e instanceof MigrationError, `expected MigrationError, got ${e}`);
  assert.equal(e.code, code, e.message);
  return true;
};

describe('prisma/migrate.ts against PostgreSQL', function () {
  this.timeout(120_000);
  let url: string;
  let names: string[];

  before(async () => {
    names = (await readMigrations()).map((m) => m.name);
    assert.ok(names.length >= 2 && names[0].endsWith('_init') && names[1].endsWith('_money_checks'), names.join());
    url = await scratchDb();
  });

  after(async () => {
    for (const name of created) {
      await withClient(ADMIN_URL, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).catch(() => {});
    }
    for (const dir of tempDirs) await rm(dir, { recursive: true, force: true });
  });

  it('applies every migration in order and records it as Prisma does', async () => {
    const t = Date.now();
    const { applied } = await applyMigrations(url);
    console.log(`      (migrate on empty database: ${Date.now() - t} ms)`);
    assert.deepEqual(applied, names);
    const rows = await withClient(url, (c) =>
      c.query('SELECT * FROM _prisma_migrations ORDER BY started_at, migration_name').then((r) => r.rows),
    );
    assert.deepEqual(
      rows.map((r) => r.migration_name),
      names,
    );
    for (const row of rows) {
      const bytes = await readFile(join(MIGRATIONS_DIR, row.migration_name, 'migration.sql'));
      assert.equal(row.checksum, createHash('sha256').update(bytes).digest('hex'));
      assert.match(row.id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      assert.ok(row.finished_at instanceof Date && row.finished_at >= row.started_at);
      assert.equal(row.logs, null);
      assert.equal(row.rolled_back_at, null);
      assert.equal(row.applied_steps_count, 1);
    }
  });

  it('applies nothing the second time', async () => {
    assert.deepEqual(await applyMigrations(url), { applied: [] });
  });

  it("agrees with Prisma's own schema engine (migrate status / deploy)", async () => {
    const other = await scratchDb();
    const wasm = await loadSchemaEngineWasm();
    const schema = await readFile(new URL('../prisma/schema.prisma', import.meta.url), 'utf8');
    const migrationsList = await engineMigrationList();
    const filters = { externalTables: [], externalEnums: [] };
    const run = async (dbUrl: string, fn: (engine: any) => Promise<any>): Promise<any> => {
      const adapter = await engineAdapterFactory(dbUrl, dbUrl);
      const engine = await wasm.SchemaEngine.new(
        { datamodels: [['schema.prisma', schema]] },
        () => {},
        adapter.factory,
      );
      try {
        return await fn(engine);
      } finally {
        engine.free();
        await adapter.close();
      }
    };
    // Our history, read by the engine: nothing edited, failed, missing or pending.
    const diagnosis = await run(url, (e) =>
      e.diagnoseMigrationHistory({ migrationsList, optInToShadowDatabase: false, filters }),
    );
    assert.deepEqual(diagnosis.editedMigrationNames, []);
    assert.deepEqual(diagnosis.failedMigrationNames, []);
    assert.equal(diagnosis.history, null);
    assert.deepEqual((await run(url, (e) => e.applyMigrations({ migrationsList, filters }))).appliedMigrationNames, []);
    // The engine's own deploy: the same table, and our applier then finds nothing to do.
    assert.deepEqual(
      (await run(other, (e) => e.applyMigrations({ migrationsList, filters }))).appliedMigrationNames,
      names,
    );
    assert.deepEqual(await applyMigrations(other), { applied: [] });
    const shape = (dbUrl: string) =>
      withClient(dbUrl, (c) =>
        c
          .query(
            `SELECT column_name, data_type, character_maximum_length, is_nullable, column_default
               FROM information_schema.columns WHERE table_name = '_prisma_migrations' ORDER BY ordinal_position`,
          )
          .then((r) => r.rows),
      );
    assert.deepEqual(await shape(url), await shape(other));
  });

  it('is safe when two callers migrate the same database at once', async () => {
    const fresh = await scratchDb();
    const results = await Promise.all([applyMigrations(fresh), applyMigrations(fresh)]);
    assert.deepEqual(results.flatMap((r) => r.applied).sort(), [...names].sort());
    const count = await withClient(fresh, (c) =>
      c.query('SELECT count(*)::int AS n FROM _prisma_migrations').then((r) => r.rows[0].n),
    );
    assert.equal(count, names.length);
  });

  it('has CHECK constraints that reject negative money', async () => {
    await withClient(url, async (c) => {
      const { rows } = await c.query(
        `INSERT INTO accounts (id, name) VALUES (gen_random_uuid(), 'checks') RETURNING id`,
      );
      const id = rows[0].id;
      const rejects = (sql: string, params: unknown[]) =>
        assert.rejects(c.query(sql, params), (e: { code?: string }) => e.code === '23514');
      await rejects(`INSERT INTO balances (account_id, currency, amount) VALUES ($1, 'USD', -1)`, [id]);
      await rejects(`INSERT INTO balances (account_id, currency, amount, held) VALUES ($1, 'USD', 5, 6)`, [id]);
      await rejects(`INSERT INTO balances (account_id, currency, amount, held) VALUES ($1, 'USD', 5, -1)`, [id]);
      await rejects(
        `INSERT INTO balance_holds (id, account_id, currency, amount, quoted_usd, idempotency_key, expires_at)
         VALUES (gen_random_uuid(), $1, 'USD', 0, 0, 'k0', now())`,
        [id],
      );
      await c.query(`INSERT INTO balances (account_id, currency, amount, held) VALUES ($1, 'USD', 5, 5)`, [id]);
      await rejects(`UPDATE balances SET amount = amount - 6 WHERE account_id = $1`, [id]);
    });
  });

  it('works with the generated Prisma client', async () => {
    const prisma = new PrismaClient({ adapter: new PrismaPg({ connectionString: url }) });
    try {
      const account = await prisma.account.create({
        data: { name: 'prisma client', balances: { create: { currency: 'USD', amount: '1000000000' } } },
      });
      const read = await prisma.account.findUniqueOrThrow({ where: { id: account.id }, include: { balances: true } });
      assert.equal(read.name, 'prisma client');
      assert.equal(read.balances.length, 1);
      assert.equal(read.balances[0].amount.toFixed(), '1000000000');
      assert.equal(read.balances[0].held.toFixed(), '0');
    } finally {
      await prisma.$disconnect();
    }
  });

  it('refuses when an applied migration was edited, but not for line endings', async () => {
    const dir = await migrationsCopy();
    const file = join(dir, names[1], 'migration.sql');
    const original = await readFile(file, 'utf8');
    await writeFile(file, original.replaceAll('\n', '\r\n'));
    assert.deepEqual(await applyMigrations(url, { migrationsDir: dir }), { applied: [] });
    await writeFile(file, `${original}\n-- edited\n`);
    await assert.rejects(applyMigrations(url, { migrationsDir: dir }), expectMigrationError('CHECKSUM_MISMATCH'));
  });

  it('records a failed migration, rolls it back, and refuses until it is resolved', async () => {
    const db = await scratchDb();
    const dir = await migrationsCopy();
    const broken = '29991231235959_broken';
    await mkdir(join(dir, broken));
    await writeFile(
      join(dir, broken, 'migration.sql'),
      'CREATE TABLE "half_done" (id int);\nSELECT * FROM "no_such_table";\n',
    );
    await assert.rejects(applyMigrations(db, { migrationsDir: dir }), expectMigrationError('APPLY_FAILED'));
    await withClient(db, async (c) => {
      assert.equal((await c.query(`SELECT to_regclass('half_done') AS t`)).rows[0].t, null);
      const row = (await c.query('SELECT * FROM _prisma_migrations WHERE migration_name = $1', [broken])).rows[0];
      assert.equal(row.finished_at, null);
      assert.equal(row.applied_steps_count, 0);
      assert.match(row.logs, /42P01/);
    });
    await assert.rejects(applyMigrations(db, { migrationsDir: dir }), expectMigrationError('FAILED_MIGRATION'));
    await markRolledBack(db, broken);
    await writeFile(join(dir, broken, 'migration.sql'), 'CREATE TABLE "half_done" (id int);\n');
    assert.deepEqual(await applyMigrations(db, { migrationsDir: dir }), { applied: [broken] });
  });

  it('runs a migration that cannot run in a transaction (CREATE INDEX CONCURRENTLY) as Prisma does', async () => {
    const db = await scratchDb();
    const dir = await migrationsCopy();
    const name = '29991231235959_concurrent_index';
    await mkdir(join(dir, name));
    await writeFile(
      join(dir, name, 'migration.sql'),
      'CREATE INDEX CONCURRENTLY "accounts_name_idx" ON "accounts"("name");\n',
    );
    assert.deepEqual((await applyMigrations(db, { migrationsDir: dir })).applied.at(-1), name);
    await withClient(db, async (c) => {
      assert.equal((await c.query(`SELECT to_regclass('accounts_name_idx') AS t`)).rows[0].t, 'accounts_name_idx');
      const rows = (await c.query('SELECT * FROM _prisma_migrations WHERE migration_name = $1', [name])).rows;
      assert.equal(rows.length, 1);
      assert.ok(rows[0].finished_at);
      assert.equal(rows[0].applied_steps_count, 1);
    });
  });

  it('refuses a non-empty database that has no migration history', async () => {
    const db = await scratchDb();
    await withClient(db, (c) => c.query('CREATE TABLE stray (id int)'));
    await assert.rejects(applyMigrations(db), expectMigrationError('SCHEMA_NOT_EMPTY'));
  });
});
