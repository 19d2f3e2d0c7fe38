// Ways into a team: e-mail invitations, the invite link and join requests.
//
// An invitation is a workflow (workflows/teamInvitation.ts; workflow id = invitation id, the inviting
// owner's account as SwitchyardAccountId), started through the job helper: it e-mails the link, then
// waits for an accept or a revoke (workflow updates, which run the activities below) or for its
// expiry (a workflow timer), and records the outcome on the row. Every state change is one
// conditional update of the row (`status = 'pending'`), so an accept racing a revoke or the expiry
// has one winner whichever process runs it.
//
// The invite link is a token on the team: whoever holds it may ask to join (POST /api/teams/join),
// which makes a join request an owner or admin accepts or rejects.
import { randomBytes } from 'node:crypto';
import type { PoolClient } from 'pg';
import { db } from '../db.js';
import { RequestError } from '../core/errors.js';
import { sendMail } from '../mail/mailer.js';
import {
  addMember,
  conflict,
  forbidden,
  inTransaction,
  type Membership,
  newToken,
  notFound,
  requireManager,
} from './teams.js';

export type InvitationStatus = 'pending' | 'accepted' | 'revoked' | 'expired';

export interface Invitation {
  id: string;
  teamId: number;
  email: string;
  role: 'admin' | 'member';
  status: InvitationStatus;
  token: string;
  createdAt: Date;
  expiresAt: Date;
}

const INVITATION_COLUMNS = `i.id, i.team_id AS "teamId", i.email, i.role, i.status, i.token,
  i.created_at AS "createdAt", i.expires_at AS "expiresAt"`;

/** A pending invitation past its expiry is expired, whether or not its workflow has said so yet. */
function effectiveStatus(i: Pick<Invitation, 'status' | 'expiresAt'>): InvitationStatus {
  return i.status === 'pending' && i.expiresAt.getTime() <= Date.now() ? 'expired' : i.status;
}

export function invitationView(i: Invitation) {
  return {
    id: i.id,
    email: i.email,
    role: i.role,
    status: effectiveStatus(i),
    token: i.token,
    created_at: i.createdAt,
    expires_at: i.expiresAt,
  };
}

export function newInvitationId(): string {
  return `teaminv_${randomBytes(12).toString('hex')}`;
}

/** Refuse an invitation nobody could use: the address is a member already, or has one pending. */
export async function checkInvitable(m: Membership, email: string): Promise<void> {
  requireManager(m);
  const { rows } = await db().pool.query(
    `SELECT EXISTS (SELECT 1 FROM team_members tm JOIN users u ON u.id = tm.user_id
                    WHERE tm.team_id = $1 AND u.email = $2) AS member,
            EXISTS (SELECT 1 FROM team_invitations WHERE team_id = $1 AND email = $2 AND status = 'pending'
                    AND expires_at > now()) AS invited`,
    [m.team.id, email],
  );
  if (rows[0].member) throw conflict(`${email} is already a member of this team.`, 'already_member');
  if (rows[0].invited)
    throw conflict(`${email} already has a pending invitation to this team; revoke it first.`, 'already_invited');
}

export async function listInvitations(m: Membership): Promise<Invitation[]> {
  requireManager(m);
  const { rows } = await db().pool.query<Invitation>(
    `SELECT ${INVITATION_COLUMNS} FROM team_invitations i WHERE i.team_id = $1 ORDER BY i.created_at DESC, i.id`,
    [m.team.id],
  );
  return rows;
}

/** The invitation `token` names, or undefined. */
export async function invitationByToken(token: string): Promise<Invitation | undefined> {
  const { rows } = await db().pool.query<Invitation>(
    `SELECT ${INVITATION_COLUMNS} FROM team_invitations i WHERE i.token = $1`,
    [token],
  );
  return rows[0];
}

/** The team's invitation named by id or token, for a revoke. */
export async function findTeamInvitation(m: Membership, ref: { id?: string; token?: string }): Promise<Invitation> {
  requireManager(m);
  const { rows } = await db().pool.query<Invitation>(
    `SELECT ${INVITATION_COLUMNS} FROM team_invitations i
     WHERE i.team_id = $1 AND ($2::text IS NULL OR i.id = $2) AND ($3::text IS NULL OR i.token = $3)`,
    [m.team.id, ref.id ?? null, ref.token ?? null],
  );
  if (!rows[0]) throw notFound('No such invitation to this team.', 'invitation_not_found');
  return rows[0];
}

