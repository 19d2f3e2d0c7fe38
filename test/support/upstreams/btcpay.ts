// biome-ignore-all lint/suspicious/noExplicitAny: request bodies are arbitrary JSON
// A loopback BTCPay Server for tests, speaking the Greenfield API (v1 routes, BTCPay 2.x payloads) as
// activities/payments/btcpay.ts uses it, with BTCPay's own rules for an invoice's life:
//   GET  /api/v1/stores/{storeId}/payment-methods[?onlyEnabled=true]   [{paymentMethodId, enabled, config}]
//   POST /api/v1/stores/{storeId}/invoices                              InvoiceData (status New), 400 on a bad amount
//   GET  /api/v1/stores/{storeId}/invoices/{id}                         InvoiceData, 404 invoice-not-found
//   GET  /api/v1/stores/{storeId}/invoices/{id}/payment-methods         [{paymentMethodId, currency, destination,
//        paymentLink, rate, amount, due, totalPaid, paymentMethodPaid, paymentMethodFee, payments[], activated}]
// `Authorization: token <key>` is checked (401 unauthenticated); another store id is 404 store-not-found.
//
// Invoices move as BTCPay moves them, driven by the test as the chain would drive them:
//  - pay(): a payment seen (status Processing). Paid in full: New → Processing; less: New with
//    additionalStatus PaidPartial; after the invoice expired: it stays Expired, with PaidLate (in full)
//    or PaidPartial. Webhooks InvoiceReceivedPayment (afterExpiration, payment), then InvoiceProcessing.
//  - confirm(): the payment Settled (InvoicePaymentSettled); a Processing invoice whose payments are all
//    settled becomes Settled (InvoiceSettled).
//  - the expiration time passing (a timer): New → Expired (InvoiceExpired), PaidPartial kept.
//  - the monitoring expiration passing: a Processing invoice still unconfirmed → Invalid (InvoiceInvalid).
//  - markInvalid(): the operator marks it Invalid (InvoiceInvalid, additionalStatus Marked).
// Every event is a webhook POSTed to the registered URL with `BTCPay-Sig: sha256=<HMAC-SHA256 of the
// body with the webhook secret>`. Deliveries go out at once, or are held (`holdWebhooks`) so a test
// can send them in any order, twice, at the same time, or signed with a wrong secret.
// Failures: `failNext(n, status, only)` answers the next n API requests (matching `only`) with that status;
// `stall(only)` holds the answers to matching requests until `unstall()` (a BTCPay that hangs).
import http from 'node:http';
import { createHmac, randomBytes } from 'node:crypto';
import { listenOnLoopback, closeServer } from './loopback.js';

type InvoiceStatus = 'New' | 'Processing' | 'Settled' | 'Expired' | 'Invalid';

interface Payment {
  id: string;
  receivedDate: number;
  /** coin, decimal text */
  value: string;
  status: 'Processing' | 'Settled' | 'Invalid';
}

interface LoopbackInvoice {
  id: string;
  amount: string;
  currency: string;
  status: InvoiceStatus;
  additionalStatus: 'None' | 'PaidLate' | 'PaidPartial' | 'Marked' | 'PaidOver';
  createdTime: number;
  expirationTime: number;
  monitoringExpiration: number;
  metadata: any;
  paymentMethodId: string;
  coinCurrency: string;
  destination: string;
  /** USD per coin, decimal text; coin amount = amount / rate rounded up to 8 decimals */
  rate: string;
  coinAmount: string;
  payments: Payment[];
  timers: NodeJS.Timeout[];
}

interface Delivery {
  deliveryId: string;
  type: string;
  invoiceId: string;
  body: string;
  /** the status the gateway answered (undefined: not sent yet, or no answer) */
  answered?: number;
}

