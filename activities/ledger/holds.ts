// Holds: a request's worst case reserved against a balance (one conditional statement), then
// settled at what it cost with the rest released, or released untouched; the sweeper releases
// what a crashed request left. Part of the ledger (ledger.ts states its invariants); these run on
// db().requestPool (asynchronous commit; see activities/db.ts).
import { config } from '../config.js';
import { type Currency, parseAmount, usdToXno } from '../core/money.js';
import { db, isUniqueViolation } from '../db.js';
import { InsufficientFunds, LedgerError } from './ledger.js';
import { releaseStaleTeamBudgetHolds } from './teamBudget.js';

export interface Hold {
  id: string;
  accountId: string;
  currency: Currency;
  /** reserved, in the hold's currency */
  amount: bigint;
  /** what the reservation is worth in USD (equal to amount for USD holds) */
  quotedUsd: bigint;
  /** what can still be reserved after this hold, in the hold's currency */
  available: bigint;
}

export interface Settlement {
  holdId: string;
  currency: Currency;
  /** charged, in the hold's currency */
  charged: bigint;
  balanceAfter: bigint;
  available: bigint;
}

// The balance row is locked and read first (`cur`), and the hold is taken only if what that read
// shows covers it: a refusal reports the very amount it was refused on, read under the same
// lock, never a later (possibly larger) one. In READ COMMITTED a FOR UPDATE read returns the
// newest committed row, and the UPDATE after it in the same statement finds that row locked by
// us. The UPDATE's own WHERE must not test the balance: it would test the statement's snapshot,
// which may be older than `cur` (a release committed meanwhile) and refuse what `cur` allows.
// Its SET adds the hold only where the row it is computed on has room, because PostgreSQL checks
// the CHECK constraints on that first (possibly stale) version before it moves on to the newest.
//
// A hold already taken under the same idempotency key (`prior`: a retried job step, a second
// attempt of a batch row) is answered without locking the balance. Locking it first deadlocked:
// the INSERT's unique check on the key waits for whoever is settling or releasing that earlier
// hold, and that statement, holding the hold's row, waits for the balance row this one holds.
const HOLD_INSERT = `
  WITH prior AS (
    SELECT id FROM balance_holds WHERE idempotency_key = $5
  ), cur AS (
    SELECT amount - held AS available FROM balances
    WHERE account_id = $1 AND currency = $2::"Currency" AND NOT EXISTS (SELECT 1 FROM prior) FOR UPDATE
  ), b AS (
    UPDATE balances
    SET held = held + CASE WHEN amount - held >= $3::numeric THEN $3::numeric ELSE 0 END, updated_at = now()
    WHERE account_id = $1 AND currency = $2::"Currency" AND (SELECT available FROM cur) >= $3::numeric
    RETURNING amount - held AS available
  ), h AS (
    INSERT INTO balance_holds (id, account_id, currency, amount, quoted_usd, idempotency_key, request_id, api_key_id,
                               expires_at, team_id, actor_user_id)
    SELECT gen_random_uuid(), $1, $2::"Currency", $3::numeric, $4::numeric, $5, $6, $7, now() + make_interval(secs => $8),
           $9, $10
    FROM b
    RETURNING id
  )
  SELECT (SELECT id FROM h) AS id, (SELECT available FROM b) AS available, (SELECT available FROM cur) AS seen,
         EXISTS (SELECT 1 FROM prior) AS prior`;

/**
 * Reserve the worst case of a request, priced in USD, as one conditional update: USD first,
 * then XNO at the configured rate. Throws InsufficientFunds when neither balance covers it.
 */
export async function reserve(a: {
  accountId: string;
  usd: bigint;
  idempotencyKey: string;
  requestId?: string;
  apiKeyId?: string;
  ttlSeconds?: number;
  /** billed to a team (its owner's account is `accountId`): the charge entry names the team and the member */
  team?: { teamId: number; actorUserId: number };
}): Promise<Hold> {
  if (a.usd <= 0n) throw new LedgerError('a reservation must be positive');
  const ttl = a.ttlSeconds ?? config.holdTtlSeconds;
  const tries: Array<[Currency, bigint]> = [['USD', a.usd]];
  const rate = config.xnoUsdRate ? parseAmount(config.xnoUsdRate, 'USD') : 0n;
  if (rate > 0n) tries.push(['XNO', usdToXno(a.usd, rate)]);

  // what each currency had available when its attempt was refused (null: no such balance row)
  const seen: Partial<Record<Currency, bigint | null>> = {};
  for (const [currency, amount] of tries) {
    try {
      const { rows } = await db().requestPool.query({
        name: 'ledger_reserve',
        text: HOLD_INSERT,
        values: [
          a.accountId,
          currency,
          amount.toString(),
          a.usd.toString(),
          a.idempotencyKey,
          a.requestId ?? null,
          a.apiKeyId ?? null,
          ttl,
          a.team?.teamId ?? null,
          a.team?.actorUserId ?? null,
        ],
      });
      if (rows[0].prior) {
        const prior = await holdByKey(a.idempotencyKey);
        if (prior) return prior;
      }
      if (rows[0].id) {
        return {
          id: rows[0].id,
          accountId: a.accountId,
          currency,
          amount,
          quotedUsd: a.usd,
          available: BigInt(rows[0].available),
        };
      }
      seen[currency] = rows[0].seen === null ? null : BigInt(rows[0].seen);
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
      const prior = await holdByKey(a.idempotencyKey);
      if (prior) return prior;
      throw err;
    }
  }
  if (seen.USD === null && seen.XNO == null) throw new LedgerError(`account ${a.accountId} not found`);
  const usdSeen = seen.USD ?? 0n;
  const xnoAsUsd = rate > 0n && seen.XNO ? (seen.XNO * rate) / 10n ** 30n : 0n;
  throw new InsufficientFunds(a.usd, usdSeen > xnoAsUsd ? usdSeen : xnoAsUsd);
}

