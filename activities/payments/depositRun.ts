// The cryptoDeposit workflow's activities: read the invoice from BTCPay and say where the deposit
// stands (observeDeposit), credit it (completeDeposit) or close it uncredited (closeDeposit).
// BTCPay's answer is the truth; a webhook only says "look now", so duplicate, late and out-of-order
// webhooks change nothing by themselves.
//
// What is credited (the rule, README "Crypto deposits"):
//  - a Settled invoice: its amount, plus what was paid over it; decided at once;
//  - an Expired invoice (paid partially, or paid only after it expired): the value of the payments
//    BTCPay has settled, decided when BTCPay stops watching the invoice (its monitoring expiration),
//    so a payment still confirming, or one sent late, counts; nothing paid: nothing credited;
//  - an Invalid invoice (BTCPay refused its payments, or the operator marked it so): nothing.
// Settled payments that reach the invoice's coin amount are worth the invoice's USD amount (plus any
// excess at the invoice's rate); short of it, their coins at the rate BTCPay fixed for the invoice,
// rounded down to the nano-dollar. The credit is one ledger entry whose idempotency key is the invoice
// (`deposit:<invoice id>`): retried, replayed or raced, it is posted once.
import { credit } from '../ledger/ledger.js';
import { formatAmount, parseAmount } from '../core/money.js';
import { db } from '../db.js';
import { getInvoice, type Invoice, invoicePaymentMethods, type PaymentMethod, ProcessorError } from './btcpay.js';

/** What the deposit shows while it runs, and how it ends. */
type RunningStatus = 'New' | 'Pending' | 'Processing' | 'Expired';
type ClosedStatus = 'Completed' | 'Expired' | 'Invalid';

interface Observation {
  status: RunningStatus;
  /** decided: credit `creditUsd` (nano-USD as text; '0' closes it uncredited as `closeAs`) */
  final?: { creditUsd: string; closeAs: ClosedStatus };
  /** epoch ms: the invoice's expiry, and the end of BTCPay's watch over it */
  expiresAtMs: number;
  monitoringUntilMs: number;
}

interface DepositRow {
  accountId: string;
  invoiceId: string;
  ticker: string;
  amountUsd: bigint;
}

async function depositRow(txId: string): Promise<DepositRow> {
  const { rows } = await db().pool.query(
    'SELECT account_id, invoice_id, ticker, amount_usd FROM crypto_deposits WHERE id = $1',
    [txId],
  );
  if (!rows[0]) throw new Error(`deposit ${txId} has no row`);
  return {
    accountId: rows[0].account_id,
    invoiceId: rows[0].invoice_id,
    ticker: rows[0].ticker,
    amountUsd: BigInt(rows[0].amount_usd),
  };
}

/** Coin amounts and rates are decimal text; computed exactly as integers of 1e-30. */
const PLACES = 30;
function units(text: string): bigint {
  const m = /^(\d+)(?:\.(\d+))?$/.exec(text.trim());
  if (!m || (m[2] ?? '').length > PLACES)
    throw new ProcessorError(`BTCPay Server sent "${text}" where a decimal amount belongs`);
  return BigInt(m[1]! + (m[2] ?? '').padEnd(PLACES, '0'));
}
/** coins × USD per coin, in nano-USD rounded down */
const usdValue = (coins: bigint, rate: bigint) => (coins * rate) / 10n ** BigInt(2 * PLACES - 9);

/**
 * What the settled payments are worth, nano-USD: paid in full (the settled coins reach the invoice's
 * coin amount), the invoice's own USD amount plus any excess at the invoice's rate; short of it, the
 * settled coins at that rate, rounded down.
 */
function settledValueUsd(methods: PaymentMethod[], invoicedUsd: bigint): bigint {
  let total = 0n;
  for (const m of methods) {
    const settled = m.payments.filter((p) => p.status === 'Settled').reduce((sum, p) => sum + units(p.value), 0n);
    if (settled === 0n) continue;
    const rate = units(m.rate);
    const due = units(m.amount);
    total += settled >= due ? invoicedUsd + usdValue(settled - due, rate) : usdValue(settled, rate);
  }
  return total;
}

