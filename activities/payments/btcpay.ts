// BTCPay Server's Greenfield API (v1 routes, BTCPay 2.x payloads), the one payment processor the
// gateway speaks: invoices in USD for the configured store, their payment methods (the address, the
// coin amount and the wallet URI a deposit shows), the store's enabled payment methods (which
// tickers it offers), and the signature of its webhooks. Settings: BTCPAY_URL, BTCPAY_API_KEY
// (`Authorization: token <key>`; the key needs "view invoices", "create invoice" and "view your
// stores" on the store), BTCPAY_STORE_ID, BTCPAY_WEBHOOK_SECRET.
//
// Every failure to get an answer (not configured, unreachable, a 5xx, a refused key, a body that is
// not what Greenfield sends) is a ProcessorError: routes answer it as the spec's 500 "provider
// unavailable", and a workflow's activity fails and is retried by the engine. What BTCPay said goes
// to the operator's log, never to the caller.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { config } from '../config.js';
import { scrubSecrets } from '../core/errors.js';

/** Greenfield's invoice states (InvoiceStatus) and the exception beside them (InvoiceAdditionalStatus). */
type InvoiceStatus = 'New' | 'Processing' | 'Settled' | 'Expired' | 'Invalid';
type AdditionalStatus = 'None' | 'PaidLate' | 'PaidPartial' | 'Marked' | 'Invalid' | 'PaidOver';

export interface Invoice {
  id: string;
  storeId: string;
  /** decimal text in `currency` (USD here) */
  amount: string;
  currency: string;
  status: InvoiceStatus;
  additionalStatus: AdditionalStatus;
  /** unix seconds */
  createdTime: number;
  expirationTime: number;
  /** until when BTCPay still watches for payments (late ones included), unix seconds */
  monitoringExpiration: number;
}

interface InvoicePayment {
  id: string;
  /** decimal text in the payment method's currency */
  value: string;
  status: 'Invalid' | 'Processing' | 'Settled';
}

export interface PaymentMethod {
  /** `BTC-CHAIN`, `BTC-LN`, `XMR-CHAIN`, ... */
  paymentMethodId: string;
  currency: string;
  destination: string;
  /** the wallet URI (`bitcoin:...?amount=...`, `lightning:...`, `monero:...`) */
  paymentLink: string | null;
  /** USD per coin, decimal text */
  rate: string;
  /** the invoice amount in this method's currency, decimal text */
  amount: string;
  payments: InvoicePayment[];
}

export class ProcessorError extends Error {
  override name = 'ProcessorError';
}

/** The settings, or a ProcessorError naming the ones missing. */
function settings() {
  const { url, apiKey, storeId } = config.btcpay;
  const missing = [!url && 'BTCPAY_URL', !apiKey && 'BTCPAY_API_KEY', !storeId && 'BTCPAY_STORE_ID'].filter(Boolean);
  if (missing.length) throw new ProcessorError(`BTCPay Server is not configured (${missing.join(', ')} unset)`);
  return { base: url!.replace(/\/+$/, ''), apiKey: apiKey!, storeId: storeId! };
}

/** Whether deposits can be offered at all (the three connection settings are set). */
export function processorConfigured(): boolean {
  const { url, apiKey, storeId } = config.btcpay;
  return Boolean(url && apiKey && storeId);
}

const TIMEOUT_MS = 15_000;

/**
 * One Greenfield call: the parsed JSON answer of a 2xx, or a ProcessorError. With `allow404`, BTCPay's
 * `invoice-not-found` is `undefined` (a store that is not found, a wrong BTCPAY_STORE_ID, stays an error).
 */
