// A team's members (teams.ts): listing, roles, removal, leaving, a member's own preferences
// (`bill_to_team`, the name the team shows) and handing the team over to another member.
import type { PoolClient } from 'pg';
import { db } from '../db.js';
import { parseLimit } from '../core/money.js';
import {
  badRequest,
  conflict,
  forbidden,
  inTransaction,
  type Membership,
  memberBillingChanged,
  nameTaken,
  notFound,
  type Role,
  requireManager,
  requireOwner,
  teamBillingChanged,
  usd,
} from './teams.js';

const firstOfMonthSql = `date_trunc('month', now() AT TIME ZONE 'UTC')::date`;

export async function listMembers(m: Membership, page: number, limit: number | undefined) {
  const { rows: count } = await db().pool.query<{ n: string }>(
    'SELECT count(*) AS n FROM team_members WHERE team_id = $1',
    [m.team.id],
  );
  const total = Number(count[0]!.n);
  const per = limit ?? Math.max(total, 1);
  const { rows } = await db().pool.query(
    `SELECT u.id, u.uuid, u.email, u.display_name, m.role, m.joined_at, m.member_name,
            m.usage_limit::text AS usage_limit, m.usage_limit_enforced, COALESCE(s.spent, 0)::text AS spent
     FROM team_members m JOIN users u ON u.id = m.user_id
     LEFT JOIN team_usage s ON s.team_id = m.team_id AND s.user_id = m.user_id AND s.month = ${firstOfMonthSql}
     WHERE m.team_id = $1
     ORDER BY CASE m.role WHEN 'owner' THEN 0 WHEN 'admin' THEN 1 ELSE 2 END, m.joined_at, u.id
     LIMIT $2 OFFSET $3`,
    [m.team.id, per, (page - 1) * per],
  );
  return {
    members: rows.map((r) => ({
      sessionId: r.id,
      sessionUUID: r.uuid,
      role: r.role,
      joinedAt: r.joined_at,
      member_name: r.member_name,
      displayName: r.display_name,
      email: r.email,
      usage_limit_usd: r.usage_limit == null ? null : usd(BigInt(r.usage_limit)),
      usage_limit_enforced: r.usage_limit_enforced ?? m.team.usageLimitEnforced,
      usage_usd_monthly: usd(BigInt(r.spent)),
    })),
    pagination: { page, limit: per, total, totalPages: Math.max(1, Math.ceil(total / per)) },
  };
}

async function memberRole(teamId: number, userId: number, c?: PoolClient): Promise<Role | undefined> {
  const { rows } = await (c ?? db().pool).query<{ role: Role }>(
    'SELECT role FROM team_members WHERE team_id = $1 AND user_id = $2',
    [teamId, userId],
  );
  return rows[0]?.role;
}

/** A USD limit from a body (number, already range-checked by the schema) in nano-USD, or null. */
export function usdUnits(v: number | null | undefined): bigint | null | undefined {
  if (v === undefined) return undefined;
  return v === null ? null : parseLimit(v, 'USD');
}

/** Change a member's role, or their limit (amount and whether it is enforced). */
export async function updateMember(
  m: Membership,
  p: { sessionId: number; role?: 'admin' | 'member'; usageLimit?: bigint | null; usageLimitEnforced?: boolean },
): Promise<void> {
  requireManager(m);
  const target = await memberRole(m.team.id, p.sessionId);
  if (!target) throw notFound(`User ${p.sessionId} is not a member of this team.`, 'member_not_found');
  if (target === 'owner') throw forbidden("The owner's role and limits cannot be changed here.", 'cannot_change_owner');
  if (p.role !== undefined && p.sessionId === m.userId)
    throw badRequest('You cannot change your own role.', 'cannot_change_own_role', 'sessionId');
  await db().pool.query(
    `UPDATE team_members SET role = COALESCE($3, role),
       usage_limit = CASE WHEN $4 THEN $5::numeric ELSE usage_limit END,
       usage_limit_enforced = COALESCE($6, usage_limit_enforced)
     WHERE team_id = $1 AND user_id = $2 AND role <> 'owner'`,
    [
      m.team.id,
      p.sessionId,
      p.role ?? null,
      p.usageLimit !== undefined,
      p.usageLimit?.toString() ?? null,
      p.usageLimitEnforced ?? null,
    ],
  );
  memberBillingChanged(p.sessionId);
}

