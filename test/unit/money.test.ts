import assert from 'node:assert/strict';
import {
  applyMarkup,
  ceilDiv,
  costOfTokens,
  formatAmount,
  parseAmount,
  parseLimit,
  toDisplayNumber,
  usdToXno,
} from '../../activities/core/money.js';

describe('money', () => {
  it('parses and prints decimal text exactly', () => {
    assert.equal(parseAmount('1.25', 'USD'), 1_250_000_000n);
    assert.equal(parseAmount('0.000000001', 'USD'), 1n);
    assert.equal(parseAmount('-3', 'USD'), -3_000_000_000n);
    assert.equal(parseAmount('0.1', 'XNO'), 10n ** 29n);
    assert.equal(formatAmount(1_250_000_000n, 'USD'), '1.25');
    assert.equal(formatAmount(-1n, 'USD'), '-0.000000001');
    assert.equal(formatAmount(0n, 'XNO'), '0');
    // 0.1 + 0.2 in floating point is 0.30000000000000004; here it is not
    assert.equal(formatAmount(parseAmount('0.1', 'USD') + parseAmount('0.2', 'USD'), 'USD'), '0.3');
  });

  it('rejects what is not an exact amount', () => {
    assert.throws(() => parseAmount('1.0000000001', 'USD'), /more than 9 decimals/);
    assert.throws(() => parseAmount('1e3', 'USD'), /not a decimal/);
    assert.throws(() => parseAmount('abc', 'USD'), /not a decimal/);
    assert.throws(() => parseAmount(Number.NaN, 'USD'), /finite/);
    assert.equal(parseAmount('1.500000000000', 'USD'), 1_500_000_000n); // trailing zeros are fine
  });

  it("cuts a caller's limit to the currency's precision instead of refusing it", () => {
    assert.equal(parseLimit(0.1, 'USD'), 100_000_000n);
    assert.equal(parseLimit(999999.9999999994, 'USD'), 999_999_999_999_999n);
    assert.equal(parseLimit(1e-10, 'USD'), 0n);
    assert.equal(parseLimit(1.5e-9, 'USD'), 1n);
    assert.equal(parseLimit(1e21, 'USD'), 10n ** 30n);
    assert.equal(parseLimit(9007199254740994, 'USD'), 9007199254740994n * 10n ** 9n);
  });

  it('rounds charges up, once', () => {
    assert.equal(ceilDiv(10n, 3n), 4n);
    assert.equal(ceilDiv(9n, 3n), 3n);
    assert.equal(ceilDiv(0n, 3n), 0n);
    // $0.15 per 1M tokens = 150 nano-dollars per token
    assert.equal(costOfTokens(7, parseAmount('0.15', 'USD')), 1050n);
    assert.equal(costOfTokens(7, parseAmount('0.000001', 'USD')), 1n); // 0.007 nano-dollars rounds up to 1
    assert.equal(costOfTokens(1_000_000, parseAmount('0.15', 'USD')), 150_000_000n);
    assert.equal(applyMarkup(parseAmount('0.15', 'USD'), 500), parseAmount('0.1575', 'USD'));
    assert.equal(applyMarkup(1n, 500), 2n);
  });

  it('converts USD to XNO at a rate, rounding up', () => {
    // at 1 XNO = $0.80, $1 = 1.25 XNO
    assert.equal(usdToXno(parseAmount('1', 'USD'), parseAmount('0.8', 'USD')), parseAmount('1.25', 'XNO'));
  });

  it('shows an amount as the number its exact decimal text parses to', () => {
    // the arithmetic shortcut for USD must agree with parsing formatAmount's text, everywhere
    const samples = [
      0n,
      1n,
      5n,
      999_999_999n,
      1_000_000_000n,
      123_456_789_012n,
      2n ** 53n - 1n,
      2n ** 53n,
      2n ** 60n,
      -7n,
      -(2n ** 53n),
    ];
    for (let i = 0; i < 5000; i++)
      samples.push(BigInt(Math.floor(Math.random() * Number.MAX_SAFE_INTEGER)) * (i % 2 ? 1n : -1n));
    for (const units of samples) {
      for (const currency of ['USD', 'XNO'] as const)
        assert.equal(toDisplayNumber(units, currency), Number(formatAmount(units, currency)), `${units} ${currency}`);
    }
  });
});
