// Holds reserved and settled in groups: the same reservations and settlements as ledger.ts's
// reserve() and settle(), written many to a statement when many calls of one account come at once
// (a batch's rows on every lane of a worker; core/groupCommit.ts says how a group forms). Each
// hold is still its own row with its own idempotency key, and each charge its own ledger entry
// (`charge:<hold>`), so the books read exactly as if the calls had come one by one.
// What a group statement does, it does for all of its holds or for none (one statement), and it
// only takes the common path: USD holds of one account, the whole group's reservation covered,
// charges within their holds. Anything else (the balance short for the group, a key taken
// meanwhile by a racing attempt, an XNO hold, an overage, a hold no longer active) goes through
// reserve() or settle() one by one, which decide it exactly as they always have.
import { db } from '../db.js';
import { config } from '../config.js';
import { GroupCommit } from '../core/groupCommit.js';
import { type Hold, reserve, type Settlement, settle } from './ledger.js';

/** How a metered call reserves and settles its exact hold: one by one (ledger.ts) or grouped (here). */
export interface HoldBook {
  reserve(a: ReserveRequest): Promise<Hold>;
  settle(a: SettleRequest): Promise<Settlement>;
}

interface ReserveRequest {
  accountId: string;
  usd: bigint;
  idempotencyKey: string;
  requestId?: string;
  apiKeyId?: string;
  ttlSeconds?: number;
}

interface SettleRequest {
  /** the hold's account: a group settles holds of one account (one balance row per statement) */
  accountId: string;
  holdId: string;
  usd: bigint;
  reason?: string;
}

const settled = <T>(p: Promise<T>[]) => Promise.allSettled(p);

// The balance row is locked and read first, then the group's fresh holds are taken only if it
// covers them all: the same conditional update as ledger.ts's HOLD_INSERT (see there why the
// UPDATE's own WHERE reads `cur`, and why its SET is a CASE). Keys already taken (a retried
// attempt of the same rows) return their hold and add nothing.
const RESERVE_GROUP = `
  WITH req AS (
    SELECT * FROM unnest($2::text[], $3::numeric[], $4::text[], $5::uuid[], $6::int[])
      WITH ORDINALITY AS r(key, usd, request_id, api_key_id, ttl, ord)
  ), known AS (
    SELECT h.idempotency_key AS key, h.id FROM balance_holds h JOIN req ON h.idempotency_key = req.key
  ), fresh AS (
    SELECT req.* FROM req WHERE NOT EXISTS (SELECT 1 FROM known WHERE known.key = req.key)
  ), need AS (
    SELECT COALESCE(sum(usd), 0) AS usd FROM fresh
  ), cur AS (
    SELECT amount - held AS available FROM balances WHERE account_id = $1 AND currency = 'USD' FOR UPDATE
  ), b AS (
    UPDATE balances
    SET held = held + CASE WHEN amount - held >= (SELECT usd FROM need) THEN (SELECT usd FROM need) ELSE 0 END,
        updated_at = now()
    WHERE account_id = $1 AND currency = 'USD' AND (SELECT available FROM cur) >= (SELECT usd FROM need)
    RETURNING amount - held AS available
  ), h AS (
    INSERT INTO balance_holds (id, account_id, currency, amount, quoted_usd, idempotency_key, request_id, api_key_id,
                               expires_at)
    SELECT gen_random_uuid(), $1, 'USD', f.usd, f.usd, f.key, f.request_id, f.api_key_id, now() + make_interval(secs => f.ttl)
    FROM fresh f, b ORDER BY f.ord
    RETURNING id, idempotency_key AS key
  )
  SELECT req.key, COALESCE(h.id, known.id) AS id, (SELECT available FROM b) AS available
  FROM req LEFT JOIN h ON h.key = req.key LEFT JOIN known ON known.key = req.key
  ORDER BY req.ord`;

async function reserveGroup(accountId: string, items: ReserveRequest[]): Promise<PromiseSettledResult<Hold>[]> {
  if (items.length === 1 || new Set(items.map((i) => i.idempotencyKey)).size < items.length)
    return settled(items.map((i) => reserve(i)));
  if (items.some((i) => i.usd <= 0n)) return settled(items.map((i) => reserve(i)));
  let rows: Array<{ key: string; id: string | null; available: string | null }>;
  try {
    ({ rows } = await db().requestPool.query({
      name: 'ledger_reserve_group',
      text: RESERVE_GROUP,
      values: [
        accountId,
        items.map((i) => i.idempotencyKey),
        items.map((i) => i.usd.toString()),
        items.map((i) => i.requestId ?? null),
        items.map((i) => i.apiKeyId ?? null),
        items.map((i) => i.ttlSeconds ?? config.holdTtlSeconds),
      ],
    }));
  } catch {
    // a key taken by a racing attempt between our read and our insert, or anything else: one by one
    return settled(items.map((i) => reserve(i)));
  }
  // not covered as a group (or no USD balance): each reservation decided on its own
  if (rows.some((r) => r.id === null || r.available === null)) return settled(items.map((i) => reserve(i)));
  return rows.map((r, k) => ({
    status: 'fulfilled' as const,
    value: {
      id: r.id!,
      accountId,
      currency: 'USD',
      amount: items[k].usd,
      quotedUsd: items[k].usd,
      available: BigInt(r.available!),
    },
  }));
}

