// Customer prices of the catalog routes the tests bill, copied by hand from prisma/catalog.yaml:
// the upstream price per 1M tokens plus the catalog's default markup of 5% (gpt-4o-mini's input,
// 0.15 USD upstream, is 0.1575 USD to the caller), in nano-USD. Tests compute what a request must
// cost from these with plain exact arithmetic, never with the production pricing code: a pricing
// bug would compute the same wrong number on both sides and pass.

/** nano-USD per 1M tokens */
export interface TokenPrices {
  input: bigint;
  cachedInput: bigint;
  output: bigint;
}

/** openai/gpt-4o-mini on openai and openrouter: 0.15 / 0.075 cached / 0.60, +5% */
export const GPT_4O_MINI: TokenPrices = { input: 157_500_000n, cachedInput: 78_750_000n, output: 630_000_000n };
/** anthropic/claude-3-5-haiku on anthropic and openrouter: 0.80 / 0.08 cached / 4.00, +5% */
export const CLAUDE_HAIKU: TokenPrices = { input: 840_000_000n, cachedInput: 84_000_000n, output: 4_200_000_000n };

/** nano-USD for `tokens` at `perMillion` nano-USD per 1M tokens, rounded up to a whole nano-dollar. */
function tokensCost(tokens: number, perMillion: bigint): bigint {
  return (BigInt(tokens) * perMillion + 999_999n) / 1_000_000n;
}

/**
 * What a text request costs: uncached input, cached input and output tokens at the route's prices,
 * each part rounded up on its own (the README's rule).
 */
export function textCost(p: TokenPrices, t: { input: number; cached?: number; output: number }): bigint {
  const cached = t.cached ?? 0;
  return tokensCost(t.input - cached, p.input) + tokensCost(cached, p.cachedInput) + tokensCost(t.output, p.output);
}
