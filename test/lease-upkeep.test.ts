// What the credit leases' timer does on its own (activities/ledger/leases.ts): writes the charges
// taken from a lease within milliseconds, keeps one lease for an account's requests while they
// come, and gives an idle lease back. The other lease tests call flushLeases() themselves, which
// a running gateway never does.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createAccount } from '../activities/accounts/accounts.js';
import { parseAmount } from '../activities/core/money.js';
import { db } from '../activities/db.js';
import { flushLeases, reserveFromLease, settleLeased } from '../activities/ledger/leases.js';
import { balances, credit } from '../activities/ledger/ledger.js';
import { assertBooksBalance } from './support/books.js';

const usd = (s: string) => parseAmount(s, 'USD');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function funded(amount: string): Promise<string> {
  const a = await createAccount(`lease-upkeep-${randomUUID()}`);
  await credit({ accountId: a.id, currency: 'USD', amount: usd(amount), reason: 'test', idempotencyKey: `f:${a.id}` });
  return a.id;
}

/** One request paid from a lease; what its settlement says the account can still spend. */
async function spend(accountId: string, cost: bigint) {
  const requestId = `req_${randomUUID().replace(/-/g, '')}`;
  const share = await reserveFromLease(accountId, cost);
  assert.ok(share, 'a lease share');
  const s = settleLeased(share, { usd: cost, requestId, apiKeyId: null, reason: 'test' });
  return { requestId, available: s.available };
}

/** Polls `check` until it holds or `ms` have passed. */
async function within(ms: number, check: () => Promise<boolean>): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return true;
    await sleep(10);
  }
  return check();
}

async function leaseHolds(accountId: string) {
  const { rows } = await db().pool.query(
    `SELECT id, status FROM balance_holds WHERE account_id = $1 AND idempotency_key LIKE 'lease:%'`,
    [accountId],
  );
  return rows;
}

describe('credit leases on their own', function () {
  this.timeout(30_000);
  afterEach(async () => {
    await flushLeases({ close: true });
    await assertBooksBalance();
  });

  it('writes a charge taken from a lease within milliseconds, unasked', async () => {
    const id = await funded('10');
    const { requestId } = await spend(id, usd('0.001'));
    const written = await within(1000, async () => {
      const { rows } = await db().pool.query(`SELECT 1 FROM ledger_entries WHERE idempotency_key = $1`, [
        `charge:${requestId}`,
      ]);
      return rows.length === 1;
    });
    assert.ok(written, 'the charge was written by the lease timer');
    assert.equal((await balances(id))!.USD.amount, usd('9.999'));
  });

  it('serves an account’s requests from one lease while they come, each told what is left to spend', async () => {
    const id = await funded('10');
    let spent = 0n;
    for (let i = 1; i <= 5; i++) {
      const cost = usd('0.001') * BigInt(i);
      const { available } = await spend(id, cost);
      spent += cost;
      assert.equal(available, usd('10') - spent, `request ${i}`);
      await sleep(60); // several ticks of the timer between requests
    }
    assert.equal((await leaseHolds(id)).length, 1);
  });

  it('gives an idle lease back after a couple of seconds', async () => {
    const id = await funded('10');
    await spend(id, usd('0.001'));
    assert.ok((await balances(id))!.USD.held > 0n);
    const returned = await within(5000, async () => (await balances(id))!.USD.held === 0n);
    assert.ok(returned, 'the idle lease was given back');
    assert.deepEqual(
      (await leaseHolds(id)).map((h) => h.status),
      ['settled'],
    );
    assert.equal((await balances(id))!.USD.amount, usd('9.999'));
  });

  it('leases nothing for nothing', async () => {
    const id = await funded('10');
    assert.equal(await reserveFromLease(id, 0n), undefined);
    assert.deepEqual(await leaseHolds(id), []);
  });
});
