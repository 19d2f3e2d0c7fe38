// Crypto deposits (spec "Crypto deposit"; POST /api/transaction/create/{ticker}): the caller names a
// ticker and a USD amount within its limits; the gateway asks BTCPay Server for a USD invoice payable
// only with that ticker's payment method, reads the invoice's payment method for the address, the
// coin amount and the wallet URI, stores the deposit and starts its workflow (workflows/
// cryptoDeposit.ts; workflow id = txId, the owner's account as SwitchyardAccountId) through the job
// helper. The workflow owns it from there: it follows the invoice (webhooks as signals, polling as
// the fallback) and credits the account once, when BTCPay says the money is settled (depositRun.ts).
//
// The invoice is made before anything is stored: if BTCPay fails, nothing is written and the caller
// hears 500 (the spec's "provider unavailable"). If the engine then refuses the workflow, the row is
// forgotten (503, as every job) and the invoice is left unpaid at BTCPay to expire on its own.
import { randomBytes } from 'node:crypto';
import type { Caller } from '../core/caller.js';
import { config } from '../config.js';
import { RequestError } from '../core/errors.js';
import { formatAmount, parseAmount, toDisplayNumber } from '../core/money.js';
import { db } from '../db.js';
import { startJob } from '../jobs/jobs.js';
import { cryptoDeposit } from '../../workflows/cryptoDeposit.js';
import {
  createInvoice,
  invoicePaymentMethods,
  offeredPaymentMethods,
  ProcessorError,
  processorConfigured,
} from './btcpay.js';
import { findTicker, type Ticker, tickerNames } from './tickers.js';

/** What the spec's Crypto deposit resource shows. */
export interface DepositView {
  txId: string;
  address: string;
  /** the coin amount to send, as a number (the payment link carries the exact decimal text) */
  amount: number;
  status: string;
  paymentLink: string | null;
  createdAt: string;
  expiresAt: string;
}

const newTxId = () => `tx_${randomBytes(12).toString('hex')}`;

function unsupported(message: string): RequestError {
  return new RequestError(400, 'unsupported_ticker', message, { param: 'ticker' });
}

function providerUnavailable(err: unknown): RequestError {
  console.error('[deposits] BTCPay Server:', (err as Error).message);
  return new RequestError(
    500,
    'provider_unavailable',
    'The payment processor is unavailable just now; no deposit was made. Retry in a little while.',
  );
}

/** The spec's ticker, offered by the configured store: or the spec's 400 (unsupported) / 500 (processor down). */
async function offeredTicker(name: string): Promise<Ticker> {
  const ticker = findTicker(name);
  if (!ticker) throw unsupported(`Unsupported ticker '${name.slice(0, 40)}'. Tickers: ${tickerNames().join(', ')}.`);
  if (!processorConfigured())
    throw unsupported('This gateway does not accept crypto deposits: no payment processor is configured.');
  let offered: Set<string>;
  try {
    offered = await offeredPaymentMethods();
  } catch (err) {
    throw providerUnavailable(err);
  }
  if (!offered.has(ticker.paymentMethodId)) {
    const accepted = tickerNames().filter((t) => offered.has(findTicker(t)!.paymentMethodId));
    throw unsupported(
      `This gateway's payment processor does not accept ${ticker.ticker} (payment method ${ticker.paymentMethodId}). ` +
        (accepted.length ? `It accepts: ${accepted.join(', ')}.` : 'It accepts none of the deposit tickers.'),
    );
  }
  return ticker;
}

/** The spec's limits record: USD bounds of `amount` (the fiat equivalents are the same: deposits are priced in USD). */
export async function depositLimits(name: string) {
  const ticker = await offeredTicker(name);
  const min = Number(formatAmount(ticker.minUsd, 'USD'));
  const max = Number(formatAmount(ticker.maxUsd, 'USD'));
  return {
    minimum: min,
    maximum: max,
    fiatEquivalentMinimum: min,
    fiatEquivalentMaximum: max,
    timestamp: Date.now(),
  };
}

