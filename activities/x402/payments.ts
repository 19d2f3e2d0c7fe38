// x402 payments: a quote (402) bound to one request, and the life of the payment made for it.
//
//   pending    quoted; waits for a payment until `expires_at`
//   settling   a payment for it is being verified and settled (one at a time: the claim is a
//              conditional update from `pending`, so the same payment replayed twice at once, or
//              two payments for one quote, have one winner; a refused payment puts it back)
//   paid       the facilitator settled it on chain: the quote's USD is credited to the x402 house
//              account (ledger credit `x402:<id>`), from which the request is then billed as any
//              metered call; the request may run (replay with X-PAYMENT, or POST completeUrl)
//   completing the request is running (claimed from `paid`; a failure puts it back to `paid`)
//   completed  answered: the payment is used up
//   failed     the facilitator gave no verdict on a settlement (it may have moved money): left for
//              the operator, never retried by itself (see the README)
//
// The request hash (`sha256:` of the route and the body's canonical JSON) binds a payment to the
// request it was quoted for: a payment replayed with another body is refused.
import { createHash, randomBytes } from 'node:crypto';
import type { PaymentPayload, PaymentRequirements, SettleResponse } from '@x402/core/types';
import type { Caller } from '../core/caller.js';
import { config } from '../config.js';
import { CURRENCIES, formatAmount } from '../core/money.js';
import { db } from '../db.js';
import { credit } from '../ledger/ledger.js';

/** What an x402 request carries (the payment it brings, or the quote it names). */
export interface X402State {
  /** the decoded X-PAYMENT payload, when one was sent */
  payment?: PaymentPayload;
  /** the quote named by the URL (POST /api/x402/complete/{id}) */
  paymentId?: string;
}

export type PaymentStatus = 'pending' | 'settling' | 'paid' | 'completing' | 'completed' | 'failed';

export interface X402Payment {
  id: string;
  requestHash: string;
  route: string;
  body: unknown;
  amountUsd: bigint;
  requirements: PaymentRequirements;
  status: PaymentStatus;
  nonce: string | null;
  expiresAt: Date;
}

/** The account x402 payments are credited to and requests paid by x402 are billed from. */
export const X402_ACCOUNT_ID = '00000000-0000-4000-8000-000000000402';

let house: Promise<Caller> | undefined;

/** The caller a paid request runs as: the x402 house account, no key, no restrictions. */
export function x402Caller(): Promise<Caller> {
  house ??= (async () => {
    await db().pool.query(`INSERT INTO accounts (id, name) VALUES ($1, 'x402 payments') ON CONFLICT DO NOTHING`, [
      X402_ACCOUNT_ID,
    ]);
    for (const currency of CURRENCIES)
      await db().pool.query(
        `INSERT INTO balances (account_id, currency, updated_at) VALUES ($1, $2::"Currency", now()) ON CONFLICT DO NOTHING`,
        [X402_ACCOUNT_ID, currency],
      );
    return {
      keyId: null,
      accountId: X402_ACCOUNT_ID,
      keyPrefix: null,
      userId: null,
      dailyRequestLimit: null,
      dailyUsdLimit: null,
      providerAllow: null,
      providerDeny: [],
      zdrOnly: false,
      billingMode: 'paygo',
    };
  })();
  house.catch(() => {
    house = undefined;
  });
  return house;
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object')
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(value);
}

/** `sha256:<hex>` of the route and the body: key order and whitespace do not change it. */
export function requestHash(route: string, body: unknown): string {
  return `sha256:${createHash('sha256')
    .update(`${route}\n${canonical(body)}`)
    .digest('hex')}`;
}

export function newPaymentId(): string {
  return `pay_${randomBytes(16).toString('hex')}`;
}

const COLUMNS = `id, request_hash AS "requestHash", route, body, amount_usd AS "amountUsd", requirements, status, nonce,
  expires_at AS "expiresAt"`;

function toPayment(r: Record<string, unknown>): X402Payment {
  return { ...(r as unknown as X402Payment), amountUsd: BigInt(r.amountUsd as string) };
}

