import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { config } from '../activities/config.js';
import { randomUUID } from 'node:crypto';
import { db } from '../activities/db.js';
import { createAccount } from '../activities/accounts/accounts.js';
import { balances, credit, InsufficientFunds } from '../activities/ledger/ledger.js';
import { releaseExpiredHolds, reserve, settle } from '../activities/ledger/holds.js';
import {
  flushLeases,
  forgetLeases,
  releaseLeased,
  reserveFromLease,
  settleLeased,
} from '../activities/ledger/leases.js';
import { parseAmount } from '../activities/core/money.js';
import { assertBooksBalance } from './support/books.js';

const usd = (s: string) => parseAmount(s, 'USD');

async function funded(amount: string): Promise<string> {
  const a = await createAccount(`lease-${randomUUID()}`);
  await credit({
    accountId: a.id,
    currency: 'USD',
    amount: usd(amount),
    reason: 'test',
    idempotencyKey: `lease-funds:${a.id}`,
  });
  return a.id;
}

/** What InferenceCall does: a lease share when the account affords one, else an exact hold. */
async function spend(accountId: string, cost: bigint): Promise<'lease' | 'exact' | 'refused'> {
  const requestId = `req_${randomUUID().replace(/-/g, '')}`;
  const leased = await reserveFromLease(accountId, cost);
  if (leased) {
    const s = settleLeased(leased, { usd: cost, requestId, apiKeyId: null, reason: 'test' });
    assert.equal(s.charged, cost);
    return 'lease';
  }
  try {
    const hold = await reserve({ accountId, usd: cost, idempotencyKey: `hold:${requestId}`, requestId });
    await settle({ holdId: hold.id, usd: cost });
    return 'exact';
  } catch (err) {
    if (err instanceof InsufficientFunds) return 'refused';
    throw err;
  }
}

async function charges(accountId: string): Promise<{ n: number; total: bigint }> {
  const { rows } = await db().pool.query(
    `SELECT count(*)::int AS n, COALESCE(-SUM(amount), 0) AS total FROM ledger_entries WHERE account_id = $1 AND kind = 'charge'`,
    [accountId],
  );
  return { n: rows[0].n, total: BigInt(rows[0].total) };
}