/** `amount` (a JSON number of USD) as nano-USD in whole cents within the ticker's limits, or the spec's 400. */
function checkedAmount(ticker: Ticker, amount: number): bigint {
  let usd: bigint;
  try {
    usd = parseAmount(amount, 'USD');
  } catch {
    usd = -1n;
  }
  if (usd <= 0n || usd % 10_000_000n !== 0n)
    throw new RequestError(
      400,
      'invalid_amount',
      `Invalid amount ${amount}: a deposit is a positive number of US dollars, in whole cents.`,
      { param: 'amount' },
    );
  const range = `${formatAmount(ticker.minUsd, 'USD')}-${formatAmount(ticker.maxUsd, 'USD')} USD`;
  if (usd < ticker.minUsd)
    throw new RequestError(400, 'amount_below_minimum', `Amount below the minimum: ${ticker.ticker} takes ${range}.`, {
      param: 'amount',
    });
  if (usd > ticker.maxUsd)
    throw new RequestError(400, 'amount_above_maximum', `Amount above the maximum: ${ticker.ticker} takes ${range}.`, {
      param: 'amount',
    });
  return usd;
}

export async function createDeposit(caller: Caller, tickerName: string, amount: number): Promise<DepositView> {
  const ticker = await offeredTicker(tickerName);
  const usd = checkedAmount(ticker, amount);
  const txId = newTxId();
  let invoice: Awaited<ReturnType<typeof createInvoice>>;
  let method: Awaited<ReturnType<typeof invoicePaymentMethods>>[number] | undefined;
  try {
    invoice = await createInvoice({
      amountUsd: formatAmount(usd, 'USD'),
      paymentMethodId: ticker.paymentMethodId,
      orderId: txId,
      accountId: caller.accountId,
    });
    method = (await invoicePaymentMethods(invoice.id)).find((m) => m.paymentMethodId === ticker.paymentMethodId);
  } catch (err) {
    if (err instanceof ProcessorError) throw providerUnavailable(err);
    throw err;
  }
  if (!method?.destination)
    throw providerUnavailable(
      new ProcessorError(`invoice ${invoice.id} has no ${ticker.paymentMethodId} destination (is the wallet set up?)`),
    );
  const createdAt = new Date(invoice.createdTime ? invoice.createdTime * 1000 : Date.now());
  const expiresAt = new Date(invoice.expirationTime * 1000);
  const monitoringUntil = new Date(Math.max(invoice.monitoringExpiration, invoice.expirationTime) * 1000);
  await startJob({
    id: txId,
    accountId: caller.accountId,
    workflow: cryptoDeposit,
    args: [{ txId, pollSeconds: config.depositPollSeconds }],
    row: {
      table: 'crypto_deposits',
      columns: {
        id: txId,
        status: 'New',
        account_id: caller.accountId,
        api_key_id: caller.keyId,
        ticker: ticker.ticker,
        payment_method_id: ticker.paymentMethodId,
        amount_usd: usd.toString(),
        invoice_id: invoice.id,
        address: method.destination,
        coin_amount: method.amount,
        coin_currency: method.currency,
        payment_link: method.paymentLink,
        invoice_status: invoice.status,
        created_at: createdAt,
        expires_at: expiresAt,
        monitoring_until: monitoringUntil,
      },
    },
    unavailable: {
      code: 'deposit_unavailable',
      message: 'The deposit could not be started (the workflow engine is unavailable). Do not pay it; retry.',
    },
  });
  return {
    txId,
    address: method.destination,
    amount: Number(method.amount),
    status: 'New',
    paymentLink: method.paymentLink,
    createdAt: createdAt.toISOString(),
    expiresAt: expiresAt.toISOString(),
  };
}

/** The deposit `txId` of the invoice, if it is one of ours. */
export async function depositOfInvoice(invoiceId: string): Promise<string | undefined> {
  const { rows } = await db().pool.query('SELECT id FROM crypto_deposits WHERE invoice_id = $1', [invoiceId]);
  return rows[0]?.id;
}

/** A deposit as its owner sees it: the spec's fields, and what was credited (USD, null until Completed). */
export async function depositStatus(caller: Caller, txId: string): Promise<DepositView & { credited: number | null }> {
  const { rows } = await db().pool.query(
    `SELECT id, address, coin_amount, status, payment_link, created_at, expires_at, credited_usd
     FROM crypto_deposits WHERE id = $1 AND account_id = $2`,
    [txId, caller.accountId],
  );
  const r = rows[0];
  // another account's deposit is answered as one that does not exist
  if (!r) throw new RequestError(404, 'deposit_not_found', `No deposit '${txId.slice(0, 40)}' on this account.`);
  return {
    txId: r.id,
    address: r.address,
    amount: Number(r.coin_amount),
    status: r.status,
    paymentLink: r.payment_link,
    createdAt: r.created_at.toISOString(),
    expiresAt: r.expires_at.toISOString(),
    credited: r.credited_usd === null ? null : toDisplayNumber(BigInt(r.credited_usd), 'USD'),
  };
}