async function call(method: 'GET' | 'POST', path: string, body?: unknown, allow404 = false): Promise<unknown> {
  const { base, apiKey, storeId } = settings();
  const url = `${base}/api/v1/stores/${encodeURIComponent(storeId)}${path}`;
  let res: Response;
  try {
    res = await fetch(url, {
      method,
      headers: {
        authorization: `token ${apiKey}`,
        accept: 'application/json',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
  } catch (err) {
    throw new ProcessorError(`BTCPay Server at ${base} could not be reached: ${(err as Error).message}`);
  }
  const text = await res.text().catch(() => '');
  if (res.status === 404 && allow404 && /"code"\s*:\s*"invoice-not-found"/.test(text)) return undefined;
  if (!res.ok) {
    throw new ProcessorError(
      `BTCPay Server answered ${method} ${path} with ${res.status}: ${scrubSecrets(text.slice(0, 500))}`,
    );
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new ProcessorError(`BTCPay Server answered ${method} ${path} with a body that is not JSON`);
  }
}

const STATUSES = new Set(['New', 'Processing', 'Settled', 'Expired', 'Invalid']);

function toInvoice(raw: unknown): Invoice {
  const r = raw as Record<string, unknown>;
  if (typeof r?.id !== 'string' || !STATUSES.has(r.status as string) || typeof r.expirationTime !== 'number')
    throw new ProcessorError(`BTCPay Server sent an invoice without an id, a known status or an expiration`);
  return {
    id: r.id,
    storeId: String(r.storeId ?? ''),
    amount: String(r.amount ?? '0'),
    currency: String(r.currency ?? ''),
    status: r.status as InvoiceStatus,
    additionalStatus: (r.additionalStatus as AdditionalStatus) ?? 'None',
    createdTime: Number(r.createdTime ?? 0),
    expirationTime: r.expirationTime,
    monitoringExpiration: Number(r.monitoringExpiration ?? r.expirationTime),
  };
}

/**
 * A USD invoice for `amountUsd` (decimal text) payable only with `paymentMethodId`. `orderId` is our
 * deposit's txId, so the store's own invoice list leads back to the deposit.
 */
export async function createInvoice(a: {
  amountUsd: string;
  paymentMethodId: string;
  orderId: string;
  accountId: string;
}): Promise<Invoice> {
  return toInvoice(
    await call('POST', '/invoices', {
      amount: a.amountUsd,
      currency: 'USD',
      metadata: { orderId: a.orderId, switchyardAccountId: a.accountId },
      checkout: { paymentMethods: [a.paymentMethodId], defaultPaymentMethod: a.paymentMethodId },
    }),
  );
}

/** The invoice, or undefined when the store has no such invoice. */
export async function getInvoice(invoiceId: string): Promise<Invoice | undefined> {
  const raw = await call('GET', `/invoices/${encodeURIComponent(invoiceId)}`, undefined, true);
  return raw === undefined ? undefined : toInvoice(raw);
}

function toPaymentMethod(raw: unknown): PaymentMethod {
  const r = raw as Record<string, unknown>;
  // BTCPay 1.x called these paymentMethod / cryptoCode; 2.x paymentMethodId / currency
  const id = r?.paymentMethodId ?? r?.paymentMethod;
  if (typeof id !== 'string') throw new ProcessorError('BTCPay Server sent a payment method without an id');
  const payments = Array.isArray(r.payments) ? r.payments : [];
  return {
    paymentMethodId: id,
    currency: String(r.currency ?? r.cryptoCode ?? ''),
    destination: String(r.destination ?? ''),
    paymentLink: typeof r.paymentLink === 'string' ? r.paymentLink : null,
    rate: String(r.rate ?? '0'),
    amount: String(r.amount ?? '0'),
    payments: payments.map((p: Record<string, unknown>) => ({
      id: String(p.id ?? ''),
      value: String(p.value ?? '0'),
      status: p.status as InvoicePayment['status'],
    })),
  };
}

/** The invoice's payment methods, with the payments each has received. */
export async function invoicePaymentMethods(invoiceId: string): Promise<PaymentMethod[]> {
  const raw = await call('GET', `/invoices/${encodeURIComponent(invoiceId)}/payment-methods`);
  if (!Array.isArray(raw)) throw new ProcessorError('BTCPay Server sent payment methods that are not a list');
  return raw.map(toPaymentMethod);
}

// The store's payment methods change when its operator sets one up: asked again after a minute.
let offered: { at: number; base: string; storeId: string; ids: Promise<Set<string>> } | undefined;
const OFFERED_TTL_MS = 60_000;

/** The payment method ids the store has enabled (e.g. `BTC-CHAIN`, `BTC-LN`). */
export function offeredPaymentMethods(): Promise<Set<string>> {
  const { base, storeId } = settings();
  if (offered && offered.base === base && offered.storeId === storeId && Date.now() - offered.at < OFFERED_TTL_MS)
    return offered.ids;
  const ids = (async () => {
    const raw = await call('GET', '/payment-methods?onlyEnabled=true');
    if (!Array.isArray(raw)) throw new ProcessorError('BTCPay Server sent store payment methods that are not a list');
    return new Set(
      raw
        .filter((m: Record<string, unknown>) => m.enabled !== false)
        .map((m: Record<string, unknown>) => String(m.paymentMethodId ?? m.paymentMethod)),
    );
  })();
  offered = { at: Date.now(), base, storeId, ids };
  ids.catch(() => {
    if (offered?.ids === ids) offered = undefined;
  });
  return ids;
}

/**
 * Whether `signature` (the `BTCPay-Sig` header, `sha256=<hex>`) is BTCPay's HMAC-SHA256 of exactly
 * these body bytes with the webhook secret. Compared in constant time. No secret set: nothing is genuine.
 */
export function genuineWebhook(body: Buffer, signature: string | undefined): boolean {
  const secret = config.btcpay.webhookSecret;
  if (!secret || !signature) return false;
  const m = /^sha256=([0-9a-f]{64})$/i.exec(signature.trim());
  if (!m) return false;
  const expected = createHmac('sha256', secret).update(body).digest();
  return timingSafeEqual(expected, Buffer.from(m[1]!, 'hex'));
}
