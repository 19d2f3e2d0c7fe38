// The spec's crypto deposit tickers (lowercase, as they appear in the URL), each with its USD limits
// (spec "Limits": per-ticker minimum/maximum USD) and the BTCPay Server payment method that takes it.
// BTCPay 2.x names payment methods `<CURRENCY>-CHAIN` (on-chain, including the Monero and Zcash
// plugins) and `BTC-LN` (Lightning); a store offers whichever its operator set up, so most stores
// offer a few of these, and the rest are answered "not offered" (activities/payments/deposits.ts).
import { parseAmount } from '../core/money.js';

export interface Ticker {
  /** the URL's name: `btc`, `btc-ln`, ... */
  ticker: string;
  /** the store's payment method id (Greenfield 2.x) */
  paymentMethodId: string;
  /** the smallest and largest deposit, nano-USD */
  minUsd: bigint;
  maxUsd: bigint;
}

const usd = (text: string) => parseAmount(text, 'USD');

function ticker(name: string, min: string, max: string, paymentMethodId = `${name.toUpperCase()}-CHAIN`): Ticker {
  return { ticker: name, paymentMethodId, minUsd: usd(min), maxUsd: usd(max) };
}

const TICKERS: readonly Ticker[] = [
  ticker('btc', '1', '2000'),
  ticker('btc-ln', '0.10', '2000', 'BTC-LN'),
  ticker('ltc', '1', '2000'),
  // Litecoin's MimbleWimble extension blocks: a payment method of its own where a plugin offers it
  ticker('ltc-mweb', '1', '2000', 'LTC-MWEB'),
  ticker('xmr', '1', '2000'),
  ticker('doge', '1', '2000'),
  ticker('dash', '1', '2000'),
  ticker('zec', '0.10', '500'),
  ticker('bch', '1', '2000'),
  ticker('ban', '1', '2000'),
  ticker('kas', '1', '500'),
  ticker('ton', '1', '500'),
  ticker('near', '1', '500'),
  ticker('egld', '0.20', '100'),
  ticker('zano', '1', '2000'),
  ticker('fusd', '1', '2000'),
];

const byName = new Map(TICKERS.map((t) => [t.ticker, t]));

/** The ticker named in a URL (case-insensitive), or undefined when the spec has no such ticker. */
export function findTicker(name: string): Ticker | undefined {
  return byName.get(name.toLowerCase());
}

/** All of them, in the spec's order (for messages). */
export function tickerNames(): string[] {
  return TICKERS.map((t) => t.ticker);
}
