// The one module that moves money. Each operation is a single SQL statement (one round trip,
// atomic by construction) except the two rare paths that need a row lock (overage, refund).
// Reserve, settle and release run on db().requestPool (asynchronous commit; see activities/db.ts
// for why and what it risks); credits, debits and refunds always wait for disk.
// Invariants kept here and checked by test/ledger.test.ts:
//  - balances.amount == SUM(ledger_entries.amount) per (account, currency);
//  - 0 <= held <= amount (also CHECK constraints in the database);
//  - every entry and hold has a unique idempotency key: replaying an operation returns the
//    first result instead of moving money again.
import { db, isUniqueViolation } from '../db.js';
import { config } from '../config.js';
import { type Currency, parseAmount, usdToXno } from '../core/money.js';
import { releaseStaleTeamBudgetHolds } from './teamBudget.js';

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

const ENTRY_COLUMNS = `id, account_id, currency, amount, balance_after, kind, reason, idempotency_key, created_at`;

function toEntry(r: Record<string, unknown>): Entry {
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

async function entryByKey(idempotencyKey: string): Promise<Entry | undefined> {
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
