// Exact money. Every amount is a bigint count of its currency's smallest unit: USD in
// nano-dollars (1e-9, fine enough that a single token of the cheapest model is a whole
// number of units), XNO in raw (1e-30, the chain's own unit). Decimal text is parsed and
// printed without ever passing through a binary float; rounding happens once, upward,
// where a price is applied to a quantity.

export type Currency = 'USD' | 'XNO';
export const CURRENCIES: readonly Currency[] = ['USD', 'XNO'];

const DECIMALS: Record<Currency, number> = { USD: 9, XNO: 30 };
const SCALE: Record<Currency, bigint> = { USD: 10n ** 9n, XNO: 10n ** 30n };

const DECIMAL_TEXT = /^(-)?(\d+)(?:\.(\d+))?$/;

/** "1.25" → 1250000000n (USD). Rejects more decimals than the currency has, and anything that is not plain decimal text. */
export function parseAmount(text: string | number, currency: Currency): bigint {
  const s = typeof text === 'number' ? numberToPlainText(text) : text.trim();
  const m = DECIMAL_TEXT.exec(s);
  if (!m) throw new RangeError(`"${text}" is not a decimal amount`);
  const [, sign, whole, frac = ''] = m;
  const decimals = DECIMALS[currency];
  const significant = frac.replace(/0+$/, '');
  if (significant.length > decimals) {
    throw new RangeError(`"${text}" has more than ${decimals} decimals, the precision of ${currency}`);
  }
  const units = BigInt(whole) * SCALE[currency] + BigInt(significant.padEnd(decimals, '0') || '0');
  return sign ? -units : units;
}

/**
 * A caller's limit (`max_price`: "no dearer than") as units: decimals past the currency's precision
 * are cut off, not refused, since every price is a whole number of units and so is no dearer than
 * 0.1234567891 exactly when it is no dearer than 0.123456789.
 */
export function parseLimit(n: number, currency: Currency): bigint {
  // every double from 2^53 up is a whole number, and their text may be in exponent notation
  if (Number.isInteger(n)) return BigInt(n) * SCALE[currency];
  const m = DECIMAL_TEXT.exec(numberToPlainText(n));
  if (!m) throw new RangeError(`"${n}" is not a decimal amount`);
  const [, sign, whole, frac = ''] = m;
  return parseAmount(`${sign ?? ''}${whole}.${frac.slice(0, DECIMALS[currency]) || '0'}`, currency);
}

/** 1250000000n → "1.25": the shortest exact decimal text. */
export function formatAmount(units: bigint, currency: Currency): string {
  const negative = units < 0n;
  const abs = negative ? -units : units;
  const scale = SCALE[currency];
  const whole = abs / scale;
  const frac = (abs % scale).toString().padStart(DECIMALS[currency], '0').replace(/0+$/, '');
  return `${negative ? '-' : ''}${whole}${frac ? `.${frac}` : ''}`;
}

/**
 * For JSON bodies that promise a number (`cost`, `remainingBalance`). The value shown may be
 * rounded by JSON's number type; the books themselves never are.
 */
export function toDisplayNumber(units: bigint, currency: Currency): number {
  // Below 2^53 units, and with a power of ten a double holds exactly (up to 1e22), both operands
  // are exact and one IEEE division rounds correctly, as parsing the decimal text would. XNO's
  // 1e30 is not exact: it goes through the text.
  if (DECIMALS[currency] <= 22 && units < SAFE && units > -SAFE) return Number(units) / 10 ** DECIMALS[currency];
  return Number(formatAmount(units, currency));
}
const SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** Ceiling division for non-negative bigints: charges round up, never down. */
export function ceilDiv(a: bigint, b: bigint): bigint {
  if (b <= 0n) throw new RangeError('division by a non-positive amount');
  if (a <= 0n) return a / b;
  return (a + b - 1n) / b;
}

/** Customer price from an upstream price and a markup in basis points (500 = 5%). */
export function applyMarkup(price: bigint, markupBps: number): bigint {
  return ceilDiv(price * BigInt(10_000 + markupBps), 10_000n);
}

/** Cost of `tokens` at a price given per million tokens, in the same unit as the price. */
export function costOfTokens(tokens: number, pricePerMillion: bigint): bigint {
  return ceilDiv(BigInt(tokens) * pricePerMillion, 1_000_000n);
}

/** USD nano-dollars → XNO raw at `rateUsdPerXno` (nano-dollars for one XNO), rounded up. */
export function usdToXno(usd: bigint, rateUsdPerXno: bigint): bigint {
  return ceilDiv(usd * SCALE.XNO, rateUsdPerXno);
}

function numberToPlainText(n: number): string {
  if (!Number.isFinite(n)) throw new RangeError(`${n} is not a finite amount`);
  // toString gives exponent notation for very small or large numbers; toFixed(20) would
  // invent digits. Up to 20 significant places covers every amount a person types.
  const s = n.toString();
  if (!/e/i.test(s)) return s;
  return n.toFixed(Math.min(100, Math.max(0, -Math.floor(Math.log10(Math.abs(n))) + 15))).replace(/\.?0+$/, '');
}
