// Customer prices of the catalog routes the tests bill, copied by hand from prisma/catalog.yaml:
// the upstream price plus the catalog's markup (5% unless a route says otherwise: gpt-4o-mini's
// input, 0.15 USD per 1M tokens upstream, is 0.1575 USD to the caller), in nano-USD. Tests
// compute what a request must cost from these with plain exact arithmetic, never with the
// production pricing code or the prices the catalog loader computed: a pricing bug would compute
// the same wrong number on both sides and pass.

/** nano-USD per 1M tokens */
export interface TokenPrices {
  input: bigint;
  cachedInput: bigint;
  output: bigint;
  /** prompt-cache writes, 5-minute and 1-hour (default: the input price) */
  cacheWrite?: bigint;
  cacheWrite1h?: bigint;
}

/** openai/gpt-4o-mini on openai and openrouter: 0.15 / 0.075 cached / 0.60, +5% */
export const GPT_4O_MINI: TokenPrices = { input: 157_500_000n, cachedInput: 78_750_000n, output: 630_000_000n };
/** anthropic/claude-3-5-haiku on anthropic and openrouter: 0.80 / 0.08 cached / 1.00 and 1.60 cache writes / 4.00, +5% */
export const CLAUDE_HAIKU: TokenPrices = {
  input: 840_000_000n,
  cachedInput: 84_000_000n,
  cacheWrite: 1_050_000_000n,
  cacheWrite1h: 1_680_000_000n,
  output: 4_200_000_000n,
};

/** by catalog model id (every provider of these models has the same price) */
const TEXT: Record<string, TokenPrices> = {
  'openai/gpt-4o-mini': GPT_4O_MINI,
  'anthropic/claude-3-5-haiku': CLAUDE_HAIKU,
  // 3.00 / 0.30 cached / 3.75 and 6.00 cache writes / 15.00, +5%
  'anthropic/claude-sonnet-4': {
    input: 3_150_000_000n,
    cachedInput: 315_000_000n,
    cacheWrite: 3_937_500_000n,
    cacheWrite1h: 6_300_000_000n,
    output: 15_750_000_000n,
  },
  // 0.10 / 0.025 cached / 0.40, +5%
  'google/gemini-2.0-flash': { input: 105_000_000n, cachedInput: 26_250_000n, output: 420_000_000n },
  // 0.02 / 0.02, no markup, no cached price (cached input pays the input price)
  'local/stories260k': { input: 20_000_000n, cachedInput: 20_000_000n, output: 20_000_000n },
};

export function textPrices(modelId: string): TokenPrices {
  const p = TEXT[modelId];
  if (!p) throw new Error(`test/support/prices.ts has no prices for ${modelId}: copy them from the catalog`);
  return p;
}

/** Speech: nano-USD per 1M characters of input text. */
export const SPEECH_PER_MILLION_CHARS = {
  /** 0.50, no markup */
  'local/espeak': 500_000_000n,
  /** 15, +5% */
  'openai/tts-1': 15_750_000_000n,
  /** 180, +5% */
  'elevenlabs/eleven_multilingual_v2': 189_000_000_000n,
};

/** elevenlabs/music_v1: 0.80 USD per minute of music asked for, +5% = 0.014 USD a second */
export const MUSIC_PER_SECOND = 14_000_000n;

/** Video: nano-USD per second of output, +5% on fal's and the bridge's list prices. */
export const VIDEO_PER_SECOND = {
  /** 0.28 */
  'kling/v2.1-master-text-to-video': 294_000_000n,
  /** 0.042 */
  'kling/v2.5-turbo-standard-image-to-video': 44_100_000n,
  /** 0.02 */
  'midjourney/video': 21_000_000n,
  /** 0.04 */
  'pixverse/extend': 42_000_000n,
};

/** nano-USD for `units` at `perMillion` nano-USD per 1M of them, rounded up to a whole nano-dollar. */
export function perMillion(units: number, price: bigint): bigint {
  return (BigInt(units) * price + 999_999n) / 1_000_000n;
}

/**
 * What a text request costs: uncached input, cached input and output tokens at the route's prices,
 * each part rounded up on its own (the README's rule).
 */
export function textCost(
  p: TokenPrices,
  t: { input: number; cached?: number; written?: number; written1h?: number; output: number },
): bigint {
  const cached = t.cached ?? 0;
  const written = t.written ?? 0;
  const written1h = t.written1h ?? 0;
  return (
    perMillion(t.input - cached - written - written1h, p.input) +
    perMillion(cached, p.cachedInput) +
    perMillion(written, p.cacheWrite ?? p.input) +
    perMillion(written1h, p.cacheWrite1h ?? p.input) +
    perMillion(t.output, p.output)
  );
}

/**
 * What Anthropic-style usage costs: its `input_tokens` leave cache reads and writes out; reads pay
 * the cached price, writes the cache-write price (1-hour ones, as `cache_creation` reports them, the 1-hour price).
 */
export function messageUsageCost(
  p: TokenPrices,
  u: {
    input_tokens: number;
    output_tokens: number;
    cache_read_input_tokens?: number;
    cache_creation_input_tokens?: number;
    cache_creation?: { ephemeral_1h_input_tokens?: number };
  },
): bigint {
  const read = u.cache_read_input_tokens ?? 0;
  const write = u.cache_creation_input_tokens ?? 0;
  const write1h = u.cache_creation?.ephemeral_1h_input_tokens ?? 0;
  return textCost(p, {
    input: u.input_tokens + read + write,
    cached: read,
    written: write - write1h,
    written1h: write1h,
    output: u.output_tokens,
  });
}

/** Embeddings: nano-USD per 1M input tokens. */
export const EMBEDDING_PER_MILLION_TOKENS = {
  /** 0.02, +5% */
  'openai/text-embedding-3-small': 21_000_000n,
  /** 0.005, no markup */
  'local/all-minilm-l6-v2': 5_000_000n,
};

/** Memory (switchyard/memory, the spec's rates, no markup): nano-USD per 1M tokens. */
export const MEMORY: TokenPrices = { input: 5_000_000_000n, cachedInput: 2_500_000_000n, output: 10_000_000_000n };

/** Decision models: nano-USD per 1M INPUT tokens (decisions bill input only). */
export const DECISION_PER_MILLION_TOKENS = {
  /** 0.02, no markup */
  'local/decider-260k': 20_000_000n,
  /** 0.10, +5% */
  'openai/gpt-4.1-nano-decider': 105_000_000n,
  /** 0.40, +5% */
  'openai/gpt-4.1-mini-decisions': 420_000_000n,
};
