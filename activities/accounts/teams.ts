// Teams: people who share an owner's account. A team has one owner, admins and members; the owner's
// account pays for the requests of members who choose `bill_to_team` (accounts/teamBudget.ts), within
// monthly limits and for the models the team allows. Roles: owner and admins view and manage members,
// invitations and settings; only the owner deletes the team or hands it over; members view.
// Everything here is plain SQL on the pool; a change that touches two rows is one transaction.
// Refusals are RequestErrors with the spec's statuses; api/routes/teams.ts renders them in the
// teams envelope. Members and their own preferences are in teamMembers.ts; settings, allowed
// models and usage in teamSettings.ts; invitations, invite links and join requests in
// teamInvitations.ts.
import { randomBytes } from 'node:crypto';
import type { PoolClient } from 'pg';
import { db, isUniqueViolation } from '../db.js';
import { RequestError } from '../core/errors.js';
import { formatAmount, toDisplayNumber } from '../core/money.js';
import { balances } from '../ledger/ledger.js';
import { forgetTeamBilling } from '../ledger/teamBudget.js';

// Whom a member bills to is cached in every API process (ledger/teamBudget.ts). The database's
// triggers tell every process of each change, this one too, but a moment later: a change made
// here is forgotten here at once, so the caller's next request already sees it.
export const teamBillingChanged = (teamId: number) => forgetTeamBilling([`t${teamId}`]);
export const memberBillingChanged = (userId: number) => forgetTeamBilling([`u${userId}`]);

export type Role = 'owner' | 'admin' | 'member';
export type TeamStatus = 'active' | 'paused' | 'suspended';

interface Team {
  id: number;
  uuid: string;
  name: string;
  ownerUserId: number;
  status: TeamStatus;
  pausedAt: Date | null;
  suspendedAt: Date | null;
  inviteLinkEnabled: boolean;
  inviteLinkToken: string | null;
  /** nano-USD a month; null: none */
  defaultMemberUsageLimit: bigint | null;
  usageLimit: bigint | null;
  usageLimitEnforced: boolean;
  /** model id → allowed; null: every model */
  allowedModels: Record<string, boolean> | null;
  createdAt: Date;
}

/** The caller's standing in a team: what every route past "which team" starts from. */
export interface Membership {
  team: Team;
  userId: number;
  role: Role;
}

const TEAM_COLUMNS = `t.id, t.uuid, t.name, t.owner_user_id AS "ownerUserId", t.status, t.paused_at AS "pausedAt",
  t.suspended_at AS "suspendedAt", t.invite_link_enabled AS "inviteLinkEnabled",
  t.invite_link_token AS "inviteLinkToken", t.default_member_usage_limit::text AS "defaultMemberUsageLimit",
  t.usage_limit::text AS "usageLimit", t.usage_limit_enforced AS "usageLimitEnforced",
  t.allowed_models AS "allowedModels", t.created_at AS "createdAt"`;

type TeamRow = Omit<Team, 'defaultMemberUsageLimit' | 'usageLimit'> & {
  defaultMemberUsageLimit: string | null;
  usageLimit: string | null;
};

function toTeam(r: TeamRow): Team {
  return {
    ...r,
    defaultMemberUsageLimit: r.defaultMemberUsageLimit == null ? null : BigInt(r.defaultMemberUsageLimit),
    usageLimit: r.usageLimit == null ? null : BigInt(r.usageLimit),
  };
}

// ---- refusals, in the spec's statuses ----

export const notFound = (message: string, reason = 'not_found') =>
  new RequestError(404, reason, message, { details: { reason } });
export const forbidden = (message: string, reason: string) =>
  new RequestError(403, reason, message, { details: { reason } });
export const conflict = (message: string, reason: string) =>
  new RequestError(409, reason, message, { details: { reason } });
export const badRequest = (message: string, reason: string, param?: string) =>
  new RequestError(400, reason, message, { details: { reason, ...(param ? { param } : {}) } });

/** A team reference from a URL: the numeric id or the UUID; anything else names no team. */
function teamKey(ref: string): { column: 'id' | 'uuid'; value: string } | null {
  if (/^\d{1,9}$/.test(ref)) return { column: 'id', value: ref };
  if (/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(ref))
    return { column: 'uuid', value: ref.toLowerCase() };
  return null;
}

/**
 * The caller's membership of the team `ref` names. A team the caller is not in is answered like a
 * team that does not exist (404), so ids cannot be probed for which teams exist.
 */
export async function membership(ref: string, userId: number): Promise<Membership> {
  const key = teamKey(ref);
  if (key) {
    const { rows } = await db().pool.query<TeamRow & { role: Role }>(
      `SELECT ${TEAM_COLUMNS}, m.role FROM teams t JOIN team_members m ON m.team_id = t.id AND m.user_id = $2
       WHERE t.${key.column} = $1`,
      [key.value, userId],
    );
    const r = rows[0];
    if (r) {
      const { role, ...team } = r;
      return { team: toTeam(team), userId, role };
    }
  }
  throw notFound(`No team "${ref}" among your teams.`, 'team_not_found');
}

/** Owners and admins manage; members may only look. */
export function requireManager(m: Membership): void {
  if (m.role === 'member')
    throw forbidden('Only the team owner or an admin may do this; you are a member.', 'insufficient_role');
}

export function requireOwner(m: Membership): void {
  if (m.role !== 'owner') throw forbidden('Only the team owner may do this.', 'owner_only');
}

