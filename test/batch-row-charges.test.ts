// A batch row's answer and its charge (MeteredCall.settleWith with the batch store's successWrite),
// raced: two attempts of one row storing at once, and a lease given back by the sweeper while rows
// settle on it. Each row must end stored once and charged once, whichever way it was paid.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createAccount } from '../activities/accounts/accounts.js';
import { createKey } from '../activities/accounts/keys.js';
import { successWrite } from '../activities/batches/store.js';
import { catalog } from '../activities/catalog/catalog.js';
import { parseAmount } from '../activities/core/money.js';
import { db } from '../activities/db.js';
import { closeIdleLeases, flushLeases } from '../activities/ledger/leases.js';
import { balances, credit } from '../activities/ledger/ledger.js';
import { releaseExpiredHolds } from '../activities/ledger/holds.js';
import type { Payer } from '../activities/core/caller.js';
import { MeteredCall } from '../activities/metering/meteredCall.js';
import { assertBooksBalance } from './support/books.js';

const usd = (s: string) => parseAmount(s, 'USD');
const MODEL = 'openai/gpt-4o-mini';
const never = new AbortController().signal;

async function payer(key: { dailyUsdLimit?: bigint } = {}): Promise<Payer> {
  const account = await createAccount(`batch-charges-${randomUUID()}`);
  await credit({
    accountId: account.id,
    currency: 'USD',
    amount: usd('10'),
    reason: 'test',
    idempotencyKey: `batch-charges-fund:${account.id}`,
  });
  const { record } = await createKey(account.id, { dailyUsdLimit: key.dailyUsdLimit ?? null });
  return { accountId: account.id, keyId: record.id, billingMode: 'auto', dailyUsdLimit: key.dailyUsdLimit ?? null };
}

/** A running batch of `n` pending rows, made directly in its tables. */
async function batchOf(caller: Payer, n: number): Promise<string> {
  const id = `batch_${randomUUID().replace(/-/g, '')}`;
  await db().pool.query(
    `INSERT INTO batches (id, kind, account_id, endpoint, model, status, payer, total, expires_at)
     VALUES ($1, 'inline', $2, '/v1/chat/completions', $3, 'in_progress', $4, $5, now() + interval '1 day')`,
    [id, caller.accountId, MODEL, { ...caller, dailyUsdLimit: caller.dailyUsdLimit?.toString() ?? null }, n],
  );
  await db().pool.query(
    `INSERT INTO batch_rows (batch_id, idx, custom_id, body)
     SELECT $1, g, 'r' || g, '{}'::jsonb FROM generate_series(0, $2 - 1) g`,
    [id, n],
  );
  return id;
}

/** Row `idx`'s call, reserved (a lease share, or the row's own hold) and answered: what is left is to store it. */
async function answered(caller: Payer, batchId: string, idx: number): Promise<MeteredCall> {
  const requestId = `${batchId}:${idx}`;
  const call = new MeteredCall({
    caller,
    requestId,
    surface: 'batch',
    modelId: MODEL,
    routes: [catalog().model(MODEL)!.routes[0]],
    worstCase: () => usd('0.001'),
    shortfall: () => 'test',
    holdTtlSeconds: 3600,
    holdKey: `hold:${requestId}`,
    creditLease: true,
    storesAnswer: true,
  });
  await call.reserve();
  await call.attempt(never, async () => 'answer');
  return call;
}

/** Store row `idx`'s answer with its charge of `cost`. */
const store = (call: MeteredCall, batchId: string, idx: number, cost: bigint) =>
  call.settleWith(
    cost,
    { inputUnits: 10, outputUnits: 5 },
    successWrite(batchId, idx, {
      result: { answer: idx },
      inputTokens: 10,
      outputTokens: 5,
      cost,
      providerId: 'openai',
    }),
  );

