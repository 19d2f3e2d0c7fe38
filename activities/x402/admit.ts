// An x402 request's payment (wire-details "x402 accountless payment"): the quote a request without
// a payment is answered with (402, its worst case rounded up to the USDC step), the payment taken
// through the facilitator, and the claim that lets one run of the request use it. The headers
// that say who pays are read in api/x402.ts.
import { encodePaymentRequiredHeader, encodePaymentResponseHeader } from '@x402/core/http';
import { RequestError } from '../core/errors.js';
import { formatAmount } from '../core/money.js';
import type { Exchange } from '../inference/exchange.js';
import { paymentNonce, payQuote } from './pay.js';
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
} from './payments.js';
import { requirementsFor, X402_USD_STEP } from './resourceServer.js';

/** The top-level `payment` object of a 402 (wire-details). */
function paymentObject(ex: Exchange, p: X402Payment) {
  const base = ex.origin();
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

function challenge(ex: Exchange, p: X402Payment, why?: string): RequestError {
  const message =
    `Payment required: $${formatAmount(p.amountUsd, 'USD')} (the most this request can cost). ` +
    (why ? `The payment was refused: ${why}. ` : '') +
    'Pay one of `payment.accepted` and replay the request with X-PAYMENT, or POST the completeUrl.';
  const required = {
    x402Version: 2,
    error: why ?? 'payment_required',
    resource: {
      url: `${ex.origin()}${ex.path}`,
      description: 'one request to the gateway',
      mimeType: 'application/json',
    },
    accepts: [p.requirements],
  };
  return new RequestError(402, 'insufficient_quota', message, {
    type: 'insufficient_quota',
    topLevel: { payment: paymentObject(ex, p), x402Version: 1 },
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
  ex: Exchange,
  route: string,
  body: Record<string, unknown>,
  worstUsd: () => bigint,
): Promise<string> {
  const state = ex.x402!;
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
    throw challenge(ex, await newQuote(route, body, hash, worstUsd()));
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
    if (!state.payment) throw challenge(ex, p);
    const outcome = await payQuote(p, state.payment);
    if (!outcome.ok) {
      if ('busy' in outcome) throw used((await paymentById(p.id)) ?? p);
      if ('unknown' in outcome)
        throw new RequestError(
          502,
          'x402_settlement_unknown',
          'The payment facilitator did not confirm the settlement. The payment is held for review; check its statusUrl.',
        );
      throw challenge(ex, p, outcome.reason);
    }
    const receipt = encodePaymentResponseHeader(outcome.settlement);
    ex.setHeader('X-PAYMENT-RESPONSE', receipt);
    ex.setHeader('PAYMENT-RESPONSE', receipt);
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
