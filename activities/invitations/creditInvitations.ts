// Credit invitations and referral links (the spec's "Credit invitation" resource).
//
// An invitation with an amount is money set aside: creating it holds that much of the issuer's
// balance (a ledger hold, `invitation:<id>`), so the issuer cannot spend what they promised.
// Redeeming pays the hold out to the redeemer (ledger/transfers.ts: the issuer's debit and the
// redeemer's credit in one statement), in the same transaction that marks the row redeemed; a
// revocation or the expiry releases the hold. Every state change starts from the row locked
// `FOR UPDATE` and `status = 'active'`, so two redemptions of one code, or a redemption racing a
// revocation or the expiry, have exactly one winner whichever API process runs them.
//
// Each invitation is a workflow (workflows/creditInvitation.ts, id = the invitation's id, the
// issuer's account as SwitchyardAccountId) whose timer expires it; redeem and revoke signal it to
// end early. A referral link moves no money: it has no hold, no workflow and no expiry, and each
// account may use it once (the redemptions table's key).
import { randomInt } from 'node:crypto';
import type { PoolClient } from 'pg';
import { config } from '../config.js';
import { RequestError } from '../core/errors.js';
import { type Currency, formatAmount, parseAmount, toDisplayNumber } from '../core/money.js';
import { db } from '../db.js';
import { inTransaction } from '../accounts/teams.js';
import { InsufficientFunds } from '../ledger/ledger.js';
import { release, reserve } from '../ledger/holds.js';
import { payOutHold } from '../ledger/transfers.js';

type CreditInvitationType = 'invitation' | 'referralLink';
export type CreditInvitationStatus = 'active' | 'redeemed' | 'revoked' | 'expired';

export interface CreateInvitationInput {
  type?: CreditInvitationType;
  amount?: number;
  currency?: string;
  recipientName?: string;
  issuerName?: string;
  issuerNote?: string;
}

/** The most one invitation may carry (a typo guard, not a policy). */
const MAX_AMOUNT_USD = 1_000_000n * 1_000_000_000n;

// Upper-case letters and digits without the look-alikes (0/O, 1/I/L): a code read aloud or copied
// by hand survives, and it is URL-safe as it stands. 20 symbols of 31 is about 99 bits.
const CODE_ALPHABET = '23456789ABCDEFGHJKMNPQRSTUVWXYZ';
const CODE_LENGTH = 20;

export function newRedeemCode(): string {
  let code = '';
  for (let i = 0; i < CODE_LENGTH; i++) code += CODE_ALPHABET[randomInt(CODE_ALPHABET.length)];
  return code;
}

export function newInvitationId(): string {
  return `cinv_${newRedeemCode().toLowerCase()}`;
}

const invalidAmount = (message: string) => new RequestError(400, 'InvalidAmount', message, { param: 'amount' });

/** What the invitation carries, in the currency's smallest unit (0 and null for referral links). */
export function invitationAmount(input: CreateInvitationInput): { amount: bigint; currency: Currency | null } {
  if (input.type === 'referralLink') return { amount: 0n, currency: null };
  const raw = input.amount ?? 0;
  if (!Number.isFinite(raw) || raw < 0) throw invalidAmount('amount must be a number of at least 0.');
  if (raw === 0) return { amount: 0n, currency: null };
  if (input.currency === undefined)
    throw new RequestError(400, 'missing_required_parameter', 'currency is required when amount is above 0 (USD).', {
      param: 'currency',
    });
  if (input.currency.toUpperCase() !== 'USD')
    throw new RequestError(400, 'invalid_parameter_value', `Invitations are funded in USD, not '${input.currency}'.`, {
      param: 'currency',
    });
  let amount: bigint;
  try {
    amount = parseAmount(raw, 'USD');
  } catch {
    throw invalidAmount('amount has more decimals than USD amounts are kept with (9).');
  }
  if (amount > MAX_AMOUNT_USD) throw invalidAmount(`amount may be at most ${formatAmount(MAX_AMOUNT_USD, 'USD')} USD.`);
  return { amount, currency: 'USD' };
}