// Settles the group's active USD holds whose charge is within the hold, as settle() does for
// one: the holds closed, the balance's held and amount moved by their sums, one charge entry per
// hold with its own balance_after (in the group's order), the keys' daily spend. Returns the holds
// it settled; settle() takes the others.
const SETTLE_GROUP = `
  WITH req AS (
    SELECT * FROM unnest($2::uuid[], $3::numeric[], $4::text[]) WITH ORDINALITY AS r(hold_id, usd, reason, ord)
  ), h AS (
    UPDATE balance_holds bh SET status = 'settled', closed_at = now(), charged = req.usd
    FROM req
    WHERE bh.id = req.hold_id AND bh.account_id = $1 AND bh.currency = 'USD' AND bh.status = 'active'
      AND req.usd <= bh.quoted_usd
    RETURNING bh.id, bh.amount, bh.charged, bh.request_id, bh.api_key_id, bh.team_id, bh.actor_user_id, req.reason, req.ord
  ), tot AS (
    SELECT COALESCE(sum(amount), 0) AS held, COALESCE(sum(charged), 0) AS charged FROM h
  ), b AS (
    UPDATE balances bal SET held = bal.held - tot.held, amount = bal.amount - tot.charged, updated_at = now()
    FROM tot WHERE bal.account_id = $1 AND bal.currency = 'USD' AND EXISTS (SELECT 1 FROM h)
    RETURNING bal.amount AS balance_after, bal.amount - bal.held AS available
  ), e AS (
    INSERT INTO ledger_entries (account_id, currency, amount, balance_after, kind, reason, idempotency_key, hold_id,
                                request_id, team_id, actor_user_id)
    SELECT $1, 'USD', -h.charged, b.balance_after + tot.charged - sum(h.charged) OVER (ORDER BY h.ord), 'charge',
           h.reason, 'charge:' || h.id, h.id, h.request_id, h.team_id, h.actor_user_id
    FROM h, b, tot WHERE h.charged > 0 ORDER BY h.ord
  ), k AS (
    INSERT INTO key_daily_usage (key_id, day, requests, usd_spent)
    SELECT h.api_key_id, (now() AT TIME ZONE 'UTC')::date, 0, sum(h.charged)
    FROM h WHERE h.api_key_id IS NOT NULL AND h.charged > 0 GROUP BY h.api_key_id
    ON CONFLICT (key_id, day) DO UPDATE SET usd_spent = key_daily_usage.usd_spent + EXCLUDED.usd_spent
  )
  SELECT h.id, h.charged, b.balance_after, b.available FROM h, b`;

async function settleGroup(accountId: string, items: SettleRequest[]): Promise<PromiseSettledResult<Settlement>[]> {
  if (items.length === 1 || new Set(items.map((i) => i.holdId)).size < items.length)
    return settled(items.map((i) => settle(i)));
  if (items.some((i) => i.usd < 0n)) return settled(items.map((i) => settle(i)));
  let rows: Array<{ id: string; charged: string; balance_after: string; available: string }>;
  try {
    ({ rows } = await db().requestPool.query({
      name: 'ledger_settle_group',
      text: SETTLE_GROUP,
      values: [
        accountId,
        items.map((i) => i.holdId),
        items.map((i) => i.usd.toString()),
        items.map((i) => i.reason ?? null),
      ],
    }));
  } catch {
    // nothing of the group was written (one statement): settle() decides each
    return settled(items.map((i) => settle(i)));
  }
  const done = new Map(rows.map((r) => [r.id, r]));
  return settled(
    items.map(async (i) => {
      const r = done.get(i.holdId);
      if (!r) return settle(i);
      return {
        holdId: i.holdId,
        currency: 'USD',
        charged: BigInt(r.charged),
        balanceAfter: BigInt(r.balance_after),
        available: BigInt(r.available),
      } satisfies Settlement;
    }),
  );
}

const reserves = new GroupCommit<ReserveRequest, Hold>(reserveGroup);
const settles = new GroupCommit<SettleRequest, Settlement>(settleGroup);

/** Reservations and settlements grouped per account with the others of this process in flight at once. */
export const groupedHolds: HoldBook = {
  reserve: (a) => reserves.submit(a.accountId, a),
  settle: (a) => settles.submit(a.accountId, a),
};

/** One by one, each its own statement (ledger.ts): what every call does unless told otherwise. */
export const singleHolds: HoldBook = { reserve, settle };
