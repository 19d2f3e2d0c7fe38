// Credit leases: how a synchronous request reserves and pays without a database round trip.
//
// Why: reserve + settle are two statements on every request's critical path, and on a busy
// account they serialize on one balance row. A lease is an ordinary hold (a balance_holds row,
// taken by the same atomic conditional update as any reservation) that this process then
// divides among many requests in memory. Requests reserve from it and settle into it; the
// charges are written in batches, one statement per lease every FLUSH_MS, still one ledger
// entry per request with its own idempotency key (`charge:<request id>`).
//
// Why it cannot overspend: money only enters a lease through the database's conditional
// update, so across any number of processes the leases plus the other holds never exceed the
// balance; within one process, reservations against a lease are plain arithmetic on one thread.
//
// When it is used: only for accounts that can afford it comfortably. A lease takes at most
// 1/LEASE_SHARE of what the account has available, so an account close to empty (or one
// whose key has a daily USD cap, which must be checked exactly) goes down the exact path: one
// hold per request, as before. XNO is never leased.
//
// What it risks (README, "Money"): if the PROCESS dies, the charges of its last FLUSH_MS are
// lost (those requests were served free) and its leases stay held until they expire
// (LEASE_TTL_SECONDS, then the hold sweeper releases them). Nothing is ever charged twice,
// and the books always balance. SWITCHYARD_CREDIT_LEASES=0 turns leases off.
//
// A write that must go together with its charge (a batch row's stored answer) is in leaseWrites.ts.
import { db, isUniqueViolation } from '../db.js';
import type { Settlement } from './holds.js';

const ENABLED = process.env.SWITCHYARD_CREDIT_LEASES !== '0';
/** how often pending charges are written */
const FLUSH_MS = 20;
/** a lease covers about this many worst-case requests */
const LEASE_REQUESTS = 256;
/** a lease takes at most 1/LEASE_SHARE of the account's available balance */
const LEASE_SHARE = 8n;
/** a lease nobody used for this long is given back */
const IDLE_MS = 2000;
/** leases are renewed at every flush; a crashed process's leases expire after this */
export const LEASE_TTL_SECONDS = 120;
/** after the exact path was chosen for an account, try leasing again no sooner than this */
const RETRY_LEASE_MS = 1000;

interface PendingCharge {
  amount: bigint;
  requestId: string;
  apiKeyId: string | null;
  reason: string | null;
}

export class Lease {
  /** what the lease holds in the database (amount - charged of its row) minus pending charges */
  free: bigint;
  inflight = 0;
  pending: PendingCharge[] = [];
  flushing?: Promise<void>;
  lastUsed = Date.now();
  draining = false;
  closed = false;

  constructor(
    readonly id: string,
    readonly account: AccountLeases,
    amount: bigint,
  ) {
    this.free = amount;
  }
}

interface AccountLeases {
  accountId: string;
  leases: Lease[];
  /** amount - held of the balance row, as the last lease statement saw it */
  available: bigint;
  noLeaseUntil: number;
  granting?: Promise<Lease | undefined>;
}

/** A request's share of a lease. */
export interface LeasedFunds {
  lease: Lease;
  amount: bigint;
  done: boolean;
}

const accounts = new Map<string, AccountLeases>();
let timer: NodeJS.Timeout | undefined;

function ensureTimer(): void {
  if (timer) return;
  timer = setInterval(tick, FLUSH_MS);
  timer.unref();
}

function tick(): void {
  const now = Date.now();
  for (const acc of accounts.values()) {
    for (const lease of acc.leases) {
      if (lease.pending.length && !lease.flushing) void flush(lease);
      else if (
        !lease.flushing &&
        lease.inflight === 0 &&
        !lease.pending.length &&
        (lease.draining || now - lease.lastUsed > IDLE_MS)
      )
        void close(lease);
    }
  }
}

/**
 * Reserve `usd` for one request from a lease of this process, taking a new lease when needed.
 * Returns undefined when the exact path should be used instead (leases off, account too close to
 * empty); never throws InsufficientFunds itself.
 */
