// What a request may cost before it runs (the reservation) and what it did cost after (the
// charge), from a route's customer prices (nano-USD per 1M tokens). The estimate is deliberately
// high: a reservation that is too large is released at settlement; one too small would let an
// account overspend.
import type { Route } from '../catalog/catalog.js';
import type { InferenceRequest, Usage } from '../core/types.js';
import { costOfTokens } from '../core/money.js';

/** Tokens we assume an image may cost when we cannot know (a high-detail 1024px image is ~1,100). */
const IMAGE_TOKENS = 1_600;
const PER_MESSAGE_OVERHEAD = 4;

/**
 * An upper estimate of the prompt's tokens without a tokenizer: one token per 3 bytes of UTF-8
 * text (real tokenizers average 3.5-4.5 bytes per token on English and code), plus per-message
 * framing, tool definitions and images.
 */
export function estimatePromptTokens(
  req: Pick<InferenceRequest, 'prompt' | 'messages' | 'tools' | 'responseFormat'>,
): number {
  let bytes = 0;
  let images = 0;
  let messages = 0;
  const text = (s: string | undefined) => (bytes += s ? Buffer.byteLength(s) : 0);
  text(req.prompt);
  for (const m of req.messages) {
    messages++;
    for (const c of m.content) {
      if (c.type === 'text') text(c.text);
      else if (c.type === 'image') images++;
      else if (c.type === 'document') bytes += Math.ceil((c.data.length * 3) / 4); // a PDF's text is at most its size
    }
    for (const t of m.toolCalls ?? []) text(t.name + t.arguments);
  }
  if (req.tools?.length) text(JSON.stringify(req.tools));
  if (req.responseFormat?.type === 'json_schema') text(JSON.stringify(req.responseFormat.schema));
  return Math.ceil(bytes / 3) + images * IMAGE_TOKENS + messages * PER_MESSAGE_OVERHEAD;
}

/** A middle estimate, for deciding whether a prompt fits a context window (4 bytes per token). */
export function likelyPromptTokens(req: InferenceRequest): number {
  return likelyFromEstimate(estimatePromptTokens(req));
}

/** likelyPromptTokens from an estimatePromptTokens already made. */
export function likelyFromEstimate(estimate: number): number {
  return Math.ceil((estimate * 3) / 4);
}

/** The worst a request can cost on a route: every prompt token uncached, every output token used. */
export function worstCaseCost(route: Route, promptTokens: number, maxOutputTokens: number): bigint {
  return costOfTokens(promptTokens, route.price.input) + costOfTokens(maxOutputTokens, route.price.output);
}

/**
 * What a finished request costs: uncached prompt tokens at the input price, cache reads at the
 * cached price (the input price when the route has none), cache writes at the cache-write price
 * (an hour's writes at the 1-hour one; the input price when the route has none), output
 * (reasoning included) at the output price. Each part rounds up once (README, Prompt caching).
 */
export function costOfUsage(route: Route, usage: Usage): bigint {
  const parts = costParts(route, usage);
  return parts.uncached + parts.cache + parts.output;
}

/** The prompt cache's share of costOfUsage (reads and writes): the pricing extension's `cacheCost`. */
export function cacheCostOfUsage(route: Route, usage: Usage): bigint {
  return costParts(route, usage).cache;
}

function costParts(route: Route, usage: Usage): { uncached: bigint; cache: bigint; output: bigint } {
  const { input, cachedInput, cacheWrite, cacheWrite1h, output } = route.price;
  const cached = Math.min(usage.cachedTokens, usage.promptTokens);
  const writes = Math.min(usage.cacheWriteTokens, usage.promptTokens - cached);
  const writes1h = Math.min(usage.cacheWrite1hTokens ?? 0, writes);
  const uncached = usage.promptTokens - cached - writes;
  return {
    uncached: costOfTokens(uncached, input),
    cache:
      costOfTokens(cached, cachedInput ?? input) +
      costOfTokens(writes - writes1h, cacheWrite ?? input) +
      costOfTokens(writes1h, cacheWrite1h ?? cacheWrite ?? input),
    output: costOfTokens(usage.completionTokens, output),
  };
}

/** What a batch row pays when the catalog sets no `batch_price_factor` for its model: half (basis points). */
const DEFAULT_BATCH_PRICE_BPS = 5_000;

/** A model's batch price, in basis points of its synchronous price. */
export function batchPriceBps(model: { batchPriceBps: number | null }): number {
  return model.batchPriceBps ?? DEFAULT_BATCH_PRICE_BPS;
}

/** `cost` at `bps` basis points of itself (a batch row's price), rounded up to the nano-dollar. */
export function atPriceBps(cost: bigint, bps: number): bigint {
  return (cost * BigInt(bps) + 9_999n) / 10_000n;
}
