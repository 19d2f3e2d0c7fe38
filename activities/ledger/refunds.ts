// Refunds: all or part of a charge or debit given back, as entries of their own (never a
// deletion), each under its own idempotency key. Part of the ledger (ledger.ts states its
// invariants); refunds always wait for disk.
import { db, isUniqueViolation } from '../db.js';
import { ENTRY_COLUMNS, type Entry, entryByKey, LedgerError, toEntry } from './ledger.js';

/**
 * Give back all or part of an earlier charge or debit. Refunds of one entry never exceed it,
 * even when several race (the original entry's row is locked while they are added up).
 */
export async function refund(a: {
  entryId: bigint;
  amount?: bigint;
  reason: string;
  idempotencyKey: string;
}): Promise<Entry> {
  const prior = await entryByKey(a.idempotencyKey);
  if (prior) return prior;
  const client = await db().pool.connect();
  try {
    await client.query('BEGIN');
    const { rows } = await client.query(
      `SELECT account_id, currency, amount, kind FROM ledger_entries WHERE id = $1 FOR UPDATE`,
      [a.entryId.toString()],
    );
    const orig = rows[0];
    if (!orig || (orig.kind !== 'charge' && orig.kind !== 'debit'))
      throw new LedgerError(`entry ${a.entryId} is not a charge or debit`);
    const { rows: sum } = await client.query(
      `SELECT COALESCE(SUM(amount), 0) AS refunded FROM ledger_entries WHERE refund_of = $1`,
      [a.entryId.toString()],
    );
    const refundable = -BigInt(orig.amount) - BigInt(sum[0].refunded);
    const amount = a.amount ?? refundable;
    if (amount <= 0n || amount > refundable)
      throw new LedgerError(`at most ${refundable} can still be refunded from entry ${a.entryId}`);
    const { rows: out } = await client.query(
      `WITH b AS (
         UPDATE balances SET amount = amount + $3::numeric, updated_at = now()
         WHERE account_id = $1 AND currency = $2::"Currency" RETURNING account_id, currency, amount
       )
       INSERT INTO ledger_entries (account_id, currency, amount, balance_after, kind, reason, idempotency_key, refund_of)
       SELECT account_id, currency, $3::numeric, amount, 'refund', $4, $5, $6 FROM b RETURNING ${ENTRY_COLUMNS}`,
      [orig.account_id, orig.currency, amount.toString(), a.reason, a.idempotencyKey, a.entryId.toString()],
    );
    await client.query('COMMIT');
    return toEntry(out[0]);
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    if (isUniqueViolation(err)) {
      const again = await entryByKey(a.idempotencyKey);
      if (again) return again;
    }
    throw err;
  } finally {
    client.release();
  }
}

/**
 * Give back, in full, the charge entries under `keys` (idempotency keys such as `charge:<hold>`)
 * that have not been refunded yet: a request whose answer never reached its caller. One
 * transaction; each refund is an entry `refund:<charge key>`, so a replay refunds nothing twice.
 * The key's daily spend (what its USD cap counts) goes down by `keyUsd`, once, if anything was
 * refunded. Returns how much was given back, in the entries' currency.
 */
export async function refundCharges(a: {
  keys: string[];
  reason: string;
  apiKeyId: string | null;
  keyUsd: bigint;
}): Promise<bigint> {
  const client = await db().pool.connect();
  try {
    await client.query('BEGIN');
    const { rows } = await client.query(
      `SELECT e.id, e.account_id, e.currency, e.amount, e.idempotency_key, e.hold_id, e.request_id, e.team_id, e.actor_user_id,
              (e.created_at AT TIME ZONE 'UTC')::date::text AS day
       FROM ledger_entries e
       WHERE e.idempotency_key = ANY($1::text[]) AND e.kind = 'charge'
         AND NOT EXISTS (SELECT 1 FROM ledger_entries r WHERE r.idempotency_key = 'refund:' || e.idempotency_key)
       ORDER BY e.id FOR UPDATE`,
      [a.keys],
    );
    let refunded = 0n;
    let day: unknown;
    for (const e of rows) {
      const amount = -BigInt(e.amount);
      await client.query(
        `WITH b AS (
           UPDATE balances SET amount = amount + $3::numeric, updated_at = now()
           WHERE account_id = $1 AND currency = $2::"Currency" RETURNING amount
         )
         INSERT INTO ledger_entries (account_id, currency, amount, balance_after, kind, reason, idempotency_key, hold_id,
                                     request_id, refund_of, team_id, actor_user_id)
         SELECT $1, $2::"Currency", $3::numeric, b.amount, 'refund', $4, 'refund:' || $5::text, $6, $7, $8, $9, $10 FROM b`,
        [
          e.account_id,
          e.currency,
          amount.toString(),
          a.reason,
          e.idempotency_key,
          e.hold_id,
          e.request_id,
          e.id,
          e.team_id,
          e.actor_user_id,
        ],
      );
      refunded += amount;
      day = e.day;
    }
    if (refunded > 0n && a.apiKeyId && a.keyUsd > 0n) {
      await client.query(
        `UPDATE key_daily_usage SET usd_spent = GREATEST(usd_spent - $3::numeric, 0) WHERE key_id = $1 AND day = $2::date`,
        [a.apiKeyId, day, a.keyUsd.toString()],
      );
    }
    await client.query('COMMIT');
    return refunded;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    // a refund raced this one and won (its entry key is taken): everything is given back already
    if (isUniqueViolation(err)) return 0n;
    throw err;
  } finally {
    client.release();
  }
}
