// Embedded Postgres (PGlite in a child process, one connection) with the real migrations and the
// generated Prisma client, then a restart on the same data dir.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '../prisma/generated/client.js';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../prisma/embedded-postgres.js';
import { applyMigrations, readMigrations } from '../prisma/applyMigrations.js';

describe('prisma/embedded-postgres.ts', function () {
  this.timeout(180_000);
  let dataDir: string;
  let server: EmbeddedPostgres | undefined;
  let accountId: string;

  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'switchyard-embedded-'));
  });

  after(async () => {
    await server?.stop();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('starts on a free port and answers a pg client', async () => {
    const t = Date.now();
    server = await startEmbeddedPostgres({ dataDir });
    console.log(`      (first start, empty data dir: ${Date.now() - t} ms)`);
    assert.equal(server.maxConnections, 1);
    assert.match(server.url, /^postgresql:\/\/postgres@127\.0\.0\.1:\d+\/postgres$/);
  });

  it('applies the migrations through its single connection, also from two callers at once', async () => {
    const names = (await readMigrations()).map((m) => m.name);
    const t = Date.now();
    const results = await Promise.all([
      applyMigrations(server!.url, { maxConnections: 1 }),
      applyMigrations(server!.url, { maxConnections: 1 }),
    ]);
    console.log(`      (migrate: ${Date.now() - t} ms)`);
    assert.deepEqual(results.flatMap((r) => r.applied).sort(), [...names].sort());
    assert.deepEqual(await applyMigrations(server!.url, { maxConnections: 1 }), { applied: [] });
  });

  it('does not block the event loop while it works', async () => {
    const client = new pg.Client({ connectionString: server!.url });
    await client.connect();
    let ticks = 0;
    const timer = setInterval(() => ticks++, 5);
    const t = Date.now();
    try {
      await client.query('SELECT count(*) FROM generate_series(1, 2000000)');
    } finally {
      clearInterval(timer);
      await client.end();
    }
    const elapsed = Date.now() - t;
    assert.ok(ticks >= Math.floor(elapsed / 5 / 4), `only ${ticks} timer ticks in ${elapsed} ms`);
  });

  it('serves the Prisma client (max: 1) and enforces the CHECK constraints', async () => {
    const prisma = new PrismaClient({ adapter: new PrismaPg({ connectionString: server!.url, max: 1 }) });
    try {
      const account = await prisma.account.create({
        data: { name: 'embedded', balances: { create: { currency: 'XNO', amount: '123000000000000000000000000000' } } },
      });
      accountId = account.id;
      const read = await prisma.balance.findUniqueOrThrow({
        where: { accountId_currency: { accountId, currency: 'XNO' } },
      });
      assert.equal(read.amount.toFixed(), '123000000000000000000000000000');
      await assert.rejects(
        prisma.balance.update({
          where: { accountId_currency: { accountId, currency: 'XNO' } },
          data: { amount: '-1' },
        }),
      );
    } finally {
      await prisma.$disconnect();
    }
  });

  it('refuses a second instance on the same data dir', async () => {
    await assert.rejects(startEmbeddedPostgres({ dataDir }), (e: Error & { code?: string }) => {
      assert.equal(e.code, 'EMBEDDED_PG_LOCKED', e.message);
      return true;
    });
  });

  it('keeps the data across stop and restart', async () => {
    await server!.stop();
    await server!.stop(); // idempotent
    const t = Date.now();
    server = await startEmbeddedPostgres({ dataDir });
    console.log(`      (restart on existing data dir: ${Date.now() - t} ms)`);
    const prisma = new PrismaClient({ adapter: new PrismaPg({ connectionString: server.url, max: 1 }) });
    try {
      const account = await prisma.account.findUniqueOrThrow({ where: { id: accountId }, include: { balances: true } });
      assert.equal(account.name, 'embedded');
      assert.equal(account.balances[0].amount.toFixed(), '123000000000000000000000000000');
    } finally {
      await prisma.$disconnect();
    }
    assert.deepEqual(await applyMigrations(server.url, { maxConnections: 1 }), { applied: [] });
  });
});