export interface BtcpayUpstream {
  url: string;
  apiKey: string;
  storeId: string;
  webhookSecret: string;
  invoices: Map<string, LoopbackInvoice>;
  /** every API request, in order */
  requests: Array<{ method: string; path: string; auth: string | undefined; body: any }>;
  /** every webhook made, in order (sent or held) */
  deliveries: Delivery[];
  /** where webhooks go (the gateway's route) */
  webhookTo(url: string): void;
  /** hold webhooks instead of sending them (send them with deliver) */
  holdWebhooks(hold: boolean): void;
  /** send a delivery (again, as a redelivery, when it was sent before); `secret` signs it instead */
  deliver(d: Delivery, opts?: { secret?: string }): Promise<number>;
  /** the payment methods the store has enabled */
  enable(...paymentMethodIds: string[]): void;
  /** how long new invoices stay payable, and how long BTCPay watches them after, seconds */
  timing(t: { expirationSeconds?: number; monitoringSeconds?: number }): void;
  /** a payment of `value` coins (default: what is still due) seen on chain; returns its id */
  pay(invoiceId: string, value?: string): Promise<string>;
  /** the payment (default: every unsettled one) confirmed */
  confirm(invoiceId: string, paymentId?: string): Promise<void>;
  markInvalid(invoiceId: string): Promise<void>;
  /** answer the next n API requests (those whose `METHOD /path` matches `only`) with `status` */
  failNext(n: number, status?: number, only?: RegExp): void;
  /** hold the answers to API requests matching `only` until `unstall()` (a slow BTCPay); the number held so far */
  stall(only: RegExp): void;
  unstall(): void;
  stalled(): number;
  /** the invoice made for deposit `txId` (its orderId) */
  invoiceOf(txId: string): LoopbackInvoice | undefined;
  close(): Promise<void>;
}

/** USD per coin; the store's rate source, fixed for the tests. */
const RATES: Record<string, string> = { BTC: '43210.55', LTC: '87.5', XMR: '150.25', DOGE: '0.125' };
const COIN_DECIMALS = 8;

/** Decimal text → [numerator, denominator]. */
function frac(text: string): [bigint, bigint] {
  const [w, f = ''] = text.split('.');
  return [BigInt(w! + f), 10n ** BigInt(f.length)];
}

/** n / d as decimal text with `decimals` places, rounded up. */
function decimalUp(n: bigint, d: bigint, decimals: number): string {
  const scale = 10n ** BigInt(decimals);
  const units = (n * scale + d - 1n) / d;
  const s = units.toString().padStart(decimals + 1, '0');
  return `${s.slice(0, -decimals)}.${s.slice(-decimals)}`.replace(/\.?0+$/, '') || '0';
}

/** Coin decimal text → units of 1e-8. */
const units = (text: string) => {
  const [n, d] = frac(text);
  return (n * 10n ** BigInt(COIN_DECIMALS)) / d;
};
const fromUnits = (u: bigint) => decimalUp(u, 10n ** BigInt(COIN_DECIMALS), COIN_DECIMALS);

const SCHEMES: Record<string, string> = { BTC: 'bitcoin', LTC: 'litecoin', XMR: 'monero', DOGE: 'dogecoin' };

