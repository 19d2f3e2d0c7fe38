// One team invitation, durably: workflow id = the invitation id (`teaminv_...`), searchable by the
// inviting owner's account (SwitchyardAccountId). Reads like the process it runs:
//   e-mail the invitation (an activity the engine retries while the mail server is down) →
//   wait for the invitee to accept or a manager to revoke (workflow updates: each runs one activity,
//   a conditional update of the invitation's row, and answers the API with its result) or for the
//   expiry (a workflow timer at `expiresAtMs`) → record the outcome → done, returning it.
// The row decides races (accept against revoke against the timer): the first conditional update wins.
import { allHandlersFinished, condition, defineUpdate, proxyActivities, setHandler } from '@temporalio/workflow';
import type * as activities from '../activities/index.js';
import type { AcceptResult, InvitationStatus } from '../activities/accounts/teamInvitations.js';

export interface TeamInvitationInput {
  invitationId: string;
  /** when the invitation expires (the row's expires_at), epoch ms */
  expiresAtMs: number;
  /** the gateway's origin, for the link in the e-mail */
  linkBase: string;
}

/** The invitee accepts (their user id): answers what the row said. */
export const acceptInvitationUpdate = defineUpdate<AcceptResult, [number]>('accept');
/** A manager revokes: answers the status the invitation ends in. */
export const revokeInvitationUpdate = defineUpdate<InvitationStatus | 'gone'>('revoke');

// Mail: retried with backoff for about half an hour, then given up (the invitation still stands;
// its token is in the managers' list and can be passed on by hand).
const { sendTeamInvitationMail } = proxyActivities<typeof activities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumInterval: '5 minutes', maximumAttempts: 12 },
});
// Short database transactions.
const { acceptTeamInvitation, revokeTeamInvitation, expireTeamInvitation } = proxyActivities<typeof activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 10 },
});

export async function teamInvitation(input: TeamInvitationInput): Promise<string> {
  const { invitationId } = input;
  let outcome: InvitationStatus | 'gone' | undefined;
  setHandler(acceptInvitationUpdate, async (userId) => {
    if (outcome)
      return outcome === 'gone' ? { ok: false, reason: 'gone' } : { ok: false, reason: 'not_pending', status: outcome };
    const result = await acceptTeamInvitation(invitationId, userId);
    if (result.ok) outcome = 'accepted';
    else if (result.reason === 'not_pending') outcome = result.status;
    else if (result.reason === 'gone') outcome = 'gone';
    return result;
  });
  setHandler(revokeInvitationUpdate, async () => {
    if (outcome) return outcome;
    const status = await revokeTeamInvitation(invitationId);
    if (status !== 'pending') outcome = status;
    return status;
  });

  try {
    await sendTeamInvitationMail(invitationId, input.linkBase);
  } catch {
    // out of retries: the history shows every attempt and its failure; the invitation stands
  }
  const decided = await condition(() => outcome !== undefined, Math.max(1, input.expiresAtMs - Date.now()));
  if (!decided) outcome = await expireTeamInvitation(invitationId);
  await condition(allHandlersFinished);
  return outcome!;
}
