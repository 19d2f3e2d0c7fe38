// One credit invitation, durably: workflow id = the invitation's id (`cinv_...`), searchable by the
// issuer's account (SwitchyardAccountId). It waits for the invitation to end (the API signals a
// redemption or a revocation) or for its expiry (a workflow timer at `expiresAtMs`), and on expiry
// expires the invitation and releases the issuer's hold. The row decides races (redeem against
// revoke against the timer): each is a conditional change of the locked row, and the first wins.
import { condition, defineSignal, proxyActivities, setHandler } from '@temporalio/workflow';
import type * as activities from '../activities/index.js';

export interface CreditInvitationInput {
  invitationId: string;
  /** the row's expires_at, epoch ms */
  expiresAtMs: number;
}

/** The API ended the invitation: `revoked` (its hold must be released) or `redeemed` (paid out). */
export const creditInvitationEndedSignal = defineSignal<['revoked' | 'redeemed']>('ended');

// Short database transactions, retried while the database is unreachable.
const { closeCreditInvitation, expireCreditInvitation } = proxyActivities<typeof activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 20 },
});

export async function creditInvitation(input: CreditInvitationInput): Promise<string> {
  let ended: 'revoked' | 'redeemed' | undefined;
  setHandler(creditInvitationEndedSignal, (how) => {
    ended ??= how;
  });
  const signalled = await condition(() => ended !== undefined, Math.max(1, input.expiresAtMs - Date.now()));
  if (!signalled) return expireCreditInvitation(input.invitationId);
  // The API released the hold of a revoked invitation already; doing it again here (a no-op when
  // done) finishes the job if that API process died between its commit and the release.
  if (ended === 'revoked') return closeCreditInvitation(input.invitationId, 'revoked');
  return 'redeemed';
}