export async function removeMember(m: Membership, sessionId: number): Promise<void> {
  requireManager(m);
  if (sessionId === m.userId)
    throw badRequest('You cannot remove yourself; leave the team instead.', 'cannot_remove_self', 'sessionId');
  const target = await memberRole(m.team.id, sessionId);
  if (!target) throw notFound(`User ${sessionId} is not a member of this team.`, 'member_not_found');
  if (target === 'owner') throw forbidden('The owner cannot be removed from the team.', 'cannot_remove_owner');
  await db().pool.query(`DELETE FROM team_members WHERE team_id = $1 AND user_id = $2 AND role <> 'owner'`, [
    m.team.id,
    sessionId,
  ]);
  memberBillingChanged(sessionId);
}

export async function leaveTeam(m: Membership): Promise<void> {
  if (m.role === 'owner')
    throw forbidden('The owner cannot leave: transfer ownership first, or delete the team.', 'owner_cannot_leave');
  await db().pool.query('DELETE FROM team_members WHERE team_id = $1 AND user_id = $2', [m.team.id, m.userId]);
  memberBillingChanged(m.userId);
}

/** The caller's own preferences and the limit that applies to them (their override, or the team default). */
export async function ownPreferences(m: Membership) {
  const { rows } = await db().pool.query(
    `SELECT m.bill_to_team, m.member_name, m.usage_limit::text AS usage_limit, m.usage_limit_enforced,
            u.display_name
     FROM team_members m JOIN users u ON u.id = m.user_id WHERE m.team_id = $1 AND m.user_id = $2`,
    [m.team.id, m.userId],
  );
  const r = rows[0];
  if (!r) throw notFound('You are no longer a member of this team.', 'team_not_found');
  const own = r.usage_limit == null ? null : BigInt(r.usage_limit);
  const t = m.team;
  return {
    bill_to_team: r.bill_to_team,
    name: r.member_name ?? r.display_name,
    usage_limit_usd: usd(own),
    usage_limit_enforced: r.usage_limit_enforced,
    default_member_usage_limit_usd: usd(t.defaultMemberUsageLimit),
    default_usage_limit_enforced: t.usageLimitEnforced,
    effective_usage_limit_usd: usd(own ?? t.defaultMemberUsageLimit),
    effective_usage_limit_enforced: r.usage_limit_enforced ?? t.usageLimitEnforced,
  };
}

/**
 * Set the caller's own preferences. Billing to this team stops billing to any other: a user bills
 * to one team at a time (a unique index says so too).
 */
export async function updateOwnPreferences(m: Membership, p: { billToTeam?: boolean; name?: string }): Promise<void> {
  await inTransaction(async (c) => {
    if (p.billToTeam)
      await c.query('UPDATE team_members SET bill_to_team = false WHERE user_id = $1 AND team_id <> $2', [
        m.userId,
        m.team.id,
      ]);
    await c.query(
      `UPDATE team_members SET bill_to_team = COALESCE($3, bill_to_team), member_name = COALESCE($4, member_name)
       WHERE team_id = $1 AND user_id = $2`,
      [m.team.id, m.userId, p.billToTeam ?? null, p.name?.trim() ?? null],
    );
  });
  memberBillingChanged(m.userId);
}

/** Hand the team to another member: they become the owner, the current owner an admin. */
export async function transferOwnership(m: Membership, sessionId: number): Promise<void> {
  requireOwner(m);
  if (sessionId === m.userId)
    throw badRequest('You already own this team; name another member.', 'cannot_transfer_to_self', 'sessionId');
  try {
    await inTransaction(async (c) => {
      // lock the team row: two transfers at once must not both pass
      await c.query('SELECT 1 FROM teams WHERE id = $1 FOR UPDATE', [m.team.id]);
      const target = await memberRole(m.team.id, sessionId, c);
      if (!target) throw notFound(`User ${sessionId} is not a member of this team.`, 'member_not_found');
      if (target === 'owner') throw conflict('That member already owns this team.', 'already_owner');
      if ((await memberRole(m.team.id, m.userId, c)) !== 'owner')
        throw forbidden('Only the team owner may do this.', 'owner_only');
      await c.query(`UPDATE team_members SET role = 'admin' WHERE team_id = $1 AND user_id = $2`, [
        m.team.id,
        m.userId,
      ]);
      await c.query(`UPDATE team_members SET role = 'owner' WHERE team_id = $1 AND user_id = $2`, [
        m.team.id,
        sessionId,
      ]);
      await c.query('UPDATE teams SET owner_user_id = $2 WHERE id = $1', [m.team.id, sessionId]);
    });
    teamBillingChanged(m.team.id);
  } catch (err) {
    throw nameTaken(err, m.team.name) ?? err;
  }
}
