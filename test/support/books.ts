// The books-balance check every money test ends with: for each (account, currency) the stored
// balance equals the sum of its ledger entries, and `held` equals the sum of its active holds.
import assert from 'node:assert/strict';
import { db } from '../../activities/db.js';
import { flushLeases } from '../../activities/ledger/leases.js';
import { balances } from '../../activities/ledger/ledger.js';
import { releaseExpiredHolds } from '../../activities/ledger/holds.js';

export async function assertBooksBalance(accountId?: string): Promise<void> {
  // charges taken from credit leases are written every few milliseconds; write them now
  await flushLeases();
  const { rows } = await db().pool.query(
    `SELECT b.account_id, b.currency, b.amount, b.held,
            (SELECT COALESCE(SUM(e.amount), 0) FROM ledger_entries e WHERE e.account_id = b.account_id AND e.currency = b.currency) AS entries,
            (SELECT COALESCE(SUM(h.amount - COALESCE(h.charged, 0)), 0) FROM balance_holds h WHERE h.account_id = b.account_id AND h.currency = b.currency AND h.status = 'active') AS holds
     FROM balances b WHERE $1::uuid IS NULL OR b.account_id = $1::uuid`,
    [accountId ?? null],
  );
  for (const r of rows) {
    assert.equal(
      r.amount,
      r.entries,
      `balance ${r.account_id}/${r.currency} = ${r.amount} but its entries sum to ${r.entries}`,
    );
    assert.equal(
      r.held,
      r.holds,
      `held ${r.account_id}/${r.currency} = ${r.held} but its active holds sum to ${r.holds}`,
    );
    assert.ok(
      BigInt(r.amount) >= 0n && BigInt(r.held) >= 0n && BigInt(r.held) <= BigInt(r.amount),
      `balance out of bounds: ${JSON.stringify(r)}`,
    );
  }
}

/**
 * The account's balances once this process's credit leases have written their charges and given
 * back what requests no longer need (in production both happen within milliseconds to seconds).
 */
export async function settledBalances(accountId: string) {
  await flushLeases({ close: true });
  return (await balances(accountId))!;
}

/**
 * After a worker was killed: what the account still holds must be the dead process's credit
 * leases and nothing else (batch rows pay from leases: activities/batches/run.ts). The hold sweeper
 * gives them back once they expire; here they are made to expire now and swept, and the books
 * checked again.
 */
export async function sweepDeadLeases(accountId: string): Promise<void> {
  const { rows } = await db().pool.query(
    `SELECT idempotency_key FROM balance_holds WHERE account_id = $1 AND status = 'active'`,
    [accountId],
  );
  for (const h of rows) assert.match(h.idempotency_key, /^lease:/, 'only a dead worker’s lease is still held');
  await db().pool.query(`UPDATE balance_holds SET expires_at = now() WHERE account_id = $1 AND status = 'active'`, [
    accountId,
  ]);
  while ((await releaseExpiredHolds()) > 0);
  await assertBooksBalance(accountId);
}
