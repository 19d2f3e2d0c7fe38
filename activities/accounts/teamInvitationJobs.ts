// The API's side of invitation workflows (workflows/teamInvitation.ts): starting one through the
// job helper (row first, then the workflow; workflow id = invitation id, the inviting user's account
// as SwitchyardAccountId), and asking a running one to accept or revoke (workflow updates, so the
// workflow's history records who did what, and the answer is the row's own verdict).
import { config } from '../config.js';
import { RequestError } from '../core/errors.js';
import { startJob } from '../jobs/jobs.js';
import { temporal } from '../temporalClient.js';
import { acceptInvitationUpdate, revokeInvitationUpdate, teamInvitation } from '../../workflows/teamInvitation.js';
import {
  type AcceptResult,
  checkInvitable,
  type Invitation,
  type InvitationStatus,
  invitationView,
  newInvitationId,
} from './teamInvitations.js';
import { type Membership, newToken } from './teams.js';
import { normalizeEmail } from './users.js';

export async function inviteByEmail(
  m: Membership,
  inviter: { accountId: string },
  rawEmail: string,
  role: 'admin' | 'member',
  linkBase: string,
) {
  const email = normalizeEmail(rawEmail);
  await checkInvitable(m, email);
  const id = newInvitationId();
  const createdAt = new Date();
  const expiresAt = new Date(createdAt.getTime() + config.teamInvitationTtlSeconds * 1000);
  const invitation: Invitation = {
    id,
    teamId: m.team.id,
    email,
    role,
    status: 'pending',
    token: newToken(),
    createdAt,
    expiresAt,
  };
  await startJob({
    id,
    accountId: inviter.accountId,
    workflow: teamInvitation,
    args: [{ invitationId: id, expiresAtMs: expiresAt.getTime(), linkBase }],
    row: {
      table: 'team_invitations',
      columns: {
        id,
        status: 'pending',
        team_id: m.team.id,
        email,
        role,
        token: invitation.token,
        invited_by: m.userId,
        created_at: createdAt,
        expires_at: expiresAt,
      },
    },
    unavailable: {
      code: 'invitation_unavailable',
      message: 'The invitation could not be started (the workflow engine is unavailable). Nothing was sent; retry.',
    },
  });
  return invitationView(invitation);
}

/** The engine could not be asked: nothing changed, the caller may retry. */
function unavailable(err: unknown): RequestError {
  console.error('[teams] the workflow engine did not take an invitation update:', err);
  return new RequestError(
    503,
    'invitation_unavailable',
    'The invitation could not be reached just now (the workflow engine is unavailable). Nothing changed; retry.',
    { retryAfterSeconds: 5 },
  );
}

/** A workflow that has closed (expired, revoked, accepted) no longer takes updates. */
function closed(err: unknown): boolean {
  const e = err as Error;
  return e.name === 'WorkflowNotFoundError' || /not found|already completed|completed/i.test(e.message ?? '');
}

/** Accept through the invitation's workflow; undefined when the workflow has closed already. */
export async function acceptThroughWorkflow(invitationId: string, userId: number): Promise<AcceptResult | undefined> {
  try {
    const handle = (await temporal()).workflow.getHandle(invitationId);
    return await handle.executeUpdate(acceptInvitationUpdate, { args: [userId] });
  } catch (err) {
    if (closed(err)) return undefined;
    throw unavailable(err);
  }
}

/** Revoke through the invitation's workflow: the status it ends in (undefined: the workflow had closed). */
export async function revokeThroughWorkflow(invitationId: string): Promise<InvitationStatus | 'gone' | undefined> {
  try {
    const handle = (await temporal()).workflow.getHandle(invitationId);
    return await handle.executeUpdate(revokeInvitationUpdate);
  } catch (err) {
    if (closed(err)) return undefined;
    throw unavailable(err);
  }
}

/** The pending invitations of a deleted team end at once (their rows are gone with the team). */
export async function revokeAll(invitationIds: string[]): Promise<void> {
  await Promise.all(
    invitationIds.map((id) =>
      revokeThroughWorkflow(id).catch((err) => console.error(`[teams] could not end invitation ${id}:`, err)),
    ),
  );
}
