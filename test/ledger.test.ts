import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { config } from '../activities/config.js';
import { createAccount } from '../activities/accounts/accounts.js';
import {
  balances,
  credit,
  debit,
  InsufficientFunds,
  LedgerError,
  refund,
  release,
  releaseExpiredHolds,
  reserve,
  settle,
} from '../activities/ledger/ledger.js';
import { parseAmount } from '../activities/core/money.js';
import { db } from '../activities/db.js';
import { assertBooksBalance } from './support/books.js';

const usd = (s: string) => parseAmount(s, 'USD');
let seq = 0;
const key = (p: string) => `${p}:${process.pid}:${++seq}:${Math.random()}`;

async function funded(amount: string) {
  const a = await createAccount(`ledger-${++seq}`);
  if (amount !== '0')
    await credit({
      accountId: a.id,
      currency: 'USD',
      amount: usd(amount),
      reason: 'test',
      idempotencyKey: key('fund'),
    });
  return a.id;
}

describe('ledger', () => {
  afterEach(() => assertBooksBalance());

  it('credits and debits, each an entry, refusing to dip into held funds', async () => {
    const id = await funded('2');
    const hold = await reserve({ accountId: id, usd: usd('1.5'), idempotencyKey: key('r') });
    await assert.rejects(
      debit({ accountId: id, currency: 'USD', amount: usd('0.6'), reason: 'x', idempotencyKey: key('d') }),
      InsufficientFunds,
    );
    const e = await debit({
      accountId: id,
      currency: 'USD',
      amount: usd('0.5'),
      reason: 'correction',
      idempotencyKey: key('d'),
    });
    assert.equal(e.amount, -usd('0.5'));
    assert.equal(e.balanceAfter, usd('1.5'));
    await release(hold.id);
    assert.deepEqual((await balances(id))!.USD, { amount: usd('1.5'), held: 0n, available: usd('1.5') });
  });

  it('replays an idempotency key instead of moving money twice, and refuses a different operation under it', async () => {
    const id = await funded('0');
    const k = key('c');
    const a = await credit({ accountId: id, currency: 'USD', amount: usd('1'), reason: 'x', idempotencyKey: k });
    const b = await credit({ accountId: id, currency: 'USD', amount: usd('1'), reason: 'x', idempotencyKey: k });
    assert.equal(a.id, b.id);
    await assert.rejects(
      credit({ accountId: id, currency: 'USD', amount: usd('2'), reason: 'x', idempotencyKey: k }),
      LedgerError,
    );
    assert.equal((await balances(id))!.USD.amount, usd('1'));
  });

  it('reserves, settles the actual cost and releases the rest', async () => {
    const id = await funded('1');
    const hold = await reserve({ accountId: id, usd: usd('0.3'), idempotencyKey: key('r'), requestId: 'req_test' });
    assert.equal(hold.currency, 'USD');
    assert.equal(hold.available, usd('0.7'));
    const s = await settle({ holdId: hold.id, usd: usd('0.000021') });
    assert.equal(s.charged, usd('0.000021'));
    assert.equal(s.balanceAfter, usd('0.999979'));
    assert.equal(s.available, usd('0.999979'));
    // settling again returns the same result and charges nothing more
    const again = await settle({ holdId: hold.id, usd: usd('0.000021') });
    assert.equal(again.charged, s.charged);
    assert.equal((await balances(id))!.USD.amount, usd('0.999979'));
  });

  it('charges nothing for a zero-cost settlement and nothing for a released hold', async () => {
    const id = await funded('1');
    const h1 = await reserve({ accountId: id, usd: usd('0.5'), idempotencyKey: key('r') });
    await settle({ holdId: h1.id, usd: 0n });
    const h2 = await reserve({ accountId: id, usd: usd('0.5'), idempotencyKey: key('r') });
    assert.equal(await release(h2.id), true);
    assert.equal(await release(h2.id), false);
    const { rows } = await db().pool.query(`SELECT count(*)::int AS n FROM ledger_entries WHERE account_id = $1`, [id]);
    assert.equal(rows[0].n, 1); // only the funding credit
  });

  it('takes a cost above the reservation from what is available, never below zero', async () => {
    const id = await funded('1');
    const hold = await reserve({ accountId: id, usd: usd('0.1'), idempotencyKey: key('r') });
    const s = await settle({ holdId: hold.id, usd: usd('0.25') });
    assert.equal(s.charged, usd('0.25'));
    const id2 = await funded('0.2');
    const h2 = await reserve({ accountId: id2, usd: usd('0.1'), idempotencyKey: key('r') });
    const s2 = await settle({ holdId: h2.id, usd: usd('5') });
    assert.equal(s2.charged, usd('0.2'));
    assert.equal((await balances(id2))!.USD.amount, 0n);
  });

  it('refuses to reserve more than is available', async () => {
    const id = await funded('0.01');
    await assert.rejects(reserve({ accountId: id, usd: usd('0.02'), idempotencyKey: key('r') }), (err: unknown) => {
      assert.ok(err instanceof InsufficientFunds);
      assert.equal(err.requiredUsd, usd('0.02'));
      assert.equal(err.availableUsd, usd('0.01'));
      return true;
    });
  });

  it('pays from XNO at the configured rate when USD does not cover it, and settles proportionally', async () => {
    const id = await funded('0');
    await credit({
      accountId: id,
      currency: 'XNO',
      amount: parseAmount('10', 'XNO'),
      reason: 'deposit',
      idempotencyKey: key('x'),
    });
    await assert.rejects(reserve({ accountId: id, usd: usd('1'), idempotencyKey: key('r') }), InsufficientFunds);
    config.xnoUsdRate = '0.8';
    try {
      const hold = await reserve({ accountId: id, usd: usd('1'), idempotencyKey: key('r') });
      assert.equal(hold.currency, 'XNO');
      assert.equal(hold.amount, parseAmount('1.25', 'XNO'));
      const s = await settle({ holdId: hold.id, usd: usd('0.4') });
      assert.equal(s.charged, parseAmount('0.5', 'XNO'));
      assert.equal((await balances(id))!.XNO.amount, parseAmount('9.5', 'XNO'));
    } finally {
      config.xnoUsdRate = undefined;
    }
  });

  it('refunds a charge at most once over, even when refunds race', async () => {
    const id = await funded('1');
    const hold = await reserve({ accountId: id, usd: usd('0.5'), idempotencyKey: key('r') });
    await settle({ holdId: hold.id, usd: usd('0.4') });
    const { rows } = await db().pool.query(`SELECT id FROM ledger_entries WHERE hold_id = $1`, [hold.id]);
    const entryId = BigInt(rows[0].id);
    const results = await Promise.allSettled(
      Array.from({ length: 20 }, () =>
        refund({ entryId, amount: usd('0.1'), reason: 'goodwill', idempotencyKey: key('rf') }),
      ),
    );
    assert.equal(results.filter((r) => r.status === 'fulfilled').length, 4);
    assert.equal((await balances(id))!.USD.amount, usd('1'));
  });

  it('releases expired holds (the sweeper activity)', async () => {
    const id = await funded('1');
    const hold = await reserve({ accountId: id, usd: usd('0.4'), idempotencyKey: key('r'), ttlSeconds: 0 });
    await new Promise((r) => setTimeout(r, 20));
    assert.ok((await releaseExpiredHolds()) >= 1);
    assert.equal((await balances(id))!.USD.held, 0n);
    // a request that finishes after its hold expired still pays for the work it got
    const s = await settle({ holdId: hold.id, usd: usd('0.1') });
    assert.equal(s.charged, usd('0.1'));
  });

  describe('races', () => {
    it('400 concurrent reservations at a small balance: exactly what fits succeeds, no overspend', async () => {
      const id = await funded('1');
      const results = await Promise.allSettled(
        Array.from({ length: 400 }, () => reserve({ accountId: id, usd: usd('0.01'), idempotencyKey: key('race') })),
      );
      const ok = results.filter((r) => r.status === 'fulfilled');
      const refused = results.filter((r) => r.status === 'rejected');
      assert.equal(ok.length, 100);
      assert.ok(refused.every((r) => (r as PromiseRejectedResult).reason instanceof InsufficientFunds));
      assert.deepEqual((await balances(id))!.USD, { amount: usd('1'), held: usd('1'), available: 0n });
      // settle them all concurrently at varying real costs
      const holds = ok.map((r) => (r as PromiseFulfilledResult<Awaited<ReturnType<typeof reserve>>>).value);
      const costs = holds.map((_, i) => BigInt(i) * 100_000n); // 0 .. 0.0099 USD
      await Promise.all(holds.map((h, i) => settle({ holdId: h.id, usd: costs[i] })));
      const spent = costs.reduce((a, b) => a + b, 0n);
      assert.deepEqual((await balances(id))!.USD, { amount: usd('1') - spent, held: 0n, available: usd('1') - spent });
    });

    it('reservations from several processes (separate pools) cannot overspend', async function () {
      this.timeout(60_000);
      const id = await funded('1');
      const script = fileURLToPath(new URL('./support/reserveMany.ts', import.meta.url));
      const run = promisify(execFile);
      const outs = await Promise.all(
        [1, 2, 3].map((p) =>
          run(process.execPath, [
            '--import',
            'tsx',
            script,
            config.databaseUrl!,
            id,
            '100',
            usd('0.03').toString(),
            key(`proc${p}`),
          ]),
        ),
      );
      const total = outs.map((o) => JSON.parse(o.stdout).ok as number).reduce((a, b) => a + b, 0);
      assert.equal(total, 33);
      assert.equal((await balances(id))!.USD.available, usd('0.01'));
    });

    it('a refusal under a burst reports what was available to that very attempt, never more than the cost', async () => {
      // One reservation fits at a time; every winner releases at once, so money keeps coming back
      // while others are refused. The amount a refusal reports must be the one it was refused on.
      const id = await funded('0.015');
      const cost = usd('0.01');
      const refusals: bigint[] = [];
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          for (let i = 0; i < 15; i++) {
            try {
              const hold = await reserve({ accountId: id, usd: cost, idempotencyKey: key('burst') });
              await release(hold.id);
            } catch (err) {
              if (!(err instanceof InsufficientFunds)) throw err;
              assert.equal(err.requiredUsd, cost);
              refusals.push(err.availableUsd);
            }
          }
        }),
      );
      assert.ok(refusals.length > 0, 'the burst should have been refused at least once');
      const above = refusals.filter((a) => a >= cost);
      assert.deepEqual(above, [], `${above.length} of ${refusals.length} refusals reported more than the cost`);
      assert.ok(
        refusals.every((a) => a === usd('0.005')),
        `refusals reported ${[...new Set(refusals)].join(', ')}`,
      );
    });

    it('one idempotency key raced 50 times holds once', async () => {
      const id = await funded('1');
      const k = key('same');
      const holds = await Promise.all(
        Array.from({ length: 50 }, () => reserve({ accountId: id, usd: usd('0.2'), idempotencyKey: k })),
      );
      assert.equal(new Set(holds.map((h) => h.id)).size, 1);
      assert.equal((await balances(id))!.USD.held, usd('0.2'));
    });

    it('one hold settled 20 times at once is charged once', async () => {
      const id = await funded('1');
      const hold = await reserve({ accountId: id, usd: usd('0.2'), idempotencyKey: key('r') });
      await Promise.all(Array.from({ length: 20 }, () => settle({ holdId: hold.id, usd: usd('0.15') })));
      assert.equal((await balances(id))!.USD.amount, usd('0.85'));
    });

    it('debits, credits, reservations and settlements interleaved keep the books', async () => {
      const id = await funded('0.5');
      const ops = Array.from({ length: 300 }, async (_, i) => {
        try {
          if (i % 10 === 0)
            await credit({
              accountId: id,
              currency: 'USD',
              amount: usd('0.01'),
              reason: 'top-up',
              idempotencyKey: key('c'),
            });
          else if (i % 10 === 1)
            await debit({
              accountId: id,
              currency: 'USD',
              amount: usd('0.02'),
              reason: 'fee',
              idempotencyKey: key('d'),
            });
          else {
            const h = await reserve({ accountId: id, usd: usd('0.01'), idempotencyKey: key('r') });
            if (i % 3 === 0) await release(h.id);
            else await settle({ holdId: h.id, usd: usd('0.007') });
          }
        } catch (err) {
          if (!(err instanceof InsufficientFunds)) throw err;
        }
      });
      await Promise.all(ops);
      const b = (await balances(id))!.USD;
      assert.equal(b.held, 0n);
      assert.ok(b.amount >= 0n);
    });
  });
});