export async function reserveFromLease(accountId: string, usd: bigint): Promise<LeasedFunds | undefined> {
  if (!ENABLED || usd <= 0n) return undefined;
  let acc = accounts.get(accountId);
  if (!acc) {
    acc = { accountId, leases: [], available: 0n, noLeaseUntil: 0 };
    accounts.set(accountId, acc);
  }
  for (let attempt = 0; attempt < 8; attempt++) {
    // the current lease first; a retired one still serves what it has free
    const current =
      acc.leases.find((l) => !l.draining && !l.closed && l.free >= usd) ??
      acc.leases.find((l) => !l.closed && l.free >= usd);
    if (current) return take(current, usd);
    if (Date.now() < acc.noLeaseUntil) return undefined;
    // The leases this process has are spent: retire them and take a fresh one. Concurrent
    // requests of the account wait for the same grant instead of each taking a lease.
    if (!acc.granting) {
      for (const l of acc.leases) l.draining = true;
      const account = acc;
      account.granting = grant(account, usd * BigInt(LEASE_REQUESTS)).finally(() => {
        account.granting = undefined;
      });
    }
    if (!(await acc.granting)) {
      acc.noLeaseUntil = Date.now() + RETRY_LEASE_MS;
      return undefined;
    }
  }
  return undefined;
}

function take(lease: Lease, usd: bigint): LeasedFunds {
  lease.free -= usd;
  lease.inflight++;
  lease.lastUsed = Date.now();
  return { lease, amount: usd, done: false };
}

/** A lease of `size`, only if the account has LEASE_SHARE times that available. */
async function grant(acc: AccountLeases, size: bigint): Promise<Lease | undefined> {
  const { rows } = await db().requestPool.query({
    name: 'ledger_lease',
    text: `WITH b AS (
       UPDATE balances SET held = held + $2::numeric, updated_at = now()
       WHERE account_id = $1 AND currency = 'USD' AND amount - held >= $2::numeric * $3::numeric
       RETURNING amount - held AS available
     )
     INSERT INTO balance_holds (id, account_id, currency, amount, quoted_usd, idempotency_key, expires_at)
     SELECT gen_random_uuid(), $1, 'USD', $2::numeric, $2::numeric, 'lease:' || gen_random_uuid(), now() + make_interval(secs => $4)
     FROM b RETURNING id, (SELECT available FROM b) AS available`,
    values: [acc.accountId, size.toString(), LEASE_SHARE.toString(), LEASE_TTL_SECONDS],
  });
  if (!rows[0]) return undefined;
  acc.available = BigInt(rows[0].available);
  const lease = new Lease(rows[0].id, acc, size);
  acc.leases.push(lease);
  ensureTimer();
  return lease;
}

/**
 * Charge `usd` (at most what the request reserved plus what the lease still has free) and give
 * the rest back to the lease. The charge is written with the next flush.
 */
export function settleLeased(
  f: LeasedFunds,
  a: { usd: bigint; requestId: string; apiKeyId: string | null; reason: string | null },
): Settlement {
  if (f.done) throw new Error(`request ${a.requestId} was already settled`);
  f.done = true;
  const lease = f.lease;
  lease.inflight--;
  lease.free += f.amount;
  const charged = a.usd < lease.free ? a.usd : lease.free;
  lease.free -= charged;
  if (charged > 0n)
    lease.pending.push({ amount: charged, requestId: a.requestId, apiKeyId: a.apiKeyId, reason: a.reason });
  return { holdId: lease.id, currency: 'USD', charged, balanceAfter: 0n, available: availableOf(lease.account) };
}

/**
 * Take back the charge settleLeased made for `requestId` (its answer never reached the caller).
 * A charge still waiting for its batch is dropped and its money goes back to the lease: returns
 * false. One already written (or being written) is the ledger's to refund: returns true once the
 * write is over, so the entry `charge:<request id>` exists by then.
 */
export async function unchargeLeased(f: LeasedFunds, requestId: string): Promise<boolean> {
  const lease = f.lease;
  for (let tries = 0; tries < 2; tries++) {
    const i = lease.pending.findIndex((c) => c.requestId === requestId);
    if (i !== -1) {
      const [c] = lease.pending.splice(i, 1);
      if (!lease.closed) lease.free += c.amount;
      return false;
    }
    if (!lease.flushing) return true;
    // being written: a failed write puts the batch back in `pending`, so look once more after it
    await lease.flushing;
  }
  return true;
}

