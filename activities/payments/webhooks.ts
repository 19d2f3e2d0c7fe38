// BTCPay Server's webhooks (POST /api/transaction/webhook/btcpay): checked against the
// `BTCPay-Sig` HMAC first, then handed to the deposit's workflow as a signal. A webhook carries
// no authority of its own: the workflow asks BTCPay what the invoice says (depositRun.ts), so a
// replayed, duplicated or reordered delivery can only make it look again.
//
// BTCPay retries a delivery that is not answered 2xx (after 10 s, 1 min, then every 10 min, 6
// times), so: events about invoices that are not ours, or deposits already closed, are answered 200
// and forgotten; a workflow engine that cannot be reached is answered 503 so BTCPay tries again.
import { config } from '../config.js';
import { RequestError } from '../core/errors.js';
import { temporal } from '../temporalClient.js';
import { invoiceEventSignal } from '../../workflows/cryptoDeposit.js';
import { genuineWebhook } from './btcpay.js';
import { depositOfInvoice } from './deposits.js';

/** What became of a delivery: signalled to a deposit's workflow, or ignored (and why). */
export type Delivery = { signalled: string } | { ignored: string };

/** The webhook's JSON, once its `BTCPay-Sig` proves BTCPay sent exactly these bytes; else 401 (or 400: not JSON). */
export function signedWebhook(body: Buffer, signature: string | undefined): unknown {
  if (!genuineWebhook(body, signature))
    throw new RequestError(
      401,
      'invalid_signature',
      config.btcpay.webhookSecret
        ? 'The BTCPay-Sig header is missing or is not the HMAC-SHA256 of this body with the webhook secret.'
        : 'Webhooks are refused: no webhook secret is configured (BTCPAY_WEBHOOK_SECRET).',
    );
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    throw new RequestError(400, 'invalid_json', 'The webhook body is not JSON.');
  }
}

/** A genuine event (activities/surfaces/schemas/deposits.ts): a signal to its deposit's workflow, if it is about one. */
export async function receiveWebhook(event: {
  type: string;
  invoiceId?: string;
  storeId?: string;
  deliveryId?: string;
}): Promise<Delivery> {
  const { type, invoiceId } = event;
  // a store's test delivery, or an event about something other than an invoice
  if (!invoiceId) return { ignored: `${type}: no invoice` };
  if (event.storeId !== config.btcpay.storeId) return { ignored: `${type}: another store's invoice` };
  const txId = await depositOfInvoice(invoiceId);
  if (!txId) return { ignored: `${type}: not a deposit's invoice` };
  try {
    const handle = (await temporal()).workflow.getHandle(txId);
    await handle.signal(invoiceEventSignal, { type, deliveryId: event.deliveryId ?? '' });
  } catch (err) {
    const e = err as Error;
    if (e.name === 'WorkflowNotFoundError' || /not found|already completed/i.test(e.message ?? ''))
      return { ignored: `${type}: deposit ${txId} is closed` };
    console.error(`[deposits] could not signal deposit ${txId}:`, err);
    throw new RequestError(503, 'deposit_unavailable', 'The deposit could not be reached just now; deliver again.', {
      retryAfterSeconds: 10,
    });
  }
  return { signalled: txId };
}