/** One whole attempt at row `idx`. */
const attempt = async (caller: Payer, batchId: string, idx: number, cost: bigint) =>
  store(await answered(caller, batchId, idx), batchId, idx, cost);

async function rowsOf(batchId: string) {
  const { rows } = await db().pool.query(
    `SELECT idx, status, hold_id, cost::text FROM batch_rows WHERE batch_id = $1 ORDER BY idx`,
    [batchId],
  );
  return rows;
}

async function chargesOf(accountId: string) {
  const { rows } = await db().pool.query(
    `SELECT e.request_id, e.amount, e.hold_id, split_part(h.idempotency_key, ':', 1) AS paid_from
     FROM ledger_entries e JOIN balance_holds h ON h.id = e.hold_id
     WHERE e.account_id = $1 AND e.kind = 'charge' ORDER BY e.request_id`,
    [accountId],
  );
  return rows;
}

/** Settle what an exact-hold row left open, as the row's retry (or finishBatch) would. */
async function settleOpenHolds(batchId: string, caller: Payer) {
  for (const r of await rowsOf(batchId))
    if (r.hold_id)
      await MeteredCall.adopted({
        caller,
        requestId: `${batchId}:${r.idx}`,
        surface: 'batch',
        modelId: MODEL,
        holdId: r.hold_id,
        providerId: 'openai',
      }).settle(BigInt(r.cost), { inputUnits: 10, outputUnits: 5 });
}

