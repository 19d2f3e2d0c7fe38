// Writes made together with a leased call's charge (leases.ts): a batch row's stored answer and
// the charge for it go out in ONE statement, so neither can exist without the other, and writes
// that come at once share a statement (group commit).
import { db } from '../db.js';
import type { Settlement } from './holds.js';
import {
  availableOf,
  LEASE_CHARGE_ENTRIES,
  LEASE_TTL_SECONDS,
  type Lease,
  type LeasedFunds,
  type WriteWithCharge,
} from './leases.js';

/** A write waiting for its lease's next statement, with the charge that goes with it. */
interface QueuedWrite {
  write: WriteWithCharge;
  charge: { amount: bigint; requestId: string; apiKeyId: string | null; reason: string | null };
  done: (outcome: { written: boolean; available: bigint } | undefined) => void;
  failed: (err: unknown) => void;
}

/** Writes waiting per lease, and whether one of its statements is in flight. */
const queues = new WeakMap<Lease, { waiting: QueuedWrite[]; writing: boolean }>();

/** Most writes one statement carries. */
const GROUP_MAX = 256;

/**
 * Charge `usd` from the lease in the SAME statement as `write`, or neither: the charge can never
 * be lost after the write (a worker killed between two statements), nor made without it. The
 * lease row is locked first, so a lease the sweeper has just given back charges nothing and
 * writes nothing. Returns whether `write` wrote (false: it found its work already done, e.g. by
 * another attempt, and nothing was charged), or undefined when the lease is gone (nothing
 * written; the caller pays another way). The share goes back to the lease either way.
 *
 * Group commit: the first write of a lease goes out at once; writes that come while a statement
 * of the lease is in flight wait for it and then go out together, in one statement (rows finishing
 * on many lanes of a worker at once). Every write of the account updates the same rows (the lease,
 * the balance, the batch's counters): once per statement instead of once per write.
 */
export async function chargeLeasedWith(
  f: LeasedFunds,
  a: { usd: bigint; requestId: string; apiKeyId: string | null; reason: string | null },
  write: WriteWithCharge,
): Promise<{ written: boolean; settlement: Settlement } | undefined> {
  if (f.done) throw new Error(`request ${a.requestId} was already settled`);
  f.done = true;
  const lease = f.lease;
  // as settleLeased: at most the share plus what the lease still has free, taken from it now
  lease.free += f.amount;
  const charged = a.usd < lease.free ? a.usd : lease.free;
  lease.free -= charged;
  let outcome: { written: boolean; available: bigint } | undefined;
  try {
    outcome = await new Promise((done, failed) => {
      const q = queues.get(lease) ?? { waiting: [], writing: false };
      queues.set(lease, q);
      q.waiting.push({ write, charge: { ...a, amount: charged }, done, failed });
      if (!q.writing) void drainWrites(lease, q);
    });
  } catch (err) {
    lease.free += charged; // nothing was written or charged: the share's room goes back
    throw err;
  } finally {
    lease.inflight--;
    lease.lastUsed = Date.now();
  }
  if (!outcome) return undefined;
  if (!outcome.written) lease.free += charged;
  lease.account.available = outcome.available;
  return {
    written: outcome.written,
    settlement: {
      holdId: lease.id,
      currency: 'USD',
      charged: outcome.written ? charged : 0n,
      balanceAfter: 0n,
      available: availableOf(lease.account),
    },
  };
}

async function drainWrites(lease: Lease, q: { waiting: QueuedWrite[]; writing: boolean }): Promise<void> {
  q.writing = true;
  try {
    while (q.waiting.length) {
      // writes of one kind share a statement; another kind waits for the next
      const name = q.waiting[0].write.name;
      const group: QueuedWrite[] = [];
      const rest: QueuedWrite[] = [];
      for (const w of q.waiting) (w.write.name === name && group.length < GROUP_MAX ? group : rest).push(w);
      q.waiting = rest;
      try {
        const { active, written, available } = await writeGroup(lease, group);
        if (!active) lease.closed = true; // given back behind this process's back (it stalled past its expiry)
        for (const [n, w] of group.entries()) w.done(active ? { written: written.has(n + 1), available } : undefined);
      } catch (err) {
        for (const w of group) w.failed(err);
      }
    }
  } finally {
    q.writing = false;
  }
}

/** The SQL of `i`: the writes' columns unnested, after `before` parameters. */
const writesOf = (w: WriteWithCharge, before: number) =>
  `i AS (SELECT * FROM unnest(${w.types.map((t, k) => `$${before + k + 1}::${t}[]`).join(', ')})
     WITH ORDINALITY AS i(${w.types.map((_, k) => `v${k + 1}`).join(', ')}, n))`;

/** One statement: the lease locked, the writes made, and the charges of those that wrote. */
async function writeGroup(
  lease: Lease,
  group: QueuedWrite[],
): Promise<{ active: boolean; written: Set<number>; available: bigint }> {
  const w = group[0].write;
  const k = w.types.length;
  const p = (i: number) => `$${k + 1 + i}`;
  const { rows } = await db().requestPool.query({
    name: `${w.name}+lease_charge`,
    text: `WITH l AS (
       SELECT id FROM balance_holds WHERE id = $1 AND status = 'active' FOR UPDATE
     ), ${writesOf(w, 1)}, ${w.ctes},
     c AS (
       SELECT c.* FROM x JOIN unnest(${p(1)}::numeric[], ${p(2)}::text[], ${p(3)}::uuid[], ${p(4)}::text[])
         WITH ORDINALITY AS c(amount, request_id, api_key_id, reason, n) ON c.n = x.n
     ), t AS (SELECT SUM(amount) AS total FROM c),
     h AS (
       UPDATE balance_holds SET charged = COALESCE(charged, 0) + t.total, expires_at = now() + make_interval(secs => ${p(5)})
       FROM t WHERE id = $1 AND t.total IS NOT NULL RETURNING account_id
     ), ${LEASE_CHARGE_ENTRIES}
     SELECT (SELECT count(*) FROM l)::int AS active, ARRAY(SELECT n::int FROM x) AS written,
       (SELECT available FROM b) AS available`,
    values: [
      lease.id,
      ...w.types.map((_, col) => group.map((q) => q.write.values[col])),
      group.map((q) => q.charge.amount.toString()),
      group.map((q) => q.charge.requestId),
      group.map((q) => q.charge.apiKeyId),
      group.map((q) => q.charge.reason),
      LEASE_TTL_SECONDS,
    ],
  });
  const r = rows[0];
  return {
    active: r.active > 0,
    written: new Set<number>(r.written),
    available: r.available === null ? lease.account.available : BigInt(r.available),
  };
}

/** A WriteWithCharge on its own, where no lease pays (the exact path settles its hold after it): did it write? */
export async function writeWithoutCharge(w: WriteWithCharge): Promise<boolean> {
  const { rows } = await db().requestPool.query({
    name: `${w.name}+alone`,
    text: `WITH l AS (SELECT 1), ${writesOf(w, 0)}, ${w.ctes} SELECT (SELECT count(*) FROM x)::int AS written`,
    values: w.values.map((v) => [v]),
  });
  return rows[0].written > 0;
}