/** The request produced nothing: its share goes back to the lease. */
export function releaseLeased(f: LeasedFunds): void {
  if (f.done) return;
  f.done = true;
  f.lease.inflight--;
  f.lease.free += f.amount;
}

/**
 * A write of the caller's that must happen together with a leased call's charge (a batch row's
 * stored answer). Writes of one `name` that come at once share a statement, so the write is SQL
 * over a set: common table expressions reading `i`, the writes (columns v1, v2, … of `types`, one
 * row per write, and `n`, its position), driven by `l` (one row: the lease, locked; or `SELECT 1`
 * where no lease pays), the last of them named `x` and returning the `n` of each write it made.
 * `values`: this write's row of `i`.
 */
export interface WriteWithCharge {
  name: string;
  types: readonly string[];
  ctes: string;
  values: unknown[];
}

/**
 * The charges `c` (amount, request_id, api_key_id, reason, n) taken from the lease `$1`, whose row
 * `h` has just been charged their total `t`: the balance, one ledger entry per charge (in order,
 * each with the balance after it) and the keys' daily spend. One text for both statements that
 * write lease charges (the flush of pending charges, and writes with their charge).
 */
export const LEASE_CHARGE_ENTRIES = `b AS (
       UPDATE balances bal SET amount = bal.amount - t.total, held = bal.held - t.total, updated_at = now()
       FROM h, t WHERE bal.account_id = h.account_id AND bal.currency = 'USD'
       RETURNING bal.amount + t.total AS before, bal.amount - bal.held AS available
     ), e AS (
       INSERT INTO ledger_entries (account_id, currency, amount, balance_after, kind, reason, idempotency_key, hold_id, request_id)
       SELECT h.account_id, 'USD', -c.amount, b.before - SUM(c.amount) OVER (ORDER BY c.n), 'charge', c.reason,
              'charge:' || c.request_id, $1, c.request_id
       FROM h, b, c WHERE c.amount > 0
     ), k AS (
       INSERT INTO key_daily_usage (key_id, day, requests, usd_spent)
       SELECT c.api_key_id, (now() AT TIME ZONE 'UTC')::date, 0, SUM(c.amount) FROM c, h
       WHERE c.api_key_id IS NOT NULL AND c.amount > 0 GROUP BY c.api_key_id
       ON CONFLICT (key_id, day) DO UPDATE SET usd_spent = key_daily_usage.usd_spent + EXCLUDED.usd_spent
     )`;

/**
 * Give back now this account's leases that no call is using (a batch activity's last rows are
 * done): the idle timer would, a moment later, but a finished batch should leave nothing held.
 */
export async function closeIdleLeases(accountId: string): Promise<void> {
  const acc = accounts.get(accountId);
  if (!acc) return;
  await Promise.all(
    acc.leases.filter((l) => l.inflight === 0 && !l.pending.length && !l.flushing).map((l) => close(l)),
  );
}

/** What the account can still spend, as this process knows it. */
export function availableOf(acc: AccountLeases): bigint {
  return acc.leases.reduce((sum, l) => (l.closed ? sum : sum + l.free), acc.available);
}

/** Write the lease's pending charges: one statement, one entry per request. */
function flush(lease: Lease): Promise<void> {
  const batch = lease.pending;
  lease.pending = [];
  lease.flushing = write(lease, batch)
    .catch((err) => {
      // Not written (the database is unreachable): keep them for the next flush.
      console.error(`[ledger] could not write ${batch.length} lease charges: ${(err as Error).message}`);
      lease.pending = batch.concat(lease.pending);
    })
    .finally(() => {
      lease.flushing = undefined;
    });
  return lease.flushing;
}

