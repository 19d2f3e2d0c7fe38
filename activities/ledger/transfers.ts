// Money that moves from one account to another through a hold: a credit invitation holds part of
// its issuer's balance, and redeeming it pays that hold out to the redeemer. One statement posts
// both sides (the issuer's `debit` against the hold, the redeemer's `credit`), so the two entries
// and the two balance changes exist together or not at all; it runs on the caller's transaction,
// so the invitation's own row changes commit with it. Each entry has its own idempotency key
// (`<key>:debit`, `<key>:credit`): a replay hits the unique index and the transaction rolls back.
import type { PoolClient } from 'pg';
import type { Currency } from '../core/money.js';
import { LedgerError } from './ledger.js';

export interface Transfer {
  currency: Currency;
  amount: bigint;
  /** the redeemer's balance after the credit */
  balanceAfter: bigint;
}

/**
 * Settle an active hold in full as a debit of its account and credit the same amount to
 * `toAccountId`. Undefined when the hold is no longer active (released, expired, settled): nothing
 * moved. Throws if the receiving account has no balance in the hold's currency (the caller's
 * transaction then rolls the debit back with everything else).
 */
export async function payOutHold(
  c: PoolClient,
  a: { holdId: string; toAccountId: string; reason: string; idempotencyKey: string },
): Promise<Transfer | undefined> {
  const { rows } = await c.query(
    `WITH h AS (
       UPDATE balance_holds SET status = 'settled', closed_at = now(), charged = amount
       WHERE id = $1 AND status = 'active' AND account_id <> $2
       RETURNING id, account_id, currency, amount
     ), src AS (
       UPDATE balances bal SET held = bal.held - h.amount, amount = bal.amount - h.amount, updated_at = now()
       FROM h WHERE bal.account_id = h.account_id AND bal.currency = h.currency
       RETURNING bal.amount AS balance_after
     ), dst AS (
       UPDATE balances bal SET amount = bal.amount + h.amount, updated_at = now()
       FROM h WHERE bal.account_id = $2 AND bal.currency = h.currency
       RETURNING bal.amount AS balance_after
     ), d AS (
       INSERT INTO ledger_entries (account_id, currency, amount, balance_after, kind, reason, idempotency_key, hold_id)
       SELECT h.account_id, h.currency, -h.amount, src.balance_after, 'debit', $3, $4 || ':debit', h.id FROM h, src
     ), k AS (
       INSERT INTO ledger_entries (account_id, currency, amount, balance_after, kind, reason, idempotency_key)
       SELECT $2, h.currency, h.amount, dst.balance_after, 'credit', $3, $4 || ':credit' FROM h, dst
     )
     SELECT h.currency, h.amount, (SELECT balance_after FROM dst) AS dst_after FROM h`,
    [a.holdId, a.toAccountId, a.reason, a.idempotencyKey],
  );
  const r = rows[0];
  if (!r) return undefined;
  if (r.dst_after === null) throw new LedgerError(`account ${a.toAccountId} has no ${r.currency} balance`);
  return { currency: r.currency, amount: BigInt(r.amount), balanceAfter: BigInt(r.dst_after) };
}