describe('credit leases (reservations without a round trip)', function () {
  this.timeout(60_000);
  afterEach(() => flushLeases({ close: true }));

  it('serves many requests from one lease and writes one entry per request', async () => {
    const id = await funded('10');
    const results = await Promise.all(Array.from({ length: 50 }, () => spend(id, usd('0.0001'))));
    assert.deepEqual(new Set(results), new Set(['lease']));
    const { rows } = await db().pool.query(`SELECT count(*)::int AS n FROM balance_holds WHERE account_id = $1`, [id]);
    assert.equal(rows[0].n, 1, 'concurrent requests share one lease grant');
    await assertBooksBalance(id);
    assert.deepEqual(await charges(id), { n: 50, total: usd('0.005') });
    const b = (await balances(id))!.USD;
    assert.equal(b.amount, usd('9.995'));
  });

  it('races thousands of requests against a small balance: never overspends, books balance', async () => {
    const id = await funded('1');
    const cost = usd('0.0001');
    const results = await Promise.all(Array.from({ length: 12000 }, () => spend(id, cost)));
    let served = results.filter((r) => r !== 'refused').length;
    assert.ok(
      results.includes('lease') && results.includes('exact') && results.includes('refused'),
      `${[...new Set(results)]}`,
    );
    // A burst may be refused while the last lease still has money free (at most one lease, a
    // 1/8 share); once leases are given back, the rest is spendable: nothing is lost.
    assert.ok(served >= 10000 - 256, `only ${served} of 10000 affordable requests were served in the burst`);
    await flushLeases({ close: true });
    while ((await spend(id, cost)) !== 'refused') served++;
    await flushLeases({ close: true });
    await assertBooksBalance(id);
    const c = await charges(id);
    assert.equal(served, 10000);
    assert.equal(c.n, served);
    assert.equal(c.total, usd('1'));
    const b = (await balances(id))!.USD;
    assert.equal(b.held, 0n);
    assert.equal(b.amount, 0n);
  });

  it('three processes with their own leases cannot overspend', async () => {
    const id = await funded('1');
    const script = fileURLToPath(new URL('./support/spendMany.ts', import.meta.url));
    const run = promisify(execFile);
    const outs = await Promise.all(
      [1, 2, 3].map(() =>
        run(process.execPath, [
          '--import',
          'tsx/esm',
          script,
          config.databaseUrl!,
          id,
          '4000',
          usd('0.0001').toString(),
        ]),
      ),
    );
    const counts = outs.map((o) => JSON.parse(o.stdout) as { leased: number; exact: number });
    const served = counts.reduce((n, c) => n + c.leased + c.exact, 0);
    assert.ok(
      counts.some((c) => c.leased > 0),
      JSON.stringify(counts),
    );
    await assertBooksBalance(id);
    const c = await charges(id);
    assert.equal(c.n, served);
    assert.equal(c.total, usd('0.0001') * BigInt(served));
    const b = (await balances(id))!.USD;
    assert.equal(b.held, 0n);
    assert.equal(b.amount, usd('1') - c.total);
    assert.ok(served <= 10000 && served >= 10000 - 3 * 256, `served ${served}: ${JSON.stringify(counts)}`);
  });

  it('takes no lease for an account close to empty (the exact path serves it)', async () => {
    const id = await funded('0.01');
    assert.equal(await reserveFromLease(id, usd('0.0001')), undefined);
    assert.equal(await spend(id, usd('0.0001')), 'exact');
    await assertBooksBalance(id);
  });

  it('charges above the reservation come from the lease, capped at what it holds', async () => {
    const id = await funded('10');
    const a = (await reserveFromLease(id, usd('0.001')))!;
    const s = settleLeased(a, {
      usd: usd('0.002'),
      requestId: `req_${randomUUID()}`,
      apiKeyId: null,
      reason: 'overage',
    });
    assert.equal(s.charged, usd('0.002'));
    const b = (await reserveFromLease(id, usd('0.001')))!;
    releaseLeased(b);
    await assertBooksBalance(id);
    assert.deepEqual(await charges(id), { n: 1, total: usd('0.002') });
  });

  it("a charge beyond what the lease holds is capped at what it holds, never taking another request's share", async () => {
    const id = await funded('10');
    // the first share takes a lease of 256 shares: 0.256 USD (10 USD affords it: 8 times that)
    const a = (await reserveFromLease(id, usd('0.001')))!;
    const b = (await reserveFromLease(id, usd('0.001')))!;
    assert.equal(b.lease, a.lease, 'both shares come from one lease');
    const { rows } = await db().pool.query(`SELECT amount FROM balance_holds WHERE id = $1`, [a.lease.id]);
    assert.equal(BigInt(rows[0].amount), usd('0.256'));
    // `a` costs 1 USD: it gets its own share and the 0.254 still free, not b's share
    const s = settleLeased(a, { usd: usd('1'), requestId: `req_${randomUUID()}`, apiKeyId: null, reason: 'overage' });
    assert.equal(s.charged, usd('0.255'));
    assert.equal(s.available, usd('9.744'), "what the account can still spend, b's share still reserved");
    const t = settleLeased(b, { usd: usd('0.001'), requestId: `req_${randomUUID()}`, apiKeyId: null, reason: 'b' });
    assert.equal(t.charged, usd('0.001'), "b's share was still there");
    assert.equal(t.available, usd('9.744'));
    // the lease is spent: the next request takes a new one
    const c = (await reserveFromLease(id, usd('0.001')))!;
    assert.notEqual(c.lease, a.lease);
    releaseLeased(c);
    await flushLeases({ close: true });
    await assertBooksBalance(id);
    // charged exactly what the lease held, never more; the account keeps the rest
    assert.deepEqual(await charges(id), { n: 2, total: usd('0.256') });
    const bal = (await balances(id))!.USD;
    assert.equal(bal.amount, usd('9.744'));
    assert.equal(bal.held, 0n);
  });

  it('a crashed process: its lease is released by the sweeper once expired, books still balance', async () => {
    const id = await funded('100');
    assert.equal(await spend(id, usd('0.01')), 'lease');
    await flushLeases();
    forgetLeases(); // the process dies holding the rest of its lease
    assert.ok((await balances(id))!.USD.held > 0n);
    await db().pool.query(`UPDATE balance_holds SET expires_at = now() - interval '1 second' WHERE account_id = $1`, [
      id,
    ]);
    assert.ok((await releaseExpiredHolds()) >= 1);
    await assertBooksBalance(id);
    const b = (await balances(id))!.USD;
    assert.equal(b.held, 0n);
    assert.equal(b.amount, usd('99.99'));
  });

  it('a lease swept while its charges were pending: the charges are still written, once', async () => {
    const id = await funded('100');
    const a = (await reserveFromLease(id, usd('0.01')))!;
    await db().pool.query(`UPDATE balance_holds SET expires_at = now() - interval '1 second' WHERE account_id = $1`, [
      id,
    ]);
    await releaseExpiredHolds();
    settleLeased(a, { usd: usd('0.01'), requestId: `req_${randomUUID()}`, apiKeyId: null, reason: 'late' });
    await flushLeases({ close: true });
    await assertBooksBalance(id);
    assert.deepEqual(await charges(id), { n: 1, total: usd('0.01') });
    assert.equal((await balances(id))!.USD.held, 0n);
  });
});
