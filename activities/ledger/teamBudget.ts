// Billing to a team: a member with `bill_to_team` has their requests charged to the team owner's
// account, within two monthly budgets (UTC calendar months): their own limit (their override, or the
// team's default) and the team's limit, each counted only while enforced. Spending is counted in
// `team_usage` rows (one per member and month, and user_id 0 for the whole team) whether or not a
// limit is enforced, so the member list can show what each spent this month.
//
// The budget is reserved like money: before the owner's balance is held, one statement locks the
// member's and the team's rows (in user_id order, so two members never deadlock), checks that
// spent + held + the request's worst case fits under both limits, and raises `held` on both, or
// changes nothing. Settlement moves the hold to `spent` (what was charged), release gives it back.
// Any number of API processes therefore cannot pass a limit, exactly as they cannot overspend a
// balance (holds.ts). A request's claim is a `team_budget_holds` row keyed by its request id, so
// settling or releasing twice does nothing more.
import { config } from '../config.js';
import { db } from '../db.js';

/** Who pays for a team-billed request, and under which budgets (nano-USD; null: not enforced). */
export interface TeamBilling {
  teamId: number;
  teamUuid: string;
  teamName: string;
  status: 'active' | 'paused' | 'suspended';
  ownerAccountId: string;
  allowedModels: Record<string, boolean> | null;
  memberLimit: bigint | null;
  teamLimit: bigint | null;
}

const BILLING_SQL = `SELECT t.id, t.uuid, t.name, t.status, t.allowed_models, o.account_id AS owner_account,
    (CASE WHEN COALESCE(m.usage_limit_enforced, t.usage_limit_enforced)
          THEN COALESCE(m.usage_limit, t.default_member_usage_limit) END)::text AS member_limit,
    (CASE WHEN t.usage_limit_enforced THEN t.usage_limit END)::text AS team_limit
  FROM team_members m JOIN teams t ON t.id = m.team_id JOIN users o ON o.id = t.owner_user_id
  WHERE m.user_id = $1 AND m.bill_to_team`;

/** The team `userId` bills to, if they chose one (a user bills to at most one team). */
export async function teamBillingOf(userId: number): Promise<TeamBilling | null> {
  const now = Date.now();
  const hit = billingCache.get(userId);
  if (hit && now - hit.at <= config.keyCacheTtlMs) return hit.billing;
  const generation = cacheGeneration;
  const billing = await loadTeamBilling(userId);
  // a change announced while we read may not be in what we read: use it, but do not keep it
  if (generation === cacheGeneration) {
    if (billingCache.size >= CACHE_MAX) billingCache.delete(billingCache.keys().next().value as number);
    billingCache.set(userId, { billing, at: now });
  }
  return billing;
}

async function loadTeamBilling(userId: number): Promise<TeamBilling | null> {
  const { rows } = await db().requestPool.query({ name: 'team_billing_of', text: BILLING_SQL, values: [userId] });
  const r = rows[0];
  if (!r) return null;
  return {
    teamId: r.id,
    teamUuid: r.uuid,
    teamName: r.name,
    status: r.status,
    ownerAccountId: r.owner_account,
    allowedModels: r.allowed_models,
    memberLimit: r.member_limit == null ? null : BigInt(r.member_limit),
    teamLimit: r.team_limit == null ? null : BigInt(r.team_limit),
  };
}

// ---- the per-process cache of teamBillingOf ----
// Every request of a signed-in user (or of a user's key) asks whom it bills to: kept in memory, as
// resolved API keys are (keys.ts), for at most config.keyCacheTtlMs. Changes reach every process at
// once: triggers on teams and team_members (migration team_billing_changes) announce each change on
// the channel `switchyard_team_billing_changes` ("u<user id>": that member's billing; "t<team id>":
// the team's settings), the API process's listener (cacheChanges.ts) calls forgetTeamBilling, and
// the process that made the change forgets at once (teams.ts), before its own announcement arrives.

const billingCache = new Map<number, { billing: TeamBilling | null; at: number }>();
const CACHE_MAX = 50_000;
/** Counts forgettings, so a read that raced one is not cached (it may predate the change). */
let cacheGeneration = 0;

/**
 * Forget cached team billing: of users ("u<id>"), of everyone billing to teams ("t<id>"), or all
 * (null, or "*").
 */
export function forgetTeamBilling(changes: string[] | null): void {
  cacheGeneration++;
  if (changes === null || changes.includes('*')) {
    billingCache.clear();
    return;
  }
  const teams = new Set<number>();
  for (const change of changes) {
    const id = Number(change.slice(1));
    if (change[0] === 'u') billingCache.delete(id);
    else if (change[0] === 't') teams.add(id);
  }
  if (teams.size === 0) return;
  for (const [userId, { billing }] of billingCache)
    if (billing && teams.has(billing.teamId)) billingCache.delete(userId);
}

const MONTH = `date_trunc('month', now() AT TIME ZONE 'UTC')::date`;

