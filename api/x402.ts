// x402 accountless payment on the routes that offer it (wire-details "x402 accountless payment"):
//   - no credentials and `x-x402: true`: the request is priced (its worst case, as a reservation
//     would be) and answered 402 with the top-level `payment` object (and the x402 v2
//     `PAYMENT-REQUIRED` header, for the official SDK's clients);
//   - no credentials and `X-PAYMENT` (or v2's `PAYMENT-SIGNATURE`): the payment is verified and
//     settled through the facilitator, then the request runs, billed to the x402 house account
//     the payment was credited to; the answer carries `X-PAYMENT-RESPONSE`;
//   - POST /api/x402/complete/{id} (routes/x402.ts) runs the quoted request with the stored body.
// A payment is used once, for the request whose hash it was quoted for.
import type { Middleware } from 'koa';
import {
  decodePaymentSignatureHeader,
  encodePaymentRequiredHeader,
  encodePaymentResponseHeader,
} from '@x402/core/http';
import type { PaymentPayload } from '@x402/core/types';
import { RequestError } from '../activities/core/errors.js';
import { formatAmount } from '../activities/core/money.js';
import { paymentNonce, payQuote } from '../activities/x402/pay.js';
import {
  claim,
  markCompleted,
  newPaymentId,
  paymentById,
  pendingQuoteFor,
  quoteExpiry,
  requestHash,
  storeQuote,
  type X402Payment,
  x402Caller,
} from '../activities/x402/payments.js';
import { requirementsFor, X402_USD_STEP } from '../activities/x402/resourceServer.js';
import { authenticate, hasCredentials } from './middleware/auth.js';
import { publicOrigin } from './paths.js';
import type { AppContext, AppState } from './state.js';

const TRUTHY = /^(1|true|yes|on)$/i;

function paymentHeader(ctx: AppContext): string {
  return (ctx.get('x-payment') || ctx.get('payment-signature')).trim();
}

export function decodePayment(header: string): PaymentPayload {
  let payload: PaymentPayload;
  try {
    payload = decodePaymentSignatureHeader(header);
  } catch {
    throw new RequestError(400, 'invalid_payment', 'X-PAYMENT is not a base64-encoded x402 payment payload.');
  }
  if (!payload || typeof payload !== 'object' || typeof payload.accepted !== 'object' || !payload.payload)
    throw new RequestError(400, 'invalid_payment', 'X-PAYMENT lacks the x402 payload fields `accepted` and `payload`.');
  return payload;
}

/**
 * Instead of `authenticate` on routes that take x402: a request with credentials is authenticated
 * as always; one without, that asks for a quote or brings a payment, runs as the x402 house
 * account with ctx.state.x402 set; anything else is refused by `authenticate` (401 missing_api_key).
 */
export const authenticateOrX402: Middleware<AppState> = (ctx, next) => {
  const header = paymentHeader(ctx);
  // not async itself: a request with credentials (nearly all) runs authenticate's promise, not one around it
  if (hasCredentials(ctx) || (!header && !TRUTHY.test(ctx.get('x-x402').trim()))) return authenticate(ctx, next);
  return asX402Caller(ctx, next, header);
};

async function asX402Caller(ctx: AppContext, next: () => Promise<unknown>, header: string): Promise<void> {
  ctx.state.x402 = header ? { payment: decodePayment(header) } : {};
  ctx.state.caller = await x402Caller();
  await next();
}

/** The top-level `payment` object of a 402 (wire-details). */
function paymentObject(ctx: AppContext, p: X402Payment) {
  const base = publicOrigin(ctx);
  return {
    version: 1,
    paymentId: p.id,
    requestHash: p.requestHash,
    expiresAt: p.expiresAt.toISOString(),
    amountUsd: formatAmount(p.amountUsd, 'USD'),
    statusUrl: `${base}/api/x402/status/${p.id}`,
    completeUrl: `${base}/api/x402/complete/${p.id}`,
    accepted: [{ ...p.requirements, protocolScheme: 'exact', x402Version: 2 }],
  };
}