async function holdByKey(idempotencyKey: string): Promise<Hold | undefined> {
  const { rows } = await db().pool.query(
    `SELECT h.id, h.account_id, h.currency, h.amount, h.quoted_usd, b.amount - b.held AS available
     FROM balance_holds h JOIN balances b ON b.account_id = h.account_id AND b.currency = h.currency
     WHERE h.idempotency_key = $1`,
    [idempotencyKey],
  );
  const r = rows[0];
  if (!r) return undefined;
  return {
    id: r.id,
    accountId: r.account_id,
    currency: r.currency,
    amount: BigInt(r.amount),
    quotedUsd: BigInt(r.quoted_usd),
    available: BigInt(r.available),
  };
}

/**
 * Charge the actual cost (USD) of a held request and release the rest, in one statement. The
 * charge is capped at the hold; a cost above it (an estimate that fell short) is taken from
 * what is still available, as far as it goes, on the rare overage path. Idempotent per hold.
 */
export async function settle(a: { holdId: string; usd: bigint; reason?: string }): Promise<Settlement> {
  if (a.usd < 0n) throw new LedgerError('a charge cannot be negative');
  const { rows } = await db().requestPool.query({
    name: 'ledger_settle',
    text: `WITH h AS (
       UPDATE balance_holds
       SET status = 'settled', closed_at = now(),
           charged = LEAST(amount, CASE WHEN currency = 'USD' THEN $2::numeric
                                        ELSE div($2::numeric * amount + quoted_usd - 1, quoted_usd) END)
       WHERE id = $1 AND status = 'active'
       RETURNING id, account_id, currency, amount, charged, quoted_usd, request_id, api_key_id, team_id, actor_user_id
     ), b AS (
       UPDATE balances bal SET held = bal.held - h.amount, amount = bal.amount - h.charged, updated_at = now()
       FROM h WHERE bal.account_id = h.account_id AND bal.currency = h.currency
       RETURNING bal.amount AS balance_after, bal.amount - bal.held AS available
     ), e AS (
       INSERT INTO ledger_entries (account_id, currency, amount, balance_after, kind, reason, idempotency_key, hold_id,
                                   request_id, team_id, actor_user_id)
       SELECT h.account_id, h.currency, -h.charged, b.balance_after, 'charge', $3, 'charge:' || h.id, h.id, h.request_id,
              h.team_id, h.actor_user_id
       FROM h, b WHERE h.charged > 0
     ), k AS (
       INSERT INTO key_daily_usage (key_id, day, requests, usd_spent)
       SELECT h.api_key_id, (now() AT TIME ZONE 'UTC')::date, 0,
              CASE WHEN h.currency = 'USD' THEN h.charged ELSE div(h.charged * h.quoted_usd + h.amount - 1, h.amount) END
       FROM h WHERE h.api_key_id IS NOT NULL AND h.charged > 0
       ON CONFLICT (key_id, day) DO UPDATE SET usd_spent = key_daily_usage.usd_spent + EXCLUDED.usd_spent
     )
     SELECT h.currency, h.amount, h.charged, h.quoted_usd, b.balance_after, b.available FROM h, b`,
    values: [a.holdId, a.usd.toString(), a.reason ?? null],
  });
  const r = rows[0];
  if (!r) return settledEarlier(a.holdId, a.usd, a.reason);
  const result: Settlement = {
    holdId: a.holdId,
    currency: r.currency,
    charged: BigInt(r.charged),
    balanceAfter: BigInt(r.balance_after),
    available: BigInt(r.available),
  };
  if (a.usd > BigInt(r.quoted_usd))
    return chargeOverage(
      a.holdId,
      result,
      a.usd - BigInt(r.quoted_usd),
      BigInt(r.quoted_usd),
      BigInt(r.amount),
      a.reason,
    );
  return result;
}

