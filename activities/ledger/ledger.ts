// The one module that moves money, with its two siblings: holds.ts (reserve, settle, release) and
// refunds.ts (refunds of charges and debits); this file has the entries, credits, debits and
// balances. Each operation is a single SQL statement (one round trip, atomic by construction)
// except the two rare paths that need a row lock (overage, refund). Reserve, settle and release
// run on db().requestPool (asynchronous commit; see activities/db.ts for why and what it risks);
// credits, debits and refunds always wait for disk.
// Invariants kept here and checked by test/ledger.test.ts:
//  - balances.amount == SUM(ledger_entries.amount) per (account, currency);
//  - 0 <= held <= amount (also CHECK constraints in the database);
//  - every entry and hold has a unique idempotency key: replaying an operation returns the
//    first result instead of moving money again.
import { db, isUniqueViolation } from '../db.js';
import type { Currency } from '../core/money.js';

type LedgerKind = 'credit' | 'debit' | 'charge' | 'refund';

export interface Entry {
  id: bigint;
  accountId: string;
  currency: Currency;
  amount: bigint;
  balanceAfter: bigint;
  kind: LedgerKind;
  reason: string | null;
  idempotencyKey: string;
  createdAt: Date;
}

export interface BalanceView {
  amount: bigint;
  held: bigint;
  available: bigint;
}

export class InsufficientFunds extends Error {
  constructor(
    readonly requiredUsd: bigint,
    readonly availableUsd: bigint,
  ) {
    super('Insufficient balance');
  }
}

export class LedgerError extends Error {}

export const ENTRY_COLUMNS = `id, account_id, currency, amount, balance_after, kind, reason, idempotency_key, created_at`;

export function toEntry(r: Record<string, unknown>): Entry {
  return {
    id: BigInt(r.id as string),
    accountId: r.account_id as string,
    currency: r.currency as Currency,
    amount: BigInt(r.amount as string),
    balanceAfter: BigInt(r.balance_after as string),
    kind: r.kind as LedgerKind,
    reason: (r.reason as string | null) ?? null,
    idempotencyKey: r.idempotency_key as string,
    createdAt: r.created_at as Date,
  };
}

export async function entryByKey(idempotencyKey: string): Promise<Entry | undefined> {
  const { rows } = await db().pool.query(`SELECT ${ENTRY_COLUMNS} FROM ledger_entries WHERE idempotency_key = $1`, [
    idempotencyKey,
  ]);
  return rows[0] ? toEntry(rows[0]) : undefined;
}

/** Replaying a key must mean replaying the same operation; anything else is a caller bug. */
function sameOperation(e: Entry, accountId: string, currency: Currency, amount: bigint): Entry {
  if (e.accountId !== accountId || e.currency !== currency || e.amount !== amount) {
    throw new LedgerError(`idempotency key "${e.idempotencyKey}" was already used for a different operation`);
  }
  return e;
}

/**
 * Post a signed amount to a balance. A negative amount (debit) only succeeds if it leaves the
 * held part covered; otherwise InsufficientFunds and nothing is written.
 */
async function post(
  accountId: string,
  currency: Currency,
  amount: bigint,
  kind: LedgerKind,
  reason: string | null,
  idempotencyKey: string,
): Promise<Entry> {
  try {
    const { rows } = await db().pool.query(
      `WITH b AS (
         UPDATE balances SET amount = amount + $3::numeric, updated_at = now()
         WHERE account_id = $1 AND currency = $2::"Currency" AND amount - held + $3::numeric >= 0
         RETURNING account_id, currency, amount
       )
       INSERT INTO ledger_entries (account_id, currency, amount, balance_after, kind, reason, idempotency_key)
       SELECT b.account_id, b.currency, $3::numeric, b.amount, $4::"LedgerKind", $5, $6 FROM b
       RETURNING ${ENTRY_COLUMNS}`,
      [accountId, currency, amount.toString(), kind, reason, idempotencyKey],
    );
    if (rows[0]) return toEntry(rows[0]);
  } catch (err) {
    // The whole statement rolled back; the first operation with this key stands.
    if (!isUniqueViolation(err)) throw err;
    const prior = await entryByKey(idempotencyKey);
    if (prior) return sameOperation(prior, accountId, currency, amount);
    throw err;
  }
  const bal = await balances(accountId);
  if (!bal) throw new LedgerError(`account ${accountId} not found`);
  throw new InsufficientFunds(-amount, bal[currency].available);
}

export function credit(a: {
  accountId: string;
  currency: Currency;
  amount: bigint;
  reason: string;
  idempotencyKey: string;
}) {
  if (a.amount <= 0n) throw new LedgerError('a credit must be positive');
  return post(a.accountId, a.currency, a.amount, 'credit', a.reason, a.idempotencyKey);
}

export function debit(a: {
  accountId: string;
  currency: Currency;
  amount: bigint;
  reason: string;
  idempotencyKey: string;
}) {
  if (a.amount <= 0n) throw new LedgerError('a debit must be positive');
  return post(a.accountId, a.currency, -a.amount, 'debit', a.reason, a.idempotencyKey);
}

export async function balances(accountId: string): Promise<Record<Currency, BalanceView> | undefined> {
  const { rows } = await db().pool.query(`SELECT currency, amount, held FROM balances WHERE account_id = $1`, [
    accountId,
  ]);
  if (rows.length === 0) return undefined;
  const out = { USD: { amount: 0n, held: 0n, available: 0n }, XNO: { amount: 0n, held: 0n, available: 0n } };
  for (const r of rows) {
    const amount = BigInt(r.amount);
    const held = BigInt(r.held);
    out[r.currency as Currency] = { amount, held, available: amount - held };
  }
  return out;
}

export async function recentEntries(accountId: string, limit = 20): Promise<Entry[]> {
  const { rows } = await db().pool.query(
    `SELECT ${ENTRY_COLUMNS} FROM ledger_entries WHERE account_id = $1 ORDER BY id DESC LIMIT $2`,
    [accountId, limit],
  );
  return rows.map(toEntry);
}