export interface CreditInvitationRow {
  id: string;
  code: string;
  type: CreditInvitationType;
  issuerAccountId: string;
  amount: bigint;
  currency: Currency | null;
  holdId: string | null;
  recipientName: string | null;
  issuerName: string | null;
  issuerNote: string | null;
  status: CreditInvitationStatus;
  createdAt: Date;
  expiresAt: Date | null;
}

const COLUMNS = `id, code, type, issuer_account_id AS "issuerAccountId", amount, currency, hold_id AS "holdId",
  recipient_name AS "recipientName", issuer_name AS "issuerName", issuer_note AS "issuerNote", status,
  created_at AS "createdAt", expires_at AS "expiresAt"`;

function toRow(r: Record<string, unknown>): CreditInvitationRow {
  return { ...(r as unknown as CreditInvitationRow), amount: BigInt(r.amount as string) };
}

/** An active invitation past its expiry is expired, whether or not its workflow has said so yet. */
function effectiveStatus(i: Pick<CreditInvitationRow, 'status' | 'expiresAt'>): CreditInvitationStatus {
  return i.status === 'active' && i.expiresAt && i.expiresAt.getTime() <= Date.now() ? 'expired' : i.status;
}

/** The spec's Credit invitation record. */
export function invitationView(i: CreditInvitationRow, linkBase: string) {
  return {
    insertId: i.id,
    redeemCode: i.code,
    url: `${linkBase}/api/invitations/lookup?code=${i.code}`,
    type: i.type,
    amount: i.currency ? toDisplayNumber(i.amount, i.currency) : 0,
    currency: i.amount > 0n ? i.currency : null,
  };
}

/** What anyone holding the code may see (GET /api/invitations/lookup): no account ids. */
export function lookupView(i: CreditInvitationRow) {
  return {
    type: i.type,
    amount: i.currency ? toDisplayNumber(i.amount, i.currency) : 0,
    currency: i.amount > 0n ? i.currency : null,
    recipientName: i.recipientName,
    issuerName: i.issuerName,
    issuerNote: i.issuerNote,
    status: effectiveStatus(i),
    expiresAt: i.expiresAt,
  };
}

export async function invitationByCode(code: string): Promise<CreditInvitationRow | undefined> {
  const { rows } = await db().pool.query(`SELECT ${COLUMNS} FROM credit_invitations WHERE code = $1`, [
    code.trim().toUpperCase(),
  ]);
  return rows[0] ? toRow(rows[0]) : undefined;
}

/**
 * Hold the issuer's money for a new invitation. The hold outlives the invitation by a day, so the
 * invitation's own expiry (its workflow's timer) releases it, and the hold sweeper is only the net
 * under a lost workflow.
 */
export async function holdForInvitation(accountId: string, id: string, amount: bigint) {
  let hold: Awaited<ReturnType<typeof reserve>>;
  try {
    hold = await reserve({
      accountId,
      usd: amount,
      idempotencyKey: `invitation:${id}`,
      ttlSeconds: config.creditInvitationTtlSeconds + 86_400,
    });
  } catch (err) {
    if (err instanceof InsufficientFunds) throw insufficient(amount, err.availableUsd);
    throw err;
  }
  // reserve() may fall back to the XNO balance; an invitation promises USD, so only USD will do
  if (hold.currency !== 'USD') {
    await release(hold.id);
    throw insufficient(amount, 0n);
  }
  return hold;
}

function insufficient(amount: bigint, available: bigint): RequestError {
  return new RequestError(
    400,
    'InsufficientBalance',
    `Insufficient balance: the invitation needs ${formatAmount(amount, 'USD')} USD and ` +
      `${formatAmount(available, 'USD')} USD is available.`,
    { details: { required: formatAmount(amount, 'USD'), available: formatAmount(available, 'USD') } },
  );
}

export type RedeemResult =
  | {
      ok: true;
      invitationId: string;
      type: CreditInvitationType;
      amount: bigint;
      currency: Currency | null;
      balanceAfter?: bigint;
    }
  | { ok: false; reason: 'not_found' | 'own' | 'already_used' }
  | { ok: false; reason: 'not_active'; status: CreditInvitationStatus };

