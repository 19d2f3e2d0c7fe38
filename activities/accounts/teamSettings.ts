// A team's settings (teams.ts): its monthly limits, the models it allows, and what it has used.
import { toDisplayNumber } from '../core/money.js';
import { db } from '../db.js';
import { type Membership, requireManager, teamBillingChanged } from './teams.js';

export async function updateSettings(
  m: Membership,
  p: { defaultMemberUsageLimit?: bigint | null; usageLimit?: bigint | null; usageLimitEnforced?: boolean },
): Promise<void> {
  requireManager(m);
  await db().pool.query(
    `UPDATE teams SET
       default_member_usage_limit = CASE WHEN $2 THEN $3::numeric ELSE default_member_usage_limit END,
       usage_limit = CASE WHEN $4 THEN $5::numeric ELSE usage_limit END,
       usage_limit_enforced = COALESCE($6, usage_limit_enforced)
     WHERE id = $1`,
    [
      m.team.id,
      p.defaultMemberUsageLimit !== undefined,
      p.defaultMemberUsageLimit?.toString() ?? null,
      p.usageLimit !== undefined,
      p.usageLimit?.toString() ?? null,
      p.usageLimitEnforced ?? null,
    ],
  );
  teamBillingChanged(m.team.id);
}

export function allowedModelsView(allowed: Record<string, boolean> | null) {
  return { ok: true, allowed_models: allowed, all_allowed: allowed === null || Object.values(allowed).every(Boolean) };
}

export async function setAllowedModels(m: Membership, allowed: Record<string, boolean> | null) {
  requireManager(m);
  await db().pool.query('UPDATE teams SET allowed_models = $2 WHERE id = $1', [
    m.team.id,
    allowed === null ? null : JSON.stringify(allowed),
  ]);
  teamBillingChanged(m.team.id);
  return allowedModelsView(allowed);
}

/** What each member billed to the team in [from, to), from the ledger (charges less their refunds). */
export async function teamUsage(m: Membership, from: Date, to: Date) {
  const { rows } = await db().pool.query(
    `SELECT e.actor_user_id, e.currency, (-SUM(e.amount))::text AS total,
            COALESCE(tm.member_name, u.display_name) AS name
     FROM ledger_entries e LEFT JOIN users u ON u.id = e.actor_user_id
     LEFT JOIN team_members tm ON tm.team_id = e.team_id AND tm.user_id = e.actor_user_id
     WHERE e.team_id = $1 AND e.created_at >= $2 AND e.created_at < $3 AND e.kind IN ('charge', 'refund')
     GROUP BY e.actor_user_id, e.currency, tm.member_name, u.display_name
     ORDER BY -SUM(e.amount) DESC, e.actor_user_id`,
    [m.team.id, from, to],
  );
  const totals = new Map<string, bigint>();
  const byActor = rows.map((r) => {
    const units = BigInt(r.total);
    totals.set(r.currency, (totals.get(r.currency) ?? 0n) + units);
    return {
      actorSessionId: r.actor_user_id,
      displayName: r.name,
      totalAmount: toDisplayNumber(units, r.currency),
      currency: r.currency,
    };
  });
  return {
    byActor,
    totals: [...totals].map(([currency, units]) => ({
      totalAmount: toDisplayNumber(units, currency as 'USD'),
      currency,
    })),
  };
}

/** A fresh token for links and invitations: 32 random bytes, URL-safe (43 characters). */
