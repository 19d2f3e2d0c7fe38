// Paying a quote with an x402 payment payload: claim the quote (one payment at a time), check the
// payload names what was quoted, have the facilitator verify it and then settle it, and record
// the settlement (the quote's USD credited to the house account). A refusal at any step puts the
// quote back to `pending`, so the payer may try again with a good payment before it expires.
import type { PaymentPayload, SettleResponse } from '@x402/core/types';
import { acceptsQuote, settlePayment, verifyPayment } from './resourceServer.js';
import { claim, recordSettlement, refused, settlementUnknown, type X402Payment } from './payments.js';

export type PayOutcome =
  | { ok: true; settlement: SettleResponse }
  /** the payment was refused; the quote still waits for one */
  | { ok: false; reason: string }
  /** another payment for this quote is being settled, or it is paid or used already */
  | { ok: false; busy: true }
  /** the facilitator gave no verdict on the settlement */
  | { ok: false; unknown: true };

/** The EIP-3009 authorization's nonce: what makes one payment one payment. */
export function paymentNonce(payload: PaymentPayload): string | undefined {
  const auth = (payload.payload as { authorization?: { nonce?: unknown } } | undefined)?.authorization;
  return typeof auth?.nonce === 'string' ? auth.nonce.toLowerCase() : undefined;
}

export async function payQuote(p: X402Payment, payload: PaymentPayload): Promise<PayOutcome> {
  const nonce = paymentNonce(payload);
  if (!nonce) return { ok: false, reason: 'invalid_payload: no EIP-3009 authorization nonce' };
  if (!(await claim(p.id, 'pending', 'settling'))) return { ok: false, busy: true };
  if (!acceptsQuote(payload, p.requirements)) {
    await refused(p.id, 'payment_requirements_mismatch');
    return { ok: false, reason: 'payment_requirements_mismatch: the payment does not accept what was quoted' };
  }
  let verdict: Awaited<ReturnType<typeof verifyPayment>>;
  try {
    verdict = await verifyPayment(payload, p.requirements);
  } catch (err) {
    // the facilitator could not be asked: nothing moved, the quote waits again
    await refused(p.id, 'facilitator_unavailable');
    throw err;
  }
  if (!verdict.ok) {
    await refused(p.id, verdict.reason);
    return { ok: false, reason: verdict.reason };
  }
  const settled = await settlePayment(payload, p.requirements);
  if (settled.ok === 'unknown') {
    console.error(`[x402] ${p.id}: no verdict on the settlement, left as failed for the operator:`, settled.error);
    await settlementUnknown(p.id, settled.error);
    return { ok: false, unknown: true };
  }
  if (!settled.ok) {
    await refused(p.id, settled.reason);
    return { ok: false, reason: settled.reason };
  }
  // money moved on chain: from here a failure leaves the quote `settling` for the operator, never
  // back to `pending` (which would let it be paid twice)
  await recordSettlement(p, nonce, settled.response);
  return { ok: true, settlement: settled.response };
}