/** 409 for an invitation that can no longer be accepted or revoked. */
export function notPending(status: InvitationStatus): Error {
  return conflict(
    `This invitation is ${status}, not pending: it can no longer be accepted or revoked.`,
    `invitation_${status}`,
  );
}

// ---- the invitation workflow's activities ----

/** E-mail the invitation (nothing is sent for one that is no longer pending). Retried by the engine. */
export async function sendTeamInvitationMail(invitationId: string, linkBase: string): Promise<boolean> {
  const { rows } = await db().pool.query(
    `SELECT i.email, i.role, i.token, i.status, i.expires_at, t.name AS team, u.display_name AS inviter
     FROM team_invitations i JOIN teams t ON t.id = i.team_id LEFT JOIN users u ON u.id = i.invited_by
     WHERE i.id = $1`,
    [invitationId],
  );
  const r = rows[0];
  if (r?.status !== 'pending') return false;
  await sendMail({
    to: r.email,
    subject: `${r.inviter ?? 'Someone'} invited you to the team "${r.team}"`,
    text: [
      `${r.inviter ?? 'Someone'} invited you to join the team "${r.team}" ` +
        `as ${r.role === 'admin' ? 'an admin' : 'a member'}.`,
      '',
      `Invitation: ${linkBase}/api/teams/invitations/lookup?token=${r.token}`,
      '',
      `To accept, sign in (or sign up) with this address, ${r.email}, and send`,
      `POST ${linkBase}/api/teams/invitations/accept with {"token": "${r.token}"}.`,
      '',
      `The invitation expires at ${new Date(r.expires_at).toISOString()}.`,
    ].join('\n'),
  });
  return true;
}

export type AcceptResult =
  | { ok: true; alreadyMember: boolean }
  | { ok: false; reason: 'not_pending'; status: InvitationStatus }
  | { ok: false; reason: 'gone' | 'email_mismatch' };

/** Lock a pending invitation's row, expiring it first if its time is up; undefined if it is gone. */
async function lockInvitation(c: PoolClient, invitationId: string): Promise<Invitation | undefined> {
  const { rows } = await c.query<Invitation>(
    `SELECT ${INVITATION_COLUMNS} FROM team_invitations i WHERE i.id = $1 FOR UPDATE`,
    [invitationId],
  );
  const i = rows[0];
  if (i && effectiveStatus(i) === 'expired' && i.status === 'pending') {
    await c.query(`UPDATE team_invitations SET status = 'expired', closed_at = now() WHERE id = $1`, [i.id]);
    i.status = 'expired';
  }
  return i;
}

/** Make `userId` a member through the invitation, if it is still pending and addressed to them. */
export async function acceptTeamInvitation(invitationId: string, userId: number): Promise<AcceptResult> {
  return inTransaction(async (c) => {
    const i = await lockInvitation(c, invitationId);
    if (!i) return { ok: false, reason: 'gone' };
    if (i.status !== 'pending') return { ok: false, reason: 'not_pending', status: i.status };
    const { rows } = await c.query<{ email: string }>('SELECT email FROM users WHERE id = $1', [userId]);
    if (rows[0]?.email !== i.email) return { ok: false, reason: 'email_mismatch' };
    const added = await addMember(c, i.teamId, userId, i.role);
    await c.query(
      `UPDATE team_invitations SET status = 'accepted', accepted_by = $2, closed_at = now() WHERE id = $1`,
      [i.id, userId],
    );
    return { ok: true, alreadyMember: !added };
  });
}

/** Revoke a pending invitation; returns the status it ends in (revoked, or what it already was). */
export async function revokeTeamInvitation(invitationId: string): Promise<InvitationStatus | 'gone'> {
  return inTransaction(async (c) => {
    const i = await lockInvitation(c, invitationId);
    if (!i) return 'gone';
    if (i.status !== 'pending') return i.status;
    await c.query(`UPDATE team_invitations SET status = 'revoked', closed_at = now() WHERE id = $1`, [i.id]);
    return 'revoked';
  });
}

/** The workflow's timer fired: expire the invitation unless it was settled meanwhile. Returns its final status. */
export async function expireTeamInvitation(invitationId: string): Promise<InvitationStatus | 'gone'> {
  const { rows } = await db().pool.query<{ status: InvitationStatus }>(
    `UPDATE team_invitations SET status = CASE WHEN status = 'pending' THEN 'expired' ELSE status END,
       closed_at = COALESCE(closed_at, now())
     WHERE id = $1 RETURNING status`,
    [invitationId],
  );
  return rows[0]?.status ?? 'gone';
}

// ---- the invite link and join requests ----

