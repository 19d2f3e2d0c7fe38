// Holds reserved and settled in groups (activities/ledger/holdGroups.ts), against the real
// PostgreSQL: calls of one account that come at once share a statement, and the books read as if
// they had come one by one: a hold and a key per call, one charge entry per hold at its own cost
// with a running balance_after, never more held than the balance, never a hold charged twice,
// even when the same holds are settled by groups of two processes and one by one at once.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { config } from '../activities/config.js';
import { createAccount } from '../activities/accounts/accounts.js';
import { createKey } from '../activities/accounts/keys.js';
import { balances, credit, type Hold, InsufficientFunds, release, settle } from '../activities/ledger/ledger.js';
import { groupedHolds } from '../activities/ledger/holdGroups.js';
import { parseAmount } from '../activities/core/money.js';
import { db } from '../activities/db.js';
import { assertBooksBalance } from './support/books.js';

const usd = (s: string) => parseAmount(s, 'USD');
let seq = 0;
const key = (p: string) => `${p}:${process.pid}:${++seq}:${Math.random()}`;

async function funded(amount: string) {
  const a = await createAccount(`hold-groups-${++seq}`);
  await credit({ accountId: a.id, currency: 'USD', amount: usd(amount), reason: 'test', idempotencyKey: key('f') });
  return a.id;
}

/** Every entry of the account, oldest first, carries the balance after it: the running sum. */
async function assertRunningBalance(accountId: string) {
  const { rows } = await db().pool.query(
    `SELECT amount, balance_after FROM ledger_entries WHERE account_id = $1 AND currency = 'USD' ORDER BY id`,
    [accountId],
  );
  let running = 0n;
  for (const [i, e] of rows.entries()) {
    running += BigInt(e.amount);
    assert.equal(BigInt(e.balance_after), running, `entry ${i}: balance_after ${e.balance_after}, running ${running}`);
  }
}