async function lock(c: PoolClient, where: string, value: string): Promise<CreditInvitationRow | undefined> {
  const { rows } = await c.query(`SELECT ${COLUMNS} FROM credit_invitations WHERE ${where} = $1 FOR UPDATE`, [value]);
  return rows[0] ? toRow(rows[0]) : undefined;
}

/**
 * Redeem a code for `accountId`: credit it once, paying out the issuer's hold. The invitation's
 * row, the redemption and both ledger entries commit together or not at all.
 */
export async function redeemCreditInvitation(code: string, accountId: string): Promise<RedeemResult> {
  return inTransaction(async (c) => {
    const i = await lock(c, 'code', code.trim().toUpperCase());
    if (!i) return { ok: false, reason: 'not_found' };
    const status = effectiveStatus(i);
    if (status !== 'active') return { ok: false, reason: 'not_active', status };
    if (i.issuerAccountId === accountId) return { ok: false, reason: 'own' };
    const { rowCount } = await c.query(
      `INSERT INTO credit_invitation_redemptions (invitation_id, account_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`,
      [i.id, accountId],
    );
    if (!rowCount) return { ok: false, reason: 'already_used' };
    if (i.type === 'referralLink') return { ok: true, invitationId: i.id, type: i.type, amount: 0n, currency: null };
    await c.query(`UPDATE credit_invitations SET status = 'redeemed', closed_at = now() WHERE id = $1`, [i.id]);
    if (!i.holdId) return { ok: true, invitationId: i.id, type: i.type, amount: 0n, currency: null };
    const paid = await payOutHold(c, {
      holdId: i.holdId,
      toAccountId: accountId,
      reason: `credit invitation ${i.id}`,
      idempotencyKey: `invitation:${i.id}`,
    });
    // the hold is gone though the row is active: only the hold sweeper does that, after the
    // invitation's own expiry; treat the invitation as expired (the transaction rolls back)
    if (!paid) throw new RequestError(409, 'invitation_expired', 'This invitation has expired.');
    return {
      ok: true,
      invitationId: i.id,
      type: i.type,
      amount: paid.amount,
      currency: paid.currency,
      balanceAfter: paid.balanceAfter,
    };
  });
}

/**
 * End an active invitation (revoked by its issuer, or expired by its workflow's timer) and give the
 * issuer's hold back. Returns the status it ends in. Safe to repeat: a revoked or expired
 * invitation's hold is released again (a no-op once done), which also finishes the work of an
 * attempt that died between its commit and its release.
 */
export async function closeCreditInvitation(
  invitationId: string,
  to: 'revoked' | 'expired',
  issuerAccountId?: string,
): Promise<CreditInvitationStatus | 'not_found'> {
  const i = await inTransaction(async (c) => {
    const row = await lock(c, 'id', invitationId);
    if (!row || (issuerAccountId && row.issuerAccountId !== issuerAccountId)) return undefined;
    if (row.status === 'active') {
      await c.query(`UPDATE credit_invitations SET status = $2, closed_at = now() WHERE id = $1`, [row.id, to]);
      row.status = to;
    }
    return row;
  });
  if (!i) return 'not_found';
  if (i.holdId && (i.status === 'revoked' || i.status === 'expired')) await release(i.holdId);
  return i.status;
}

/** The workflow's timer fired: expire the invitation unless it was redeemed or revoked meanwhile. */
export function expireCreditInvitation(invitationId: string) {
  return closeCreditInvitation(invitationId, 'expired');
}

/** The issuer's invitation named by code, for a revoke (undefined: none of theirs). */
export async function issuersInvitation(accountId: string, code: string): Promise<CreditInvitationRow | undefined> {
  const i = await invitationByCode(code);
  return i && i.issuerAccountId === accountId ? i : undefined;
}

export async function listCreditInvitations(accountId: string): Promise<CreditInvitationRow[]> {
  const { rows } = await db().pool.query(
    `SELECT ${COLUMNS} FROM credit_invitations WHERE issuer_account_id = $1 ORDER BY created_at DESC, id LIMIT 200`,
    [accountId],
  );
  return rows.map(toRow);
}