/** Run `work` in a transaction on one connection. */
export async function inTransaction<T>(work: (c: PoolClient) => Promise<T>): Promise<T> {
  const client = await db().pool.connect();
  try {
    await client.query('BEGIN');
    const out = await work(client);
    await client.query('COMMIT');
    return out;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

const nameKey = (name: string) => name.trim().toLowerCase();

export function nameTaken(err: unknown, name: string): RequestError | undefined {
  if (isUniqueViolation(err) && (err as { constraint?: string }).constraint === 'teams_owner_user_id_name_key_key')
    return conflict(`You already own a team named "${name.trim()}". Choose another name.`, 'team_name_taken');
  return undefined;
}

// ---- teams ----

export async function createTeam(userId: number, name: string): Promise<Membership> {
  try {
    return await inTransaction(async (c) => {
      const { rows } = await c.query<TeamRow>(
        `INSERT INTO teams AS t (uuid, name, name_key, owner_user_id) VALUES (gen_random_uuid(), $1, $2, $3)
         RETURNING ${TEAM_COLUMNS}`,
        [name.trim(), nameKey(name), userId],
      );
      const team = toTeam(rows[0]!);
      await c.query(`INSERT INTO team_members (team_id, user_id, role) VALUES ($1, $2, 'owner')`, [team.id, userId]);
      return { team, userId, role: 'owner' as const };
    });
  } catch (err) {
    throw nameTaken(err, name) ?? err;
  }
}

export async function listTeams(userId: number): Promise<Membership[]> {
  const { rows } = await db().pool.query<TeamRow & { role: Role }>(
    `SELECT ${TEAM_COLUMNS}, m.role FROM teams t JOIN team_members m ON m.team_id = t.id
     WHERE m.user_id = $1 ORDER BY t.id`,
    [userId],
  );
  return rows.map(({ role, ...team }) => ({ team: toTeam(team), userId, role }));
}

export const usd = (units: bigint | null) => (units == null ? null : toDisplayNumber(units, 'USD'));

/** A team as lists show it: the spec's `uuid, name, status, role` (and the numeric id). */
export function teamSummary(m: Membership) {
  return { id: m.team.id, uuid: m.team.uuid, name: m.team.name, status: m.team.status, role: m.role };
}

/** The detail view; the balances are the owner's account's, which pays for the team. */
export async function teamDetail(m: Membership) {
  const t = m.team;
  const { rows } = await db().pool.query<{ accountId: string }>(
    'SELECT account_id AS "accountId" FROM users WHERE id = $1',
    [t.ownerUserId],
  );
  const b = rows[0] ? await balances(rows[0].accountId) : undefined;
  const manager = m.role !== 'member';
  return {
    ...teamSummary(m),
    created_at: t.createdAt,
    paused_at: t.pausedAt,
    suspended_at: t.suspendedAt,
    invite_link_enabled: t.inviteLinkEnabled,
    // the link admits people (after approval): only those who manage the team see it
    invite_link_token: manager ? t.inviteLinkToken : null,
    default_member_usage_limit_usd: usd(t.defaultMemberUsageLimit),
    usage_limit_usd: usd(t.usageLimit),
    usage_limit_enforced: t.usageLimitEnforced,
    balances: {
      usd_balance: formatAmount(b?.USD.amount ?? 0n, 'USD'),
      nano_balance: formatAmount(b?.XNO.amount ?? 0n, 'XNO'),
    },
  };
}

/** Rename and/or set the status; `paused_at` / `suspended_at` say since when. */
export async function updateTeam(m: Membership, patch: { name?: string; status?: TeamStatus }): Promise<Membership> {
  requireManager(m);
  try {
    const { rows } = await db().pool.query<TeamRow>(
      `UPDATE teams t SET name = COALESCE($2, name), name_key = COALESCE($3, name_key),
         status = COALESCE($4, status),
         paused_at = CASE WHEN $4::text IS NULL THEN paused_at WHEN $4 = 'paused'
                          THEN COALESCE(CASE WHEN status = 'paused' THEN paused_at END, now()) END,
         suspended_at = CASE WHEN $4::text IS NULL THEN suspended_at WHEN $4 = 'suspended'
                          THEN COALESCE(CASE WHEN status = 'suspended' THEN suspended_at END, now()) END
       WHERE id = $1 RETURNING ${TEAM_COLUMNS}`,
      [m.team.id, patch.name?.trim() ?? null, patch.name ? nameKey(patch.name) : null, patch.status ?? null],
    );
    if (!rows[0]) throw notFound('This team no longer exists.', 'team_not_found');
    teamBillingChanged(m.team.id);
    return { ...m, team: toTeam(rows[0]) };
  } catch (err) {
    throw nameTaken(err, patch.name ?? '') ?? err;
  }
}

/** Delete the team (owner only, naming it exactly). Returns the ids of its pending invitations. */
export async function deleteTeam(m: Membership, confirmName: string): Promise<string[]> {
  requireOwner(m);
  if (confirmName !== m.team.name)
    throw badRequest(`To delete the team, send its exact name ("${m.team.name}") as 'name'.`, 'name_mismatch', 'name');
  const pending = await inTransaction(async (c) => {
    const { rows } = await c.query<{ id: string }>(
      `SELECT id FROM team_invitations WHERE team_id = $1 AND status = 'pending'`,
      [m.team.id],
    );
    await c.query('DELETE FROM teams WHERE id = $1', [m.team.id]);
    return rows.map((r) => r.id);
  });
  teamBillingChanged(m.team.id);
  return pending;
}

export function newToken(): string {
  return randomBytes(32).toString('base64url');
}

/** Add `userId` to the team as `role`, unless they are in it already. Returns whether they were added. */
export async function addMember(c: PoolClient, teamId: number, userId: number, role: Role): Promise<boolean> {
  const { rowCount } = await c.query(
    `INSERT INTO team_members (team_id, user_id, role) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
    [teamId, userId, role],
  );
  return (rowCount ?? 0) > 0;
}
