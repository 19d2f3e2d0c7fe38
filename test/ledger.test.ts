import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { randomUUID } from 'node:crypto';
import { config } from '../activities/config.js';
import { createAccount } from '../activities/accounts/accounts.js';
import { balances, credit, debit, InsufficientFunds, LedgerError, recentEntries } from '../activities/ledger/ledger.js';
import { refund } from '../activities/ledger/refunds.js';
import { release, releaseExpiredHolds, reserve, settle } from '../activities/ledger/holds.js';
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

  it('a reservation under the key of a hold being settled answers that hold without waiting (it deadlocked)', async () => {
    const id = await funded('1');
    const k = key('retried');
    const hold = await reserve({ accountId: id, usd: usd('0.3'), idempotencyKey: k });
    // a settlement of that hold in flight: its row taken, the balance row next (as settle's statement does)
    const settling = await db().pool.connect();
    try {
      await settling.query('BEGIN');
      await settling.query(`UPDATE balance_holds SET status = 'settled', charged = 0 WHERE id = $1`, [hold.id]);
      // A second attempt reserving under the same key. Before, it locked the balance row and then
      // waited on the key's unique check for the settlement, which waited for the balance row.
      const again = reserve({ accountId: id, usd: usd('0.3'), idempotencyKey: k });
      const first = await Promise.race([again, new Promise((r) => setTimeout(() => r('still waiting'), 3000))]);
      assert.notEqual(first, 'still waiting', 'the second reservation waited for the settlement');
      assert.equal((first as Awaited<typeof again>).id, hold.id);
      // and the settlement gets the balance row
      await settling.query(`UPDATE balances SET updated_at = now() WHERE account_id = $1`, [id]);
    } finally {
      await settling.query('ROLLBACK');
      settling.release();
    }
    await release(hold.id);
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
    await new Promise((r) => setTimeout(r, 20)); // a fixed time on purpose: the hold's lifetime (0 s) has passed
    assert.ok((await releaseExpiredHolds()) >= 1);
    assert.equal((await balances(id))!.USD.held, 0n);
    // a request that finishes after its hold expired still pays for the work it got
    const s = await settle({ holdId: hold.id, usd: usd('0.1') });
    assert.equal(s.charged, usd('0.1'));
  });

  describe('refusals', () => {
    it('refuses amounts that are not positive before anything is written', async () => {
      const id = await funded('1');
      const move = { accountId: id, currency: 'USD' as const, reason: 'x', idempotencyKey: key('z') };
      await assert.rejects(async () => credit({ ...move, amount: 0n }), /a credit must be positive/);
      await assert.rejects(async () => credit({ ...move, amount: -1n }), /a credit must be positive/);
      await assert.rejects(async () => debit({ ...move, amount: 0n }), /a debit must be positive/);
      await assert.rejects(reserve({ accountId: id, usd: 0n, idempotencyKey: key('r') }), /must be positive/);
      const hold = await reserve({ accountId: id, usd: usd('0.1'), idempotencyKey: key('r') });
      await assert.rejects(settle({ holdId: hold.id, usd: -1n }), /cannot be negative/);
      await release(hold.id);
      const { rows } = await db().pool.query(`SELECT count(*)::int AS n FROM ledger_entries WHERE account_id = $1`, [
        id,
      ]);
      assert.equal(rows[0].n, 1); // the funding credit
    });

    it('refuses a replayed key that names another account or currency', async () => {
      const a = await funded('0');
      const b = await funded('0');
      const k = key('c');
      await credit({ accountId: a, currency: 'USD', amount: usd('1'), reason: 'x', idempotencyKey: k });
      await assert.rejects(
        credit({ accountId: b, currency: 'USD', amount: usd('1'), reason: 'x', idempotencyKey: k }),
        /already used for a different operation/,
      );
      await assert.rejects(
        credit({ accountId: a, currency: 'XNO', amount: usd('1'), reason: 'x', idempotencyKey: k }),
        /already used for a different operation/,
      );
      assert.equal((await balances(b))!.USD.amount, 0n);
      assert.equal((await balances(a))!.XNO.amount, 0n);
    });

    it('a debit that held funds do not leave room for says what it needed and what was free', async () => {
      const id = await funded('2');
      const hold = await reserve({ accountId: id, usd: usd('1.5'), idempotencyKey: key('r') });
      await assert.rejects(
        debit({ accountId: id, currency: 'USD', amount: usd('0.6'), reason: 'x', idempotencyKey: key('d') }),
        (err: unknown) => {
          assert.ok(err instanceof InsufficientFunds);
          assert.equal(err.requiredUsd, usd('0.6'));
          assert.equal(err.availableUsd, usd('0.5'));
          return true;
        },
      );
      await release(hold.id);
    });

    it('names what does not exist: an account, a hold, an entry to refund', async () => {
      const nobody = randomUUID();
      await assert.rejects(
        debit({ accountId: nobody, currency: 'USD', amount: 1n, reason: 'x', idempotencyKey: key('d') }),
        new RegExp(`account ${nobody} not found`),
      );
      await assert.rejects(
        reserve({ accountId: nobody, usd: 1n, idempotencyKey: key('r') }),
        new RegExp(`account ${nobody} not found`),
      );
      const hold = randomUUID();
      await assert.rejects(settle({ holdId: hold, usd: 1n }), new RegExp(`hold ${hold} not found`));
      assert.equal(await balances(nobody), undefined);
      await assert.rejects(
        refund({ entryId: 1n << 60n, reason: 'x', idempotencyKey: key('rf') }),
        /is not a charge or debit/,
      );
    });
  });

  describe('what replays and settlements answer', () => {
    it('a replayed reservation answers the first hold, with what is available now', async () => {
      const id = await funded('1');
      const k = key('r');
      const first = await reserve({ accountId: id, usd: usd('0.3'), idempotencyKey: k, requestId: 'req_a' });
      await debit({ accountId: id, currency: 'USD', amount: usd('0.2'), reason: 'fee', idempotencyKey: key('d') });
      const again = await reserve({ accountId: id, usd: usd('0.3'), idempotencyKey: k, requestId: 'req_a' });
      assert.deepEqual(again, { ...first, available: usd('0.5') });
      assert.equal((await balances(id))!.USD.held, usd('0.3'));
      await release(first.id);
    });

    it('a second settlement answers the first one, and moves nothing', async () => {
      const id = await funded('1');
      const hold = await reserve({ accountId: id, usd: usd('0.3'), idempotencyKey: key('r') });
      const first = await settle({ holdId: hold.id, usd: usd('0.1') });
      const again = await settle({ holdId: hold.id, usd: usd('0.2') });
      assert.deepEqual(again, first);
      assert.deepEqual(first, {
        holdId: hold.id,
        currency: 'USD',
        charged: usd('0.1'),
        balanceAfter: usd('0.9'),
        available: usd('0.9'),
      });
    });

    it('a cost above the reservation: what the balance and the available part are afterwards', async () => {
      const id = await funded('1');
      const other = await reserve({ accountId: id, usd: usd('0.2'), idempotencyKey: key('r') });
      const hold = await reserve({ accountId: id, usd: usd('0.1'), idempotencyKey: key('r') });
      const s = await settle({ holdId: hold.id, usd: usd('0.25'), reason: 'chat m via p' });
      assert.deepEqual(s, {
        holdId: hold.id,
        currency: 'USD',
        charged: usd('0.25'),
        balanceAfter: usd('0.75'),
        available: usd('0.55'),
      });
      const { rows } = await db().pool.query(
        `SELECT amount, balance_after, reason, idempotency_key FROM ledger_entries WHERE hold_id = $1 ORDER BY id`,
        [hold.id],
      );
      assert.deepEqual(
        rows.map((r) => [BigInt(r.amount), BigInt(r.balance_after), r.reason, r.idempotency_key]),
        [
          [-usd('0.1'), usd('0.9'), 'chat m via p', `charge:${hold.id}`],
          [-usd('0.15'), usd('0.75'), 'chat m via p', `overage:${hold.id}`],
        ],
      );
      await release(other.id);
    });

    it('a hold the sweeper released before the work finished is still charged, from what is free', async () => {
      const id = await funded('1');
      const hold = await reserve({ accountId: id, usd: usd('0.4'), idempotencyKey: key('r') });
      assert.equal(await release(hold.id, 'expired'), true);
      const other = await reserve({ accountId: id, usd: usd('0.9'), idempotencyKey: key('r') });
      const s = await settle({ holdId: hold.id, usd: usd('0.3') });
      assert.deepEqual(s, {
        holdId: hold.id,
        currency: 'USD',
        charged: usd('0.1'),
        balanceAfter: usd('0.9'),
        available: 0n,
      });
      // replayed (a retried job activity): the first answer, and nothing more is taken
      assert.deepEqual(await settle({ holdId: hold.id, usd: usd('0.3') }), s);
      const { rows } = await db().pool.query(
        `SELECT h.charged, e.amount, e.reason FROM balance_holds h JOIN ledger_entries e ON e.hold_id = h.id
         WHERE h.id = $1`,
        [hold.id],
      );
      assert.deepEqual(
        rows.map((r) => [BigInt(r.charged), BigInt(r.amount), r.reason]),
        [[usd('0.1'), -usd('0.1'), 'usage above reservation']],
      );
      await release(other.id);
    });

    it('a cost above the reservation when nothing else is free: the reservation, and no empty entry', async () => {
      const id = await funded('1');
      const hold = await reserve({ accountId: id, usd: usd('0.1'), idempotencyKey: key('r') });
      const rest = await reserve({ accountId: id, usd: usd('0.9'), idempotencyKey: key('r') });
      const s = await settle({ holdId: hold.id, usd: usd('0.5') });
      assert.equal(s.charged, usd('0.1'));
      const { rows } = await db().pool.query(`SELECT amount FROM ledger_entries WHERE hold_id = $1`, [hold.id]);
      assert.deepEqual(
        rows.map((r) => BigInt(r.amount)),
        [-usd('0.1')],
      );
      await release(rest.id);
    });
  });

  describe('XNO', () => {
    const xno = (s: string) => parseAmount(s, 'XNO');
    async function withXno(usdAmount: string, xnoAmount: string) {
      const id = await funded(usdAmount);
      await credit({
        accountId: id,
        currency: 'XNO',
        amount: xno(xnoAmount),
        reason: 'deposit',
        idempotencyKey: key('x'),
      });
      return id;
    }
    afterEach(() => {
      config.xnoUsdRate = undefined;
    });

    it('USD first while it covers the reservation', async () => {
      config.xnoUsdRate = '0.8';
      const id = await withXno('1', '10');
      const hold = await reserve({ accountId: id, usd: usd('0.5'), idempotencyKey: key('r') });
      assert.equal(hold.currency, 'USD');
      await release(hold.id);
    });

    it('a shortfall in both currencies reports the larger of what either could pay, in USD', async () => {
      config.xnoUsdRate = '0.8';
      const xnoRicher = await withXno('0.3', '1'); // 1 XNO = 0.8 USD
      const usdRicher = await withXno('0.9', '1');
      for (const [id, available] of [
        [xnoRicher, usd('0.8')],
        [usdRicher, usd('0.9')],
      ] as const) {
        await assert.rejects(reserve({ accountId: id, usd: usd('1'), idempotencyKey: key('r') }), (err: unknown) => {
          assert.ok(err instanceof InsufficientFunds);
          assert.equal(err.requiredUsd, usd('1'));
          assert.equal(err.availableUsd, available);
          return true;
        });
      }
    });

    it('a replayed XNO reservation and a cost above it are converted at the reservation’s own rate', async () => {
      config.xnoUsdRate = '0.8';
      const id = await withXno('0', '10');
      const k = key('r');
      const hold = await reserve({ accountId: id, usd: usd('1'), idempotencyKey: k });
      config.xnoUsdRate = '0.5'; // the rate moved since: a settlement still uses the hold's
      assert.deepEqual(await reserve({ accountId: id, usd: usd('1'), idempotencyKey: k }), hold);
      assert.deepEqual(hold, {
        id: hold.id,
        accountId: id,
        currency: 'XNO',
        amount: xno('1.25'),
        quotedUsd: usd('1'),
        available: xno('8.75'),
      });
      const s = await settle({ holdId: hold.id, usd: usd('1.2') });
      // 1 USD of it was reserved (1.25 XNO); the 0.2 USD above it is 0.25 XNO more
      assert.deepEqual(s, {
        holdId: hold.id,
        currency: 'XNO',
        charged: xno('1.5'),
        balanceAfter: xno('8.5'),
        available: xno('8.5'),
      });
    });
  });

  describe('the hold sweeper and the operator’s views', () => {
    it('releases expired holds, at most `limit` at a time, marking them expired', async () => {
      const id = await funded('1');
      const holds = [];
      for (let i = 0; i < 3; i++)
        holds.push(await reserve({ accountId: id, usd: usd('0.1'), idempotencyKey: key('r'), ttlSeconds: 0 }));
      const kept = await reserve({ accountId: id, usd: usd('0.1'), idempotencyKey: key('r') });
      await new Promise((r) => setTimeout(r, 20)); // a fixed time on purpose: the 0 s holds have expired
      assert.equal(await releaseExpiredHolds(1), 1);
      while ((await releaseExpiredHolds(2)) > 0);
      const { rows } = await db().pool.query(`SELECT id, status FROM balance_holds WHERE account_id = $1`, [id]);
      const status = Object.fromEntries(rows.map((r) => [r.id, r.status]));
      assert.deepEqual(
        holds.map((h) => status[h.id]),
        ['expired', 'expired', 'expired'],
      );
      assert.equal(status[kept.id], 'active');
      assert.equal((await balances(id))!.USD.held, usd('0.1'));
      assert.equal(await release(kept.id), true);
      const again = await db().pool.query(`SELECT status FROM balance_holds WHERE id = $1`, [kept.id]);
      assert.equal(again.rows[0].status, 'released');
    });

    it('lists an account’s entries newest first, as many as asked', async () => {
      const id = await funded('1');
      await debit({ accountId: id, currency: 'USD', amount: usd('0.1'), reason: 'fee', idempotencyKey: key('d') });
      await debit({ accountId: id, currency: 'USD', amount: usd('0.2'), reason: 'fee 2', idempotencyKey: key('d') });
      const two = await recentEntries(id, 2);
      assert.deepEqual(
        two.map((e) => [e.kind, e.amount, e.balanceAfter, e.reason, e.currency, e.accountId]),
        [
          ['debit', -usd('0.2'), usd('0.7'), 'fee 2', 'USD', id],
          ['debit', -usd('0.1'), usd('0.9'), 'fee', 'USD', id],
        ],
      );
      assert.equal((await recentEntries(id)).length, 3);
    });
  });

  describe('refunds', () => {
    it('refunds what is left of a charge when no amount is given, once per key, never a credit', async () => {
      const id = await funded('1');
      const hold = await reserve({ accountId: id, usd: usd('0.5'), idempotencyKey: key('r') });
      await settle({ holdId: hold.id, usd: usd('0.4') });
      const { rows } = await db().pool.query(`SELECT id FROM ledger_entries WHERE hold_id = $1`, [hold.id]);
      const entryId = BigInt(rows[0].id);
      await refund({ entryId, amount: usd('0.1'), reason: 'goodwill', idempotencyKey: key('rf') });
      const k = key('rf');
      const rest = await refund({ entryId, reason: 'the rest', idempotencyKey: k });
      assert.deepEqual(
        [rest.kind, rest.amount, rest.balanceAfter, rest.reason],
        ['refund', usd('0.3'), usd('1'), 'the rest'],
      );
      assert.deepEqual(await refund({ entryId, reason: 'the rest', idempotencyKey: k }), rest);
      await assert.rejects(
        refund({ entryId, amount: 1n, reason: 'more', idempotencyKey: key('rf') }),
        /at most 0 can still be refunded/,
      );
      await assert.rejects(refund({ entryId, amount: 0n, reason: 'none', idempotencyKey: key('rf') }), LedgerError);
      const [fundingCredit] = (await recentEntries(id, 10)).filter((e) => e.kind === 'credit');
      await assert.rejects(
        refund({ entryId: fundingCredit.id, reason: 'no', idempotencyKey: key('rf') }),
        /is not a charge or debit/,
      );
      assert.equal((await balances(id))!.USD.amount, usd('1'));
    });
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
