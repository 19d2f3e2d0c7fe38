// The API's side of credit invitations: creating one (the issuer's hold, then the row and its
// workflow through the job helper, which gives the hold back if the engine does not take it),
// and telling a running invitation's workflow that it has ended.
import type { Caller } from '../core/caller.js';
import { config } from '../config.js';
import { db } from '../db.js';
import { startJob } from '../jobs/jobs.js';
import { release } from '../ledger/holds.js';
import { temporal } from '../temporalClient.js';
import { creditInvitation, creditInvitationEndedSignal } from '../../workflows/creditInvitation.js';
import {
  type CreateInvitationInput,
  type CreditInvitationRow,
  holdForInvitation,
  invitationAmount,
  newInvitationId,
  newRedeemCode,
} from './creditInvitations.js';

export async function createCreditInvitation(
  caller: Caller,
  input: CreateInvitationInput,
): Promise<CreditInvitationRow> {
  const type = input.type ?? 'invitation';
  const { amount, currency } = invitationAmount({ ...input, type });
  const id = newInvitationId();
  const createdAt = new Date();
  const row: CreditInvitationRow = {
    id,
    code: newRedeemCode(),
    type,
    issuerAccountId: caller.accountId,
    amount,
    currency,
    holdId: null,
    recipientName: input.recipientName ?? null,
    issuerName: input.issuerName ?? null,
    issuerNote: input.issuerNote ?? null,
    status: 'active',
    createdAt,
    // a referral link moves no money and does not expire
    expiresAt:
      type === 'referralLink' ? null : new Date(createdAt.getTime() + config.creditInvitationTtlSeconds * 1000),
  };
  const columns = {
    id,
    status: 'active',
    code: row.code,
    type,
    issuer_account_id: caller.accountId,
    amount: amount.toString(),
    currency,
    recipient_name: row.recipientName,
    issuer_name: row.issuerName,
    issuer_note: row.issuerNote,
    created_at: createdAt,
    expires_at: row.expiresAt,
  };
  if (!row.expiresAt) {
    await db().pool.query(
      `INSERT INTO credit_invitations (${Object.keys(columns).join(', ')})
       VALUES (${Object.keys(columns)
         .map((_, i) => `$${i + 1}`)
         .join(', ')})`,
      Object.values(columns),
    );
    return row;
  }
  const hold = amount > 0n ? await holdForInvitation(caller.accountId, id, amount) : undefined;
  row.holdId = hold?.id ?? null;
  await startJob({
    id,
    accountId: caller.accountId,
    workflow: creditInvitation,
    args: [{ invitationId: id, expiresAtMs: row.expiresAt.getTime() }],
    reservation: hold && { fail: async () => void (await release(hold.id)) },
    row: { table: 'credit_invitations', columns: { ...columns, hold_id: row.holdId } },
    unavailable: {
      code: 'invitation_unavailable',
      message: 'Failed to create invitation (the workflow engine is unavailable). Nothing was held; retry.',
    },
  });
  return row;
}

/** Tell the invitation's workflow it has ended (best effort: its timer finds the row closed anyway). */
export async function signalInvitationEnded(invitationId: string, how: 'revoked' | 'redeemed'): Promise<void> {
  try {
    await (await temporal()).workflow.getHandle(invitationId).signal(creditInvitationEndedSignal, how);
  } catch (err) {
    if ((err as Error).name === 'WorkflowNotFoundError' || /not found|completed/i.test((err as Error).message)) return;
    console.error(`[invitations] could not signal ${invitationId}:`, err);
  }
}