export async function startBtcpayUpstream(
  opts: { apiKey?: string; storeId?: string; webhookSecret?: string } = {},
): Promise<BtcpayUpstream> {
  const apiKey = opts.apiKey ?? `btcpay-key-${randomBytes(6).toString('hex')}`;
  const storeId = opts.storeId ?? `Store${randomBytes(8).toString('hex')}`;
  const webhookSecret = opts.webhookSecret ?? `whsec-${randomBytes(12).toString('hex')}`;
  const webhookId = `Wh${randomBytes(6).toString('hex')}`;
  const invoices = new Map<string, LoopbackInvoice>();
  const requests: BtcpayUpstream['requests'] = [];
  const deliveries: Delivery[] = [];
  let enabled = new Set(['BTC-CHAIN', 'BTC-LN', 'LTC-CHAIN']);
  let expirationSeconds = 900;
  let monitoringSeconds = 3600;
  let webhookUrl: string | undefined;
  let hold = false;
  let failures: { left: number; status: number; only?: RegExp } = { left: 0, status: 503 };
  let stalling: { only: RegExp; held: number; released: Promise<void>; release: () => void } | undefined;
  let base = '';
  const now = () => Math.floor(Date.now() / 1000);

  const paidUnits = (inv: LoopbackInvoice) =>
    inv.payments.filter((p) => p.status !== 'Invalid').reduce((s, p) => s + units(p.value), 0n);
  const dueUnits = (inv: LoopbackInvoice) => units(inv.coinAmount) - paidUnits(inv);

  function invoiceData(inv: LoopbackInvoice) {
    return {
      id: inv.id,
      storeId,
      amount: inv.amount,
      currency: inv.currency,
      type: 'Standard',
      checkoutLink: `${base}/i/${inv.id}`,
      createdTime: inv.createdTime,
      expirationTime: inv.expirationTime,
      monitoringExpiration: inv.monitoringExpiration,
      status: inv.status,
      additionalStatus: inv.additionalStatus,
      availableStatusesForManualMarking: inv.status === 'Settled' ? ['Invalid'] : ['Settled', 'Invalid'],
      archived: false,
      metadata: inv.metadata,
      checkout: { paymentMethods: [inv.paymentMethodId], defaultPaymentMethod: inv.paymentMethodId },
    };
  }

  function paymentMethods(inv: LoopbackInvoice) {
    const paid = fromUnits(paidUnits(inv));
    const link =
      inv.paymentMethodId === 'BTC-LN'
        ? `lightning:${inv.destination}`
        : `${SCHEMES[inv.coinCurrency] ?? inv.coinCurrency.toLowerCase()}:${inv.destination}?amount=${inv.coinAmount}`;
    return [
      {
        paymentMethodId: inv.paymentMethodId,
        currency: inv.coinCurrency,
        destination: inv.destination,
        paymentLink: link,
        rate: inv.rate,
        paymentMethodPaid: paid,
        totalPaid: paid,
        due: (() => {
          const d = dueUnits(inv);
          return d < 0n ? `-${fromUnits(-d)}` : fromUnits(d);
        })(),
        amount: inv.coinAmount,
        paymentMethodFee: '0',
        payments: inv.payments.map((p) => ({
          id: p.id,
          receivedDate: p.receivedDate,
          value: p.value,
          fee: '0',
          status: p.status,
          destination: inv.destination,
        })),
        activated: true,
        additionalData: {},
      },
    ];
  }

  async function post(d: Delivery, secret: string): Promise<number> {
    if (!webhookUrl) return 0;
    const sig = `sha256=${createHmac('sha256', secret).update(d.body).digest('hex')}`;
    try {
      const res = await fetch(webhookUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'btcpay-sig': sig, 'user-agent': 'BTCPayServer' },
        body: d.body,
      });
      await res.arrayBuffer();
      d.answered = res.status;
      return res.status;
    } catch {
      return 0;
    }
  }

  /** Makes (and unless held, sends) the webhook of `type` about `inv`. */
  async function event(inv: LoopbackInvoice, type: string, extra: Record<string, unknown> = {}): Promise<void> {
    const deliveryId = `Dl${randomBytes(8).toString('hex')}`;
    const body = JSON.stringify({
      deliveryId,
      webhookId,
      originalDeliveryId: deliveryId,
      isRedelivery: false,
      type,
      timestamp: now(),
      storeId,
      invoiceId: inv.id,
      metadata: inv.metadata,
      ...extra,
    });
    const d: Delivery = { deliveryId, type, invoiceId: inv.id, body };
    deliveries.push(d);
    if (!hold) await post(d, webhookSecret);
  }

  function schedule(inv: LoopbackInvoice) {
    const expire = setTimeout(
      () => {
        if (inv.status !== 'New') return;
        inv.status = 'Expired';
        void event(inv, 'InvoiceExpired', {
          partiallyPaid: inv.additionalStatus === 'PaidPartial',
          paidAfterExpiration: false,
        });
      },
      Math.max(0, inv.expirationTime * 1000 - Date.now()),
    );
    const unmonitor = setTimeout(
      () => {
        if (inv.status !== 'Processing') return;
        inv.status = 'Invalid';
        for (const p of inv.payments) if (p.status === 'Processing') p.status = 'Invalid';
        void event(inv, 'InvoiceInvalid', { manuallyMarked: false });
      },
      Math.max(0, inv.monitoringExpiration * 1000 - Date.now()),
    );
    inv.timers.push(expire, unmonitor);
  }

  function createInvoice(body: any): { status: number; payload: unknown } {
    const amount = typeof body?.amount === 'number' ? String(body.amount) : body?.amount;
    if (typeof amount !== 'string' || !/^\d+(\.\d+)?$/.test(amount) || Number(amount) <= 0)
      return { status: 400, payload: [{ path: 'amount', message: 'Amount should be greater than 0' }] };
    const currency = String(body.currency ?? 'USD').toUpperCase();
    const wanted: string[] = body.checkout?.paymentMethods ?? [...enabled];
    const methodId = wanted.find((m) => enabled.has(m));
    if (!methodId)
      return { status: 400, payload: { code: 'generic-error', message: 'No payment method available for this store' } };
    const coin = methodId.split('-')[0]!;
    const rate = RATES[coin] ?? '1';
    const [an, ad] = frac(amount);
    const [rn, rd] = frac(rate);
    const created = now();
    const inv: LoopbackInvoice = {
      id: randomBytes(16).toString('base64url').replace(/[-_]/g, 'x').slice(0, 22),
      amount,
      currency,
      status: 'New',
      additionalStatus: 'None',
      createdTime: created,
      expirationTime: created + expirationSeconds,
      monitoringExpiration: created + expirationSeconds + monitoringSeconds,
      metadata: body.metadata ?? {},
      paymentMethodId: methodId,
      coinCurrency: coin,
      destination:
        methodId === 'BTC-LN'
          ? `lnbcrt${randomBytes(20).toString('hex')}`
          : `${coin.toLowerCase()}1q${randomBytes(19).toString('hex')}`,
      rate,
      // amount / rate, rounded up to the coin's precision, as BTCPay prices an invoice
      coinAmount: decimalUp(an * rd, ad * rn, COIN_DECIMALS),
      payments: [],
      timers: [],
    };
    invoices.set(inv.id, inv);
    schedule(inv);
    void event(inv, 'InvoiceCreated');
    return { status: 200, payload: invoiceData(inv) };
  }

  const server = http.createServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://x');
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', async () => {
      if (stalling?.only.test(`${req.method} ${u.pathname}`)) {
        stalling.held++;
        await stalling.released;
      }
      let body: any = null;
      try {
        body = raw ? JSON.parse(raw) : null;
      } catch {
        // left null
      }
      requests.push({ method: req.method ?? '', path: u.pathname + u.search, auth: req.headers.authorization, body });
      const json = (status: number, payload: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(payload));
      };
      if (failures.left > 0 && (!failures.only || failures.only.test(`${req.method} ${u.pathname}`))) {
        failures.left--;
        res.writeHead(failures.status, { 'content-type': 'text/html' });
        res.end('<html><body>502 Bad Gateway (nginx)</body></html>');
        return;
      }
      if (req.headers.authorization !== `token ${apiKey}`)
        return json(401, {
          code: 'unauthenticated',
          message: 'Authentication is required for accessing this endpoint',
        });
      const m = /^\/api\/v1\/stores\/([^/]+)(\/.*)$/.exec(u.pathname);
      if (!m) return json(404, { code: 'not-found', message: 'Not found' });
      if (decodeURIComponent(m[1]!) !== storeId)
        return json(404, { code: 'store-not-found', message: 'The store was not found' });
      const rest = m[2]!;
      if (req.method === 'GET' && rest === '/payment-methods')
        return json(
          200,
          [...enabled].map((id) => ({ paymentMethodId: id, enabled: true, config: {} })),
        );
      if (req.method === 'POST' && rest === '/invoices') {
        const { status, payload } = createInvoice(body);
        return json(status, payload);
      }
      const inv = /^\/invoices\/([^/]+)(\/payment-methods)?$/.exec(rest);
      if (req.method === 'GET' && inv) {
        const invoice = invoices.get(decodeURIComponent(inv[1]!));
        if (!invoice) return json(404, { code: 'invoice-not-found', message: 'The invoice was not found' });
        return json(200, inv[2] ? paymentMethods(invoice) : invoiceData(invoice));
      }
      json(404, { code: 'not-found', message: 'Not found' });
    });
  });
  base = (await listenOnLoopback(server)).origin;

  const find = (id: string) => {
    const inv = invoices.get(id);
    if (!inv) throw new Error(`no invoice ${id}`);
    return inv;
  };

  return {
    url: base,
    apiKey,
    storeId,
    webhookSecret,
    invoices,
    requests,
    deliveries,
    webhookTo: (url) => {
      webhookUrl = url;
    },
    holdWebhooks: (h) => {
      hold = h;
    },
    deliver: async (d, o = {}) => {
      if (d.answered === undefined) return post(d, o.secret ?? webhookSecret);
      // a redelivery: a new delivery id pointing at the original, as BTCPay's "Redeliver" sends it
      const deliveryId = `Dl${randomBytes(8).toString('hex')}`;
      const again = { ...JSON.parse(d.body), deliveryId, isRedelivery: true, originalDeliveryId: d.deliveryId };
      const copy: Delivery = { ...d, deliveryId, body: JSON.stringify(again), answered: undefined };
      deliveries.push(copy);
      return post(copy, o.secret ?? webhookSecret);
    },
    enable: (...ids) => {
      enabled = new Set(ids);
    },
    timing: (t) => {
      expirationSeconds = t.expirationSeconds ?? expirationSeconds;
      monitoringSeconds = t.monitoringSeconds ?? monitoringSeconds;
    },
    pay: async (id, value) => {
      const inv = find(id);
      const due = dueUnits(inv);
      const payment: Payment = {
        id: `${randomBytes(32).toString('hex')}-0`,
        receivedDate: now(),
        value: value ?? fromUnits(due > 0n ? due : 0n),
        status: 'Processing',
      };
      inv.payments.push(payment);
      const afterExpiration = inv.status === 'Expired';
      const inFull = dueUnits(inv) <= 0n;
      const over = dueUnits(inv) < 0n;
      const wasNew = inv.status === 'New';
      if (afterExpiration) inv.additionalStatus = inFull ? 'PaidLate' : 'PaidPartial';
      else if (wasNew && inFull) {
        inv.status = 'Processing';
        inv.additionalStatus = over ? 'PaidOver' : 'None';
      } else if (wasNew) inv.additionalStatus = 'PaidPartial';
      await event(inv, 'InvoiceReceivedPayment', {
        afterExpiration,
        paymentMethodId: inv.paymentMethodId,
        payment: {
          id: payment.id,
          receivedDate: payment.receivedDate,
          value: payment.value,
          fee: '0',
          status: payment.status,
          destination: inv.destination,
        },
        overPaid: over,
      });
      if (wasNew && inv.status === 'Processing') await event(inv, 'InvoiceProcessing', { overPaid: over });
      return payment.id;
    },
    confirm: async (id, paymentId) => {
      const inv = find(id);
      for (const p of inv.payments) {
        if (p.status !== 'Processing' || (paymentId && p.id !== paymentId)) continue;
        p.status = 'Settled';
        await event(inv, 'InvoicePaymentSettled', {
          afterExpiration: inv.status === 'Expired',
          paymentMethodId: inv.paymentMethodId,
          payment: {
            id: p.id,
            receivedDate: p.receivedDate,
            value: p.value,
            fee: '0',
            status: p.status,
            destination: inv.destination,
          },
        });
      }
      if (inv.status === 'Processing' && inv.payments.every((p) => p.status !== 'Processing')) {
        inv.status = 'Settled';
        await event(inv, 'InvoiceSettled', { manuallyMarked: false, overPaid: inv.additionalStatus === 'PaidOver' });
      }
    },
    markInvalid: async (id) => {
      const inv = find(id);
      inv.status = 'Invalid';
      inv.additionalStatus = 'Marked';
      await event(inv, 'InvoiceInvalid', { manuallyMarked: true });
    },
    stall: (only) => {
      let release = () => {};
      const released = new Promise<void>((r) => {
        release = r;
      });
      stalling = { only, held: 0, released, release };
    },
    unstall: () => {
      stalling?.release();
      stalling = undefined;
    },
    stalled: () => stalling?.held ?? 0,
    failNext: (n, status = 503, only) => {
      failures = { left: n, status, only };
    },
    invoiceOf: (txId) => [...invoices.values()].find((i) => i.metadata?.orderId === txId),
    close: async () => {
      stalling?.release();
      for (const inv of invoices.values()) for (const t of inv.timers) clearTimeout(t);
      await closeServer(server);
    },
  };
}