export async function storeQuote(q: {
  id: string;
  requestHash: string;
  route: string;
  body: unknown;
  amountUsd: bigint;
  requirements: PaymentRequirements;
  expiresAt: Date;
}): Promise<void> {
  await db().pool.query(
    `INSERT INTO x402_payments (id, request_hash, route, body, amount_usd, requirements, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [
      q.id,
      q.requestHash,
      q.route,
      JSON.stringify(q.body),
      q.amountUsd.toString(),
      JSON.stringify(q.requirements),
      q.expiresAt,
    ],
  );
}

export async function paymentById(id: string): Promise<X402Payment | undefined> {
  const { rows } = await db().pool.query(`SELECT ${COLUMNS} FROM x402_payments WHERE id = $1`, [id]);
  return rows[0] ? toPayment(rows[0]) : undefined;
}

/** The newest quote still waiting for this request (a payer that did not echo the quote's id). */
export async function pendingQuoteFor(hash: string): Promise<X402Payment | undefined> {
  const { rows } = await db().pool.query(
    `SELECT ${COLUMNS} FROM x402_payments WHERE request_hash = $1 AND status = 'pending' AND expires_at > now()
     ORDER BY created_at DESC LIMIT 1`,
    [hash],
  );
  return rows[0] ? toPayment(rows[0]) : undefined;
}

/** Move a payment from one status to another if it is still in the first: true for the one winner. */
export async function claim(id: string, from: PaymentStatus, to: PaymentStatus): Promise<boolean> {
  const { rowCount } = await db().pool.query(
    `UPDATE x402_payments SET status = $3 WHERE id = $1 AND status = $2 AND ($2 <> 'pending' OR expires_at > now())`,
    [id, from, to],
  );
  return (rowCount ?? 0) > 0;
}

/** A refused payment: the quote waits for another (the reason is kept for the status route's readers). */
export async function refused(id: string, reason: string): Promise<void> {
  await db().pool.query(
    `UPDATE x402_payments SET status = 'pending', error = $2 WHERE id = $1 AND status = 'settling'`,
    [id, reason],
  );
}

export async function settlementUnknown(id: string, error: string): Promise<void> {
  await db().pool.query(
    `UPDATE x402_payments SET status = 'failed', error = $2 WHERE id = $1 AND status = 'settling'`,
    [id, error],
  );
}

/**
 * The facilitator settled: record it and credit the quote to the house account (idempotent by the
 * payment's id), so the request it pays for can be billed as any other.
 */
export async function recordSettlement(p: X402Payment, nonce: string, settled: SettleResponse): Promise<void> {
  // the credit first: a payment marked paid always has its money in the books
  await x402Caller();
  await credit({
    accountId: X402_ACCOUNT_ID,
    currency: 'USD',
    amount: p.amountUsd,
    reason: `x402 payment ${p.id} (${settled.network} ${settled.transaction})`,
    idempotencyKey: `x402:${p.id}`,
  });
  await db().pool.query(
    `UPDATE x402_payments SET status = 'paid', nonce = $2, payer = $3, transaction = $4, error = NULL, paid_at = now()
     WHERE id = $1 AND status = 'settling'`,
    [p.id, nonce, settled.payer ?? null, settled.transaction],
  );
}

export async function markCompleted(id: string): Promise<void> {
  await db().pool.query(`UPDATE x402_payments SET status = 'completed', completed_at = now() WHERE id = $1`, [id]);
}

/** GET /api/x402/status/{id}: wire-details' status record. */
export async function statusView(id: string) {
  const { rows } = await db().pool.query(
    `SELECT ${COLUMNS}, expires_at <= now() AS expired FROM x402_payments WHERE id = $1`,
    [id],
  );
  if (!rows[0]) return undefined;
  const p = toPayment(rows[0]);
  const status = p.status === 'pending' && rows[0].expired ? 'expired' : p.status;
  const received = ['paid', 'completing', 'completed'].includes(p.status) ? p.amountUsd : 0n;
  return {
    paymentId: p.id,
    status,
    amountRequired: formatAmount(p.amountUsd, 'USD'),
    amountReceived: formatAmount(received, 'USD'),
    amountRemaining: formatAmount(p.amountUsd - received, 'USD'),
    payTo: p.requirements.payTo,
    expiresAt: p.expiresAt.toISOString(),
    pollAfterSeconds: status === 'pending' || status === 'settling' ? 2 : null,
    readyToComplete: status === 'paid',
  };
}

/** When a new quote stops waiting for its payment. */
export function quoteExpiry(): Date {
  return new Date(Date.now() + config.x402QuoteTtlSeconds * 1000);
}