/** Whether any payment is on its way (seen, not refused). */
const paid = (methods: PaymentMethod[]) => methods.some((m) => m.payments.some((p) => p.status !== 'Invalid'));

/** Where the deposit stands by the invoice (the settlement rule above). */
function judge(invoice: Invoice, methods: PaymentMethod[], amountUsd: bigint, nowMs: number): Observation {
  const expiresAtMs = invoice.expirationTime * 1000;
  const monitoringUntilMs = Math.max(invoice.monitoringExpiration, invoice.expirationTime) * 1000;
  const at = { expiresAtMs, monitoringUntilMs };
  const invoiced = invoice.currency === 'USD' ? parseAmount(invoice.amount, 'USD') : amountUsd;
  const settled = settledValueUsd(methods, invoiced);
  switch (invoice.status) {
    case 'Settled': {
      // BTCPay's word that it is paid: at least the invoice, whatever its tolerance let through
      const creditUsd = settled > invoiced ? settled : invoiced;
      return { status: 'Processing', final: { creditUsd: creditUsd.toString(), closeAs: 'Completed' }, ...at };
    }
    case 'Invalid':
      return { status: 'Processing', final: { creditUsd: '0', closeAs: 'Invalid' }, ...at };
    case 'Processing':
      return { status: 'Processing', ...at };
    case 'New':
      return { status: paid(methods) ? 'Pending' : 'New', ...at };
    case 'Expired': {
      const status = paid(methods) ? 'Pending' : 'Expired';
      if (nowMs < monitoringUntilMs) return { status, ...at };
      return settled > 0n
        ? { status, final: { creditUsd: settled.toString(), closeAs: 'Completed' }, ...at }
        : { status, final: { creditUsd: '0', closeAs: 'Expired' }, ...at };
    }
  }
}

/** Read the invoice and its payments from BTCPay, keep the row's status current, say where the deposit stands. */
export async function observeDeposit(txId: string): Promise<Observation> {
  const row = await depositRow(txId);
  const invoice = await getInvoice(row.invoiceId);
  // the store no longer has it (deleted by its operator): nothing can ever be settled
  if (!invoice) {
    await db().pool.query(`UPDATE crypto_deposits SET invoice_status = 'missing' WHERE id = $1`, [txId]);
    return { status: 'Expired', final: { creditUsd: '0', closeAs: 'Invalid' }, expiresAtMs: 0, monitoringUntilMs: 0 };
  }
  const methods = await invoicePaymentMethods(row.invoiceId);
  const seen = judge(invoice, methods, row.amountUsd, Date.now());
  const label = invoice.additionalStatus === 'None' ? invoice.status : `${invoice.status}/${invoice.additionalStatus}`;
  await db().pool.query(
    `UPDATE crypto_deposits SET status = $2, invoice_status = $3, monitoring_until = $4
     WHERE id = $1 AND closed_at IS NULL`,
    [txId, seen.status, label, new Date(seen.monitoringUntilMs)],
  );
  return seen;
}

/** Credit the deposit (once: the ledger key is the invoice) and close it Completed. */
export async function completeDeposit(txId: string, creditUsd: string): Promise<string> {
  const row = await depositRow(txId);
  const amount = BigInt(creditUsd);
  await credit({
    accountId: row.accountId,
    currency: 'USD',
    amount,
    reason: `crypto deposit ${txId} (${row.ticker}, BTCPay invoice ${row.invoiceId}): ${formatAmount(amount, 'USD')} USD`,
    idempotencyKey: `deposit:${row.invoiceId}`,
  });
  await db().pool.query(
    `UPDATE crypto_deposits SET status = 'Completed', credited_usd = $2, closed_at = now()
     WHERE id = $1 AND closed_at IS NULL`,
    [txId, amount.toString()],
  );
  return 'Completed';
}

/** Close the deposit uncredited (`Expired` or `Invalid`). */
export async function closeDeposit(txId: string, status: ClosedStatus): Promise<string> {
  await db().pool.query(
    `UPDATE crypto_deposits SET status = $2, closed_at = now() WHERE id = $1 AND closed_at IS NULL`,
    [txId, status],
  );
  return status;
}