export function inviteLinkView(m: Membership) {
  return { enabled: m.team.inviteLinkEnabled, token: m.team.inviteLinkToken };
}

/** Enable (a token is made the first time) or disable the link; the token survives a disable. */
export async function setInviteLink(m: Membership, enabled: boolean) {
  requireManager(m);
  const { rows } = await db().pool.query(
    `UPDATE teams SET invite_link_enabled = $2, invite_link_token = COALESCE(invite_link_token, $3)
     WHERE id = $1 RETURNING invite_link_enabled AS enabled, invite_link_token AS token`,
    [m.team.id, enabled, newToken()],
  );
  return { enabled: rows[0].enabled as boolean, token: rows[0].token as string };
}

/**
 * Count `n` invite-link e-mails against the team's allowance (5 a minute), all or none: one
 * conditional upsert on the shared throttle table, exact across API processes.
 */
async function admitInviteEmails(teamId: number, n: number): Promise<{ ok: true } | { ok: false; retry: number }> {
  const windowMs = 60_000;
  const now = Date.now();
  const start = Math.floor(now / windowMs) * windowMs;
  const { rows } = await db().pool.query(
    `INSERT INTO auth_throttle AS t (scope, subject, window_start, hits) SELECT 'team-invite-email', $1, $2, $3::int
     WHERE $3::int <= $4::int
     ON CONFLICT (scope, subject, window_start) DO UPDATE SET hits = t.hits + EXCLUDED.hits
       WHERE t.hits + EXCLUDED.hits <= $4::int
     RETURNING hits`,
    [String(teamId), new Date(start), n, TEAM_INVITE_EMAILS_PER_MINUTE],
  );
  if (rows.length > 0) return { ok: true };
  return { ok: false, retry: Math.max(1, Math.ceil((start + windowMs - now) / 1000)) };
}

const TEAM_INVITE_EMAILS_PER_MINUTE = 5;

/** E-mail the invite link to `emails`; each failure is logged and the rest still go. */
export async function emailInviteLink(m: Membership, emails: string[], linkBase: string, from: string) {
  requireManager(m);
  if (!m.team.inviteLinkEnabled || !m.team.inviteLinkToken)
    throw forbidden('The invite link is disabled; enable it first.', 'invite_link_disabled');
  const verdict = await admitInviteEmails(m.team.id, emails.length);
  if (!verdict.ok) throw rateLimited(verdict.retry);
  const token = m.team.inviteLinkToken;
  const results = await Promise.allSettled(
    emails.map((to) =>
      sendMail({
        to,
        subject: `${from} invited you to join the team "${m.team.name}"`,
        text: [
          `${from} shared the invite link of the team "${m.team.name}" with you.`,
          '',
          `Link: ${linkBase}/api/teams/invitations/lookup?token=${token}`,
          '',
          `To ask to join, sign in (or sign up) and send POST ${linkBase}/api/teams/join with {"token": "${token}"};`,
          'an owner or admin of the team then accepts your request.',
        ].join('\n'),
      }),
    ),
  );
  for (const [n, r] of results.entries())
    if (r.status === 'rejected')
      console.error(`[teams] could not e-mail the invite link to ${emails[n]}: ${(r.reason as Error).message}`);
}

function rateLimited(retry: number): Error {
  return new RequestError(
    429,
    'rate_limit_exceeded',
    `A team may e-mail its invite link to at most ${TEAM_INVITE_EMAILS_PER_MINUTE} addresses a minute. ` +
      `Retry in ${retry} s.`,
    { retryAfterSeconds: retry, details: { reason: 'rate_limit_exceeded' } },
  );
}

export interface JoinRequest {
  id: string;
  userId: number;
  status: 'pending' | 'accepted' | 'rejected';
  createdAt: Date;
  name: string;
  email: string;
}

export function joinRequestView(r: JoinRequest) {
  return { id: r.id, user_id: r.userId, status: r.status, created_at: r.createdAt, name: r.name, email: r.email };
}

/** The team an invite-link token opens, or 404; 403 while the link is disabled. */
async function teamByLink(token: string): Promise<{ id: number; name: string }> {
  const { rows } = await db().pool.query(
    'SELECT id, name, invite_link_enabled AS enabled FROM teams WHERE invite_link_token = $1',
    [token],
  );
  const t = rows[0];
  if (!t) throw notFound('No team has this invite link.', 'invite_link_not_found');
  if (!t.enabled) throw forbidden('This invite link is disabled.', 'invite_link_disabled');
  return t;
}