// See holds.ts HOLD_INSERT for why the rows are locked and read in `cur` and the UPDATE's own
// WHERE tests nothing but the verdict: `cur` reads the newest committed versions under our lock.
const RESERVE_SQL = `
  WITH cur AS (
    SELECT user_id, spent + held AS used FROM team_usage
    WHERE team_id = $1 AND month = ${MONTH} AND user_id IN (0, $2) ORDER BY user_id FOR UPDATE
  ), verdict AS (
    SELECT count(*) = 2 AND bool_and(CASE WHEN user_id = 0 THEN $4::numeric IS NULL OR used + $3 <= $4::numeric
                                          ELSE $5::numeric IS NULL OR used + $3 <= $5::numeric END) AS ok,
           max(used) FILTER (WHERE user_id = 0) AS team_used, max(used) FILTER (WHERE user_id <> 0) AS member_used
    FROM cur
  ), upd AS (
    UPDATE team_usage SET held = held + $3::numeric
    WHERE team_id = $1 AND month = ${MONTH} AND user_id IN (0, $2) AND (SELECT ok FROM verdict)
    RETURNING 1
  ), h AS (
    INSERT INTO team_budget_holds (request_id, team_id, user_id, month, amount)
    SELECT $6, $1, $2, ${MONTH}, $3::numeric FROM verdict WHERE ok AND (SELECT count(*) FROM upd) = 2
    RETURNING 1
  )
  SELECT ok, team_used::text, member_used::text, (SELECT count(*)::int FROM cur) AS found FROM verdict`;

type BudgetVerdict = { ok: true } | { ok: false; scope: 'member' | 'team'; limit: bigint; used: bigint };

/**
 * Claim `amount` (a request's worst case, nano-USD) of the member's and the team's budgets for
 * this month, or say which limit it would pass (and claim nothing).
 */
export async function reserveTeamBudget(b: TeamBilling, userId: number, requestId: string, amount: bigint) {
  const values = [
    b.teamId,
    userId,
    amount.toString(),
    b.teamLimit?.toString() ?? null,
    b.memberLimit?.toString() ?? null,
    requestId,
  ];
  let { rows } = await db().requestPool.query({ name: 'team_budget_reserve', text: RESERVE_SQL, values });
  if (rows[0].found < 2) {
    // the month's first request of this member (or team): make its rows, then claim (one more round trip)
    await db().requestPool.query({
      name: 'team_usage_rows',
      text: `INSERT INTO team_usage (team_id, user_id, month) VALUES ($1, 0, ${MONTH}), ($1, $2, ${MONTH})
             ON CONFLICT DO NOTHING`,
      values: [b.teamId, userId],
    });
    ({ rows } = await db().requestPool.query({ name: 'team_budget_reserve', text: RESERVE_SQL, values }));
  }
  const r = rows[0];
  if (r.ok) return { ok: true } as BudgetVerdict;
  const memberUsed = BigInt(r.member_used ?? 0);
  if (b.memberLimit != null && memberUsed + amount > b.memberLimit)
    return { ok: false, scope: 'member', limit: b.memberLimit, used: memberUsed } as BudgetVerdict;
  return { ok: false, scope: 'team', limit: b.teamLimit ?? 0n, used: BigInt(r.team_used ?? 0) } as BudgetVerdict;
}

/**
 * Close a request's claim: `spentDelta` (what was charged, nano-USD) moves to `spent` and the claim
 * leaves `held`. Release is settling with nothing spent. Idempotent: a closed claim is not closed again.
 */
async function closeClaim(requestId: string, status: 'settled' | 'released', spent: bigint): Promise<void> {
  await db().requestPool.query({
    name: 'team_budget_close',
    text: `WITH h AS (
       UPDATE team_budget_holds SET status = $2, charged = $3::numeric
       WHERE request_id = $1 AND status = 'active' RETURNING team_id, user_id, month, amount
     ), lk AS (
       SELECT u.user_id FROM team_usage u JOIN h ON u.team_id = h.team_id AND u.month = h.month
       WHERE u.user_id IN (0, h.user_id) ORDER BY u.user_id FOR UPDATE OF u
     )
     UPDATE team_usage u SET held = u.held - h.amount, spent = u.spent + $3::numeric
     FROM h WHERE u.team_id = h.team_id AND u.month = h.month AND u.user_id IN (0, h.user_id)
       AND (SELECT count(*) FROM lk) > 0`,
    values: [requestId, status, spent.toString()],
  });
}

export const settleTeamBudget = (requestId: string, chargedUsd: bigint) => closeClaim(requestId, 'settled', chargedUsd);
export const releaseTeamBudget = (requestId: string) => closeClaim(requestId, 'released', 0n);

/** A settled request's charge was given back (the answer never reached the caller): unspend it. */
export async function refundTeamBudget(requestId: string): Promise<void> {
  await db().requestPool.query(
    `WITH h AS (
       UPDATE team_budget_holds SET status = 'refunded' WHERE request_id = $1 AND status = 'settled'
       RETURNING team_id, user_id, month, charged
     ), lk AS (
       SELECT u.user_id FROM team_usage u JOIN h ON u.team_id = h.team_id AND u.month = h.month
       WHERE u.user_id IN (0, h.user_id) ORDER BY u.user_id FOR UPDATE OF u
     )
     UPDATE team_usage u SET spent = u.spent - h.charged
     FROM h WHERE u.team_id = h.team_id AND u.month = h.month AND u.user_id IN (0, h.user_id)
       AND (SELECT count(*) FROM lk) > 0`,
    [requestId],
  );
}

/** Release claims a crashed process left open, as the hold sweeper releases its holds; forget old closed ones. */
export async function releaseStaleTeamBudgetHolds(olderThanSeconds: number, limit = 500): Promise<number> {
  const { rows } = await db().pool.query(
    `SELECT request_id FROM team_budget_holds WHERE status = 'active'
     AND created_at < now() - make_interval(secs => $1) ORDER BY created_at LIMIT $2`,
    [olderThanSeconds, limit],
  );
  for (const r of rows) await releaseTeamBudget(r.request_id);
  // closed claims are history the ledger already keeps (team_usage holds the sums): keep a day of them
  await db().pool.query(
    `DELETE FROM team_budget_holds WHERE ctid IN (SELECT ctid FROM team_budget_holds
       WHERE status <> 'active' AND created_at < now() - interval '1 day' LIMIT $1)`,
    [limit],
  );
  return rows.length;
}