/** A second settle of the same hold returns the first result; a hold the sweeper already released is charged directly. */
async function settledEarlier(holdId: string, usd: bigint, reason?: string): Promise<Settlement> {
  const { rows } = await db().pool.query(
    `SELECT h.status, h.currency, h.amount, h.quoted_usd, h.charged, b.amount AS balance, b.amount - b.held AS available
     FROM balance_holds h JOIN balances b ON b.account_id = h.account_id AND b.currency = h.currency WHERE h.id = $1`,
    [holdId],
  );
  const r = rows[0];
  if (!r) throw new LedgerError(`hold ${holdId} not found`);
  const base: Settlement = {
    holdId,
    currency: r.currency,
    charged: BigInt(r.charged ?? 0),
    balanceAfter: BigInt(r.balance),
    available: BigInt(r.available),
  };
  // Settled, or released and then charged by an earlier late settlement (only that sets `charged`
  // on a released hold): the first result stands.
  if (r.status === 'settled' || r.charged !== null) return base;
  // Released or expired before the work finished: the work was done, so it is still owed.
  return chargeOverage(holdId, { ...base, charged: 0n }, usd, BigInt(r.quoted_usd), BigInt(r.amount), reason);
}

/** Take `extraUsd` more for a hold from the available balance, as far as it goes (row-locked). */
async function chargeOverage(
  holdId: string,
  s: Settlement,
  extraUsd: bigint,
  quotedUsd: bigint,
  holdAmount: bigint,
  reason?: string,
): Promise<Settlement> {
  const extra = s.currency === 'USD' ? extraUsd : (extraUsd * holdAmount + quotedUsd - 1n) / quotedUsd;
  const client = await db().pool.connect();
  try {
    await client.query('BEGIN');
    const { rows } = await client.query(
      `SELECT b.amount, b.held, h.account_id, h.request_id, h.team_id, h.actor_user_id FROM balance_holds h
       JOIN balances b ON b.account_id = h.account_id AND b.currency = h.currency WHERE h.id = $1 FOR UPDATE OF b`,
      [holdId],
    );
    const r = rows[0];
    const available = BigInt(r.amount) - BigInt(r.held);
    const take = extra < available ? extra : available;
    if (take > 0n) {
      const ins = await client.query(
        `INSERT INTO ledger_entries (account_id, currency, amount, balance_after, kind, reason, idempotency_key, hold_id,
                                     request_id, team_id, actor_user_id)
         VALUES ($1, $2::"Currency", $3::numeric, $4::numeric, 'charge', $5, 'overage:' || $6::text, $6::uuid, $7, $8, $9)
         ON CONFLICT (idempotency_key) DO NOTHING RETURNING id`,
        [
          r.account_id,
          s.currency,
          (-take).toString(),
          (BigInt(r.amount) - take).toString(),
          reason ?? 'usage above reservation',
          holdId,
          r.request_id,
          r.team_id,
          r.actor_user_id,
        ],
      );
      if (ins.rowCount) {
        await client.query(
          `UPDATE balances SET amount = amount - $3::numeric, updated_at = now() WHERE account_id = $1 AND currency = $2::"Currency"`,
          [r.account_id, s.currency, take.toString()],
        );
        await client.query(`UPDATE balance_holds SET charged = COALESCE(charged, 0) + $2::numeric WHERE id = $1`, [
          holdId,
          take.toString(),
        ]);
        s = { ...s, charged: s.charged + take, balanceAfter: BigInt(r.amount) - take, available: available - take };
      }
    }
    await client.query('COMMIT');
    return s;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

/** Give a hold back untouched (failed request, cancelled job, or the sweeper). Returns false if it was no longer active. */
export async function release(holdId: string, status: 'released' | 'expired' = 'released'): Promise<boolean> {
  const { rowCount } = await db().requestPool.query(
    `WITH h AS (
       UPDATE balance_holds SET status = $2::"HoldStatus", closed_at = now()
       WHERE id = $1 AND status = 'active' RETURNING account_id, currency, amount - COALESCE(charged, 0) AS unused
     )
     -- a credit lease (leases.ts) has already paid part of its amount: only the rest is held
     UPDATE balances bal SET held = bal.held - h.unused, updated_at = now()
     FROM h WHERE bal.account_id = h.account_id AND bal.currency = h.currency`,
    [holdId, status],
  );
  return (rowCount ?? 0) > 0;
}

/** Release every hold past its expiry (a crashed request must not keep money held forever). */
export async function releaseExpiredHolds(limit = 500): Promise<number> {
  const { rows } = await db().pool.query(
    `SELECT id FROM balance_holds WHERE status = 'active' AND expires_at < now() ORDER BY expires_at LIMIT $1`,
    [limit],
  );
  let released = 0;
  for (const r of rows) if (await release(r.id, 'expired')) released++;
  // a team-billed request's claim on its budgets goes with its hold
  return released + (await releaseStaleTeamBudgetHolds(config.holdTtlSeconds, limit));
}