describe('holds reserved and settled in groups', () => {
  afterEach(() => assertBooksBalance());

  it('reservations at once share a statement: a hold and a key each, and a replay finds the same holds', async () => {
    const id = await funded('1');
    const keys = Array.from({ length: 40 }, () => key('g'));
    const holds = await Promise.all(
      keys.map((k, i) =>
        groupedHolds.reserve({ accountId: id, usd: BigInt(i + 1) * 1000n, idempotencyKey: k, requestId: k }),
      ),
    );
    assert.equal(new Set(holds.map((h) => h.id)).size, 40);
    const { rows } = await db().pool.query(
      `SELECT idempotency_key, amount, request_id, created_at FROM balance_holds WHERE account_id = $1 AND status = 'active'`,
      [id],
    );
    assert.equal(rows.length, 40);
    for (const [i, k] of keys.entries()) {
      const r = rows.find((x) => x.idempotency_key === k);
      assert.equal(BigInt(r.amount), BigInt(i + 1) * 1000n, k);
      assert.equal(r.request_id, k);
    }
    // the first two went out alone (two statements fly at once), the other 38 together (a
    // statement's holds share its start time)
    assert.ok(new Set(rows.map((r) => r.created_at.getTime())).size <= 3, 'grouped into at most three statements');
    const held = (820n * 1000n) as bigint; // 1 + 2 + ... + 40 thousand
    assert.equal((await balances(id))!.USD.held, held);
    // a replay of the same keys (a retried attempt) finds each its own hold and holds nothing more
    const again = await Promise.all(
      keys.map((k, i) => groupedHolds.reserve({ accountId: id, usd: BigInt(i + 1) * 1000n, idempotencyKey: k })),
    );
    assert.deepEqual(
      again.map((h) => h.id),
      holds.map((h) => h.id),
    );
    assert.equal((await balances(id))!.USD.held, held);
    await Promise.all(holds.map((h) => release(h.id)));
  });

  it('a group the balance cannot cover is decided call by call: exactly what fits is held, the rest refused', async () => {
    const id = await funded('1');
    const results = await Promise.allSettled(
      Array.from({ length: 150 }, () =>
        groupedHolds.reserve({ accountId: id, usd: usd('0.01'), idempotencyKey: key('s') }),
      ),
    );
    const ok = results.filter((r) => r.status === 'fulfilled') as PromiseFulfilledResult<Hold>[];
    assert.equal(ok.length, 100);
    for (const r of results)
      if (r.status === 'rejected') assert.ok(r.reason instanceof InsufficientFunds, String(r.reason));
    assert.deepEqual((await balances(id))!.USD, { amount: usd('1'), held: usd('1'), available: 0n });
    await Promise.all(ok.map((r) => release(r.value.id)));
  });

  it('settled in groups: one charge entry per hold at its own cost, a running balance, the key spend counted', async () => {
    const id = await funded('1');
    const { record } = await createKey(id);
    const holds = await Promise.all(
      Array.from({ length: 30 }, () =>
        groupedHolds.reserve({ accountId: id, usd: usd('0.01'), idempotencyKey: key('c'), apiKeyId: record.id }),
      ),
    );
    const costs = holds.map((_, i) => BigInt(i) * 300_000n); // 0 (nothing charged) .. 0.0087
    const settled = await Promise.all(
      holds.map((h, i) => groupedHolds.settle({ accountId: id, holdId: h.id, usd: costs[i], reason: `row ${i}` })),
    );
    const spent = costs.reduce((a, b) => a + b, 0n);
    assert.deepEqual(
      settled.map((s) => s.charged),
      costs,
    );
    assert.deepEqual((await balances(id))!.USD, { amount: usd('1') - spent, held: 0n, available: usd('1') - spent });
    const { rows } = await db().pool.query(
      `SELECT hold_id, amount, reason, idempotency_key, created_at FROM ledger_entries WHERE account_id = $1 AND kind = 'charge'`,
      [id],
    );
    assert.equal(rows.length, 29, 'one entry per charged hold (the free one has none)');
    // the first two went out alone, the others together (a statement's entries share its start time)
    assert.ok(new Set(rows.map((r) => r.created_at.getTime())).size <= 3, 'settled in at most three statements');
    for (const [i, h] of holds.entries()) {
      const e = rows.find((r) => r.hold_id === h.id);
      if (i === 0) assert.equal(e, undefined);
      else {
        assert.equal(-BigInt(e.amount), costs[i]);
        assert.equal(e.reason, `row ${i}`);
        assert.equal(e.idempotency_key, `charge:${h.id}`);
      }
    }
    await assertRunningBalance(id);
    const { rows: spend } = await db().pool.query(`SELECT usd_spent FROM key_daily_usage WHERE key_id = $1`, [
      record.id,
    ]);
    assert.equal(BigInt(spend[0].usd_spent), spent);
  });

  it('what a group leaves out is settled one by one: an overage, a hold already released, a hold settled twice', async () => {
    const id = await funded('1');
    const [over, gone, twice, plain] = await Promise.all(
      [0, 1, 2, 3].map(() => groupedHolds.reserve({ accountId: id, usd: usd('0.01'), idempotencyKey: key('o') })),
    );
    await release(gone.id); // the sweeper took it back before the work was settled
    const out = await Promise.all([
      groupedHolds.settle({ accountId: id, holdId: over.id, usd: usd('0.015') }),
      groupedHolds.settle({ accountId: id, holdId: gone.id, usd: usd('0.004') }),
      groupedHolds.settle({ accountId: id, holdId: twice.id, usd: usd('0.003') }),
      groupedHolds.settle({ accountId: id, holdId: twice.id, usd: usd('0.003') }),
      groupedHolds.settle({ accountId: id, holdId: plain.id, usd: usd('0.002') }),
    ]);
    assert.deepEqual(
      out.map((s) => s.charged),
      [usd('0.015'), usd('0.004'), usd('0.003'), usd('0.003'), usd('0.002')],
    );
    const spent = usd('0.015') + usd('0.004') + usd('0.003') + usd('0.002');
    assert.deepEqual((await balances(id))!.USD, { amount: usd('1') - spent, held: 0n, available: usd('1') - spent });
    const { rows } = await db().pool.query(
      `SELECT count(*)::int AS n FROM ledger_entries WHERE account_id = $1 AND kind = 'charge' AND hold_id = $2`,
      [id, twice.id],
    );
    assert.equal(rows[0].n, 1, 'the hold settled twice is charged once');
    await assertRunningBalance(id);
  });

  it('races: the same holds settled by groups in two processes and one by one here, at once: each charged exactly once', async function () {
    this.timeout(60_000);
    const id = await funded('5');
    const holds = await Promise.all(
      Array.from({ length: 120 }, () =>
        groupedHolds.reserve({ accountId: id, usd: usd('0.01'), idempotencyKey: key('r') }),
      ),
    );
    const cost = (i: number) => BigInt(i + 1) * 50_000n;
    const spec = holds.map((h, i) => `${h.id}=${cost(i)}`).join(',');
    const script = fileURLToPath(new URL('./support/settleGroups.ts', import.meta.url));
    const run = promisify(execFile);
    const [a, b] = await Promise.all([
      run(process.execPath, ['--import', 'tsx', script, config.databaseUrl!, id, spec]),
      run(process.execPath, ['--import', 'tsx', script, config.databaseUrl!, id, spec]),
      Promise.all(holds.map((h, i) => (i % 3 === 0 ? settle({ holdId: h.id, usd: cost(i) }) : undefined))),
      Promise.all(holds.map((h, i) => groupedHolds.settle({ accountId: id, holdId: h.id, usd: cost(i) }))),
    ]);
    // every settler was told the same charge for each hold
    assert.deepEqual(JSON.parse(a.stdout), JSON.parse(b.stdout));
    const spent = holds.reduce((s, _, i) => s + cost(i), 0n);
    const { rows } = await db().pool.query(
      `SELECT hold_id, amount FROM ledger_entries WHERE account_id = $1 AND kind = 'charge'`,
      [id],
    );
    assert.equal(rows.length, 120, 'one charge per hold');
    assert.equal(new Set(rows.map((r) => r.hold_id)).size, 120);
    for (const [i, h] of holds.entries())
      assert.equal(-BigInt(rows.find((r) => r.hold_id === h.id).amount), cost(i), `hold ${i}`);
    assert.deepEqual((await balances(id))!.USD, { amount: usd('5') - spent, held: 0n, available: usd('5') - spent });
    await assertRunningBalance(id);
  });
});