/**
 * Ask to join the team the link opens: a pending join request (one per person; asking again is
 * the same request). Someone already in the team is told so.
 */
export async function requestToJoin(token: string, userId: number): Promise<{ alreadyMember: boolean; id?: string }> {
  const team = await teamByLink(token);
  return inTransaction(async (c) => {
    const { rows: member } = await c.query('SELECT 1 FROM team_members WHERE team_id = $1 AND user_id = $2', [
      team.id,
      userId,
    ]);
    if (member.length) return { alreadyMember: true };
    const { rows } = await c.query<{ id: string }>(
      `INSERT INTO team_join_requests (id, team_id, user_id) VALUES (gen_random_uuid(), $1, $2)
       ON CONFLICT (team_id, user_id) WHERE status = 'pending' DO UPDATE SET created_at = team_join_requests.created_at
       RETURNING id`,
      [team.id, userId],
    );
    return { alreadyMember: false, id: rows[0]!.id };
  });
}

/** Withdraw one's own pending request to join the team the link opens. */
export async function withdrawJoinRequest(token: string, userId: number): Promise<void> {
  const { rows } = await db().pool.query('SELECT id FROM teams WHERE invite_link_token = $1', [token]);
  if (!rows[0]) throw notFound('No team has this invite link.', 'invite_link_not_found');
  const { rowCount } = await db().pool.query(
    `DELETE FROM team_join_requests WHERE team_id = $1 AND user_id = $2 AND status = 'pending'`,
    [rows[0].id, userId],
  );
  if (!rowCount) throw notFound('You have no pending request to join this team.', 'join_request_not_found');
}

export async function listJoinRequests(m: Membership): Promise<JoinRequest[]> {
  requireManager(m);
  const { rows } = await db().pool.query<JoinRequest>(
    `SELECT r.id, r.user_id AS "userId", r.status, r.created_at AS "createdAt", u.display_name AS name, u.email
     FROM team_join_requests r JOIN users u ON u.id = r.user_id WHERE r.team_id = $1
     ORDER BY (r.status = 'pending') DESC, r.created_at DESC`,
    [m.team.id],
  );
  return rows;
}

/** Accept (the requester becomes a member) or reject a pending join request; 409 once processed. */
export async function decideJoinRequest(m: Membership, id: string, action: 'accept' | 'reject'): Promise<void> {
  requireManager(m);
  await inTransaction(async (c) => {
    const { rows } = await c.query(
      'SELECT user_id, status FROM team_join_requests WHERE id = $1 AND team_id = $2 FOR UPDATE',
      [id, m.team.id],
    );
    const r = rows[0];
    if (!r) throw notFound('No such join request for this team.', 'join_request_not_found');
    if (r.status !== 'pending') throw conflict(`This join request was already ${r.status}.`, 'join_request_processed');
    if (action === 'accept') await addMember(c, m.team.id, r.user_id, 'member');
    await c.query(`UPDATE team_join_requests SET status = $2, processed_at = now() WHERE id = $1`, [
      id,
      action === 'accept' ? 'accepted' : 'rejected',
    ]);
  });
}

/** Delete a processed join request; a pending one must be accepted or rejected first (409). */
export async function deleteJoinRequest(m: Membership, id: string): Promise<void> {
  requireManager(m);
  const { rows } = await db().pool.query('SELECT status FROM team_join_requests WHERE id = $1 AND team_id = $2', [
    id,
    m.team.id,
  ]);
  if (!rows[0]) throw notFound('No such join request for this team.', 'join_request_not_found');
  if (rows[0].status === 'pending')
    throw conflict('This join request is pending: accept or reject it before deleting it.', 'join_request_pending');
  await db().pool.query(`DELETE FROM team_join_requests WHERE id = $1 AND status <> 'pending'`, [id]);
}

/** What the lookup route tells anyone holding a token: an invitation, or a team's link. */
export async function lookupToken(token: string) {
  const i = await invitationByToken(token);
  if (i) {
    const { rows } = await db().pool.query('SELECT name FROM teams WHERE id = $1', [i.teamId]);
    return { type: 'invitation' as const, email: i.email, status: effectiveStatus(i), teamName: rows[0]?.name ?? null };
  }
  const { rows } = await db().pool.query(
    'SELECT name, invite_link_enabled AS enabled FROM teams WHERE invite_link_token = $1',
    [token],
  );
  if (!rows[0]) throw notFound('No invitation or invite link has this token.', 'token_not_found');
  return { type: 'link' as const, teamName: rows[0].name as string, enabled: rows[0].enabled as boolean };
}