async function write(lease: Lease, batch: PendingCharge[]): Promise<void> {
  try {
    const { rows } = await db().requestPool.query({
      name: 'ledger_lease_flush',
      text: `WITH c AS (
         SELECT * FROM unnest($2::numeric[], $3::text[], $4::uuid[], $5::text[]) WITH ORDINALITY AS c(amount, request_id, api_key_id, reason, n)
       ), t AS (SELECT SUM(amount) AS total FROM c),
       h AS (
         UPDATE balance_holds SET charged = COALESCE(charged, 0) + (SELECT total FROM t), expires_at = now() + make_interval(secs => $6)
         WHERE id = $1 AND status = 'active' RETURNING account_id
       ), ${LEASE_CHARGE_ENTRIES}
       SELECT available FROM b`,
      values: [
        lease.id,
        batch.map((c) => c.amount.toString()),
        batch.map((c) => c.requestId),
        batch.map((c) => c.apiKeyId),
        batch.map((c) => c.reason),
        LEASE_TTL_SECONDS,
      ],
    });
    if (rows[0]) {
      lease.account.available = BigInt(rows[0].available);
      return;
    }
  } catch (err) {
    // A charge key already used: this batch was written by an attempt whose answer was lost.
    if (isUniqueViolation(err)) return;
    throw err;
  }
  // The lease is no longer active (this process stalled past its expiry and the sweeper gave it
  // back): the work was still done, so charge each request directly, as far as the balance goes.
  await chargeWithoutLease(lease, batch);
}

async function chargeWithoutLease(lease: Lease, batch: PendingCharge[]): Promise<void> {
  lease.closed = true;
  for (const c of batch) {
    await db()
      .pool.query(
        `WITH cur AS (
           SELECT LEAST($2::numeric, amount - held) AS taken FROM balances WHERE account_id = $1 AND currency = 'USD' FOR UPDATE
         ), b AS (
           UPDATE balances bal SET amount = bal.amount - cur.taken, updated_at = now()
           FROM cur WHERE bal.account_id = $1 AND bal.currency = 'USD' AND cur.taken > 0
           RETURNING bal.amount, cur.taken
         )
         INSERT INTO ledger_entries (account_id, currency, amount, balance_after, kind, reason, idempotency_key, request_id)
         SELECT $1, 'USD', -b.taken, b.amount, 'charge', $3, 'charge:' || $4::text, $4 FROM b`,
        [lease.account.accountId, c.amount.toString(), c.reason, c.requestId],
      )
      .catch((err) => {
        if (!isUniqueViolation(err)) throw err;
      });
  }
}

/** Give back what an unused lease still holds (after its charges are written). */
async function close(lease: Lease): Promise<void> {
  if (lease.closed) return;
  lease.closed = true;
  const acc = lease.account;
  acc.leases = acc.leases.filter((l) => l !== lease);
  if (!acc.leases.length && !acc.granting) accounts.delete(acc.accountId);
  await db()
    .requestPool.query(
      `WITH h AS (
         UPDATE balance_holds SET status = 'settled', closed_at = now() WHERE id = $1 AND status = 'active'
         RETURNING account_id, amount - COALESCE(charged, 0) AS unused
       )
       UPDATE balances bal SET held = bal.held - h.unused, updated_at = now()
       FROM h WHERE bal.account_id = h.account_id AND bal.currency = 'USD'`,
      [lease.id],
    )
    .catch((err) =>
      console.error(`[ledger] could not return lease ${lease.id}: ${(err as Error).message} (the hold sweeper will)`),
    );
}

/**
 * Write every pending charge and give every lease back: at shutdown, and in tests before the
 * books are checked. Requests still running keep their leases (they are closed when done).
 */
export async function flushLeases(opts: { close?: boolean } = {}): Promise<void> {
  for (;;) {
    const all = [...accounts.values()].flatMap((a) => a.leases);
    const work = all.filter((l) => l.pending.length || l.flushing);
    if (!work.length) break;
    await Promise.all(work.map((l) => l.flushing ?? flush(l)));
  }
  if (opts.close) {
    await Promise.all(
      [...accounts.values()]
        .flatMap((a) => a.leases)
        .filter((l) => l.inflight === 0)
        .map((l) => close(l)),
    );
  }
}

/** For tests: forget every lease without giving it back, as a crashed process would. */
export function forgetLeases(): void {
  accounts.clear();
}
