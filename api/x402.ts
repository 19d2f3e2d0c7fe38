// x402 accountless payment on the routes that offer it (wire-details "x402 accountless payment"):
//   - no credentials and `x-x402: true`: the request is priced (its worst case, as a reservation
//     would be) and answered 402 with the top-level `payment` object (and the x402 v2
//     `PAYMENT-REQUIRED` header, for the official SDK's clients);
//   - no credentials and `X-PAYMENT` (or v2's `PAYMENT-SIGNATURE`): the payment is verified and
//     settled through the facilitator, then the request runs, billed to the x402 house account
//     the payment was credited to; the answer carries `X-PAYMENT-RESPONSE`;
//   - POST /api/x402/complete/{id} (routes/x402.ts) runs the quoted request with the stored body.
// A payment is used once, for the request whose hash it was quoted for. Here: who pays (the
// headers); the quote, the payment and its claim are activities/x402/admit.ts.
import type { Middleware } from 'koa';
import { decodePaymentSignatureHeader } from '@x402/core/http';
import type { PaymentPayload } from '@x402/core/types';
import { RequestError } from '../activities/core/errors.js';
import { x402Caller } from '../activities/x402/payments.js';
import { authenticate, hasCredentials } from './middleware/auth.js';
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
