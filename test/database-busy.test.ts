// PostgreSQL refusing connections ("too many clients", SQLSTATE 53300) or a connection lost under a
// statement is a passing condition, so the caller hears 503 with Retry-After, not 500. The refusals here are real: a role whose
// connection limit is 0 (a non-superuser's limit is enforced like the server's own) is refused
// both through pg and through Prisma's pg adapter, as the gateway's own pool would be.
import assert from 'node:assert/strict';
import pg from 'pg';
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '../prisma/generated/client.js';
import { config } from '../activities/config.js';
import { db } from '../activities/db.js';
import { asRequestError, errorHeaders, renderError } from '../activities/surfaces/errors.js';
import { holdTable } from './support/dbFaults.js';
import { until } from './support/wait.js';

describe('a database with no connection to spare', () => {
  const role = `busy_${process.pid}`;
  let url: string;
  before(async () => {
    await db().pool.query(`DROP ROLE IF EXISTS ${role}`);
    await db().pool.query(`CREATE ROLE ${role} LOGIN CONNECTION LIMIT 0`);
    const u = new URL(config.databaseUrl!);
    u.username = role;
    u.password = '';
    url = u.toString();
  });
  after(() => db().pool.query(`DROP ROLE IF EXISTS ${role}`));

  async function refusal(work: () => Promise<unknown>): Promise<unknown> {
    try {
      await work();
    } catch (err) {
      return err;
    }
    assert.fail('the connection was not refused');
  }

  function assertBusy(err: unknown) {
    const answer = asRequestError(err);
    assert.equal(answer.status, 503);
    assert.equal(answer.code, 'database_busy');
    assert.deepEqual(errorHeaders(answer), { 'Retry-After': '2' });
    const body = renderError(answer, 'openai') as { error: { type: string } };
    assert.equal(body.error.type, 'service_unavailable');
    assert.equal((renderError(answer, 'teams') as { code: string }).code, 'SERVICE_UNAVAILABLE');
  }

  it('through pg: 503 database_busy with Retry-After', async () => {
    const pool = new pg.Pool({ connectionString: url, max: 1 });
    pool.on('error', () => undefined);
    const err = await refusal(() => pool.query('SELECT 1'));
    await pool.end();
    assert.equal((err as { code?: string }).code, '53300');
    assertBusy(err);
  });

  it("through Prisma's adapter: the same", async () => {
    const prisma = new PrismaClient({ adapter: new PrismaPg({ connectionString: url, max: 1 }) });
    const err = await refusal(() => prisma.account.findFirst());
    await prisma.$disconnect();
    assertBusy(err);
  });

  it('a connection lost under a statement that was not tried again: 503 database_unavailable', async () => {
    const hold = await holdTable('accounts');
    const failed = refusal(() => db().prisma.account.findFirst());
    try {
      await until(hold.waiting, (pids) => pids.length > 0, 5000, 'the query to wait');
      await hold.dropWaiting();
    } finally {
      await hold.release();
    }
    const answer = asRequestError(await failed);
    assert.equal(answer.status, 503);
    assert.equal(answer.code, 'database_unavailable');
    assert.deepEqual(errorHeaders(answer), { 'Retry-After': '2' });
  });

  it('any other failure stays a 500 that reveals nothing', () => {
    const answer = asRequestError(new Error('relation "x" does not exist'));
    assert.equal(answer.status, 500);
    assert.equal(answer.code, 'internal_error');
  });
});