describe('batch rows: the answer and its charge together', () => {
  afterEach(async () => {
    await flushLeases({ close: true });
    await assertBooksBalance();
  });

  for (const [paidFrom, key] of [
    ['lease', {}],
    // a key with a daily cap never leases: each row holds its own money
    ['hold', { dailyUsdLimit: usd('100') }],
  ] as const) {
    it(`two attempts of each row storing at once: one stores and is charged, the other charges nothing (${paidFrom})`, async () => {
      const caller = await payer(key);
      const N = 12;
      const batchId = await batchOf(caller, N);
      const cost = (i: number) => 1000n + BigInt(i);
      const outcomes = await Promise.all(
        Array.from({ length: N }, (_, i) =>
          Promise.all([attempt(caller, batchId, i, cost(i)), attempt(caller, batchId, i, cost(i))]),
        ),
      );
      for (const [i, pair] of outcomes.entries()) {
        const stored = pair.filter((c) => c !== undefined);
        assert.equal(stored.length, 1, `row ${i}: exactly one attempt stored it`);
        if (paidFrom === 'lease') assert.equal(stored[0]!.charged, cost(i));
      }
      await settleOpenHolds(batchId, caller);
      await closeIdleLeases(caller.accountId);

      const rows = await rowsOf(batchId);
      assert.ok(rows.every((r) => r.status === 'succeeded'));
      // a leased row keeps no hold of its own (nothing for a retry to settle)
      assert.ok(rows.every((r) => (paidFrom === 'lease' ? r.hold_id === null : r.hold_id !== null)));
      const charges = await chargesOf(caller.accountId);
      assert.equal(charges.length, N, 'one charge per row');
      for (let i = 0; i < N; i++) {
        const c = charges.filter((x) => x.request_id === `${batchId}:${i}`);
        assert.equal(c.length, 1, `row ${i} charged once`);
        assert.equal(-BigInt(c[0].amount), cost(i));
        assert.equal(c[0].paid_from, paidFrom);
      }
      const { rows: b } = await db().pool.query(`SELECT completed, cost::text FROM batches WHERE id = $1`, [batchId]);
      assert.equal(b[0].completed, N, 'each row counted once');
      const total = Array.from({ length: N }, (_, i) => cost(i)).reduce((a, c) => a + c, 0n);
      assert.equal(BigInt(b[0].cost), total);
      const bal = (await balances(caller.accountId))!.USD;
      assert.equal(bal.held, 0n);
      assert.equal(bal.amount, usd('10') - total);
      await assertBooksBalance(caller.accountId);
    });
  }

  /** Rows 0..n-1 of a batch, each reserved (all sharing one lease) and answered, not yet stored. */
  const answeredRows = (caller: Payer, batchId: string, n: number) =>
    Promise.all(Array.from({ length: n }, (_, i) => answered(caller, batchId, i)));

  const storeAll = (calls: MeteredCall[], batchId: string) =>
    Promise.all(calls.map((call, i) => store(call, batchId, i, 2000n)));

  async function expireLeases(accountId: string): Promise<string[]> {
    const { rows } = await db().pool.query(
      `UPDATE balance_holds SET expires_at = now() WHERE account_id = $1 AND status = 'active' RETURNING id`,
      [accountId],
    );
    return rows.map((r) => r.id);
  }

  async function assertEachRowChargedOnce(caller: Payer, batchId: string, n: number, notFrom: string[]) {
    await closeIdleLeases(caller.accountId);
    const charges = await chargesOf(caller.accountId);
    assert.equal(charges.length, n, 'one charge per row');
    assert.equal(new Set(charges.map((c) => c.request_id)).size, n);
    assert.ok(
      charges.every((c) => !notFrom.includes(c.hold_id)),
      'nothing charged to the swept lease',
    );
    const rows = await rowsOf(batchId);
    assert.ok(rows.every((r) => r.status === 'succeeded'));
    const bal = (await balances(caller.accountId))!.USD;
    assert.equal(bal.amount, usd('10') - 2000n * BigInt(n));
    assert.equal(bal.held, 0n, 'nothing left held');
    await assertBooksBalance(caller.accountId);
  }

  it('rows storing at once on one lease share statements (group commit), each still charged once at its cost', async () => {
    const caller = await payer();
    const N = 40;
    const batchId = await batchOf(caller, N);
    const calls = await answeredRows(caller, batchId, N);
    // count the statements that store and charge, by their prepared name
    const pool = db().requestPool;
    const query = pool.query.bind(pool);
    let statements = 0;
    (pool as { query: unknown }).query = (q: unknown, ...rest: unknown[]) => {
      if ((q as { name?: string }).name === 'batch_row_success+lease_charge') statements++;
      return (query as (...a: unknown[]) => unknown)(q, ...rest);
    };
    try {
      const outcomes = await storeAll(calls, batchId);
      assert.ok(outcomes.every((c) => c?.charged === 2000n));
    } finally {
      (pool as { query: unknown }).query = query;
    }
    // the first goes out alone, the rest wait for it and go together
    assert.ok(statements >= 2 && statements <= 4, `${statements} statements for ${N} rows`);
    await assertEachRowChargedOnce(caller, batchId, N, []);
  });

  it('a lease the sweeper gave back (its process stalled) pays for nothing: the rows reserve again and are charged once', async () => {
    const caller = await payer();
    const N = 8;
    const batchId = await batchOf(caller, N);
    const calls = await answeredRows(caller, batchId, N);
    const swept = await expireLeases(caller.accountId);
    assert.equal(swept.length, 1, 'the rows share one lease');
    while ((await releaseExpiredHolds()) > 0);
    const outcomes = await storeAll(calls, batchId);
    assert.ok(outcomes.every((c) => c?.charged === 2000n));
    await assertEachRowChargedOnce(caller, batchId, N, swept);
  });

  it('the sweeper racing the rows as they store: each row stored and charged once, whichever came first', async () => {
    const caller = await payer();
    const N = 16;
    const batchId = await batchOf(caller, N);
    const calls = await answeredRows(caller, batchId, N);
    await expireLeases(caller.accountId);
    const sweeping = (async () => {
      while ((await releaseExpiredHolds()) > 0);
    })();
    const outcomes = await storeAll(calls, batchId);
    await sweeping;
    assert.ok(outcomes.every((c) => c?.charged === 2000n));
    await assertEachRowChargedOnce(caller, batchId, N, []);
  });
});