function challenge(ctx: AppContext, p: X402Payment, why?: string): RequestError {
  const message =
    `Payment required: $${formatAmount(p.amountUsd, 'USD')} (the most this request can cost). ` +
    (why ? `The payment was refused: ${why}. ` : '') +
    'Pay one of `payment.accepted` and replay the request with X-PAYMENT, or POST the completeUrl.';
  const required = {
    x402Version: 2,
    error: why ?? 'payment_required',
    resource: {
      url: `${publicOrigin(ctx)}${ctx.path}`,
      description: 'one request to the gateway',
      mimeType: 'application/json',
    },
    accepts: [p.requirements],
  };
  return new RequestError(402, 'insufficient_quota', message, {
    type: 'insufficient_quota',
    topLevel: { payment: paymentObject(ctx, p), x402Version: 1 },
    headers: { 'PAYMENT-REQUIRED': encodePaymentRequiredHeader(required) },
  });
}

async function newQuote(route: string, body: unknown, hash: string, worstUsd: bigint) {
  // USDC counts in millionths: round the worst case up to one, so the payer never pays short
  const amountUsd = ((worstUsd + X402_USD_STEP - 1n) / X402_USD_STEP) * X402_USD_STEP || X402_USD_STEP;
  const id = newPaymentId();
  const p: X402Payment = {
    id,
    requestHash: hash,
    route,
    body,
    amountUsd,
    requirements: await requirementsFor(amountUsd, id),
    status: 'pending',
    nonce: null,
    expiresAt: quoteExpiry(),
  };
  await storeQuote(p);
  return p;
}

const used = (p: X402Payment) =>
  new RequestError(
    409,
    'payment_already_used',
    p.status === 'completed'
      ? 'This payment has been used: its request was answered. Ask for a new quote (x-x402: true).'
      : `This payment is being processed (${p.status}); check its statusUrl.`,
  );

/**
 * The x402 step of a request that runs as the house account: answer a quote (throws the 402), or
 * take the payment and claim the paid quote for this run. Returns the payment's id; the caller
 * calls `finishPaid` when the answer is out, or `unclaimPaid` when the request failed.
 */
export async function admitX402(
  ctx: AppContext,
  route: string,
  body: Record<string, unknown>,
  worstUsd: () => bigint,
): Promise<string> {
  const state = ctx.state.x402!;
  if (body.stream === true)
    throw new RequestError(
      400,
      'unsupported_stream',
      'x402 payments cover non-streaming requests only; drop `stream`.',
      {
        param: 'stream',
      },
    );
  const hash = requestHash(route, body);
  const named = state.paymentId ?? (state.payment?.accepted?.extra as { paymentId?: unknown } | undefined)?.paymentId;
  let p = typeof named === 'string' ? await paymentById(named) : undefined;
  if (!p && state.payment) p = await pendingQuoteFor(hash);
  if (!p) {
    if (state.payment || state.paymentId)
      throw new RequestError(404, 'payment_not_found', 'No quote matches this payment. Ask for one with x-x402: true.');
    throw challenge(ctx, await newQuote(route, body, hash, worstUsd()));
  }
  if (p.requestHash !== hash)
    throw new RequestError(
      409,
      'payment_request_mismatch',
      'This payment was quoted for a different request (see its requestHash); it pays only for that one.',
    );
  if (p.status === 'pending') {
    if (p.expiresAt.getTime() <= Date.now())
      throw new RequestError(409, 'payment_expired', 'This quote has expired. Ask for a new one (x-x402: true).');
    if (!state.payment) throw challenge(ctx, p);
    const outcome = await payQuote(p, state.payment);
    if (!outcome.ok) {
      if ('busy' in outcome) throw used((await paymentById(p.id)) ?? p);
      if ('unknown' in outcome)
        throw new RequestError(
          502,
          'x402_settlement_unknown',
          'The payment facilitator did not confirm the settlement. The payment is held for review; check its statusUrl.',
        );
      throw challenge(ctx, p, outcome.reason);
    }
    const receipt = encodePaymentResponseHeader(outcome.settlement);
    ctx.set('X-PAYMENT-RESPONSE', receipt);
    ctx.set('PAYMENT-RESPONSE', receipt);
    p.status = 'paid';
    p.nonce = paymentNonce(state.payment) ?? null;
  } else if (p.status === 'paid' && state.payment && paymentNonce(state.payment) !== p.nonce) {
    throw used(p);
  }
  // paid: this run takes it (one run at a time; a failed run gives it back)
  if (!(await claim(p.id, 'paid', 'completing'))) throw used((await paymentById(p.id)) ?? p);
  return p.id;
}

/** The request was answered: the payment is used up. */
export const finishPaid = markCompleted;

/** The request failed after the payment: it stays paid, to be completed again (completeUrl). */
export async function unclaimPaid(id: string): Promise<void> {
  await claim(id, 'completing', 'paid');
}
