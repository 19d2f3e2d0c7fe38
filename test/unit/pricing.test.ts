// What a request may cost before it runs and what it cost after (activities/billing/pricing.ts),
// alone: the prompt estimate stays above what a tokenizer would count, each part of a charge is
// priced at its own rate and rounded up once, and a batch row pays its share of that.
import assert from 'node:assert/strict';
import {
  atPriceBps,
  batchPriceBps,
  costOfUsage,
  estimatePromptTokens,
  likelyFromEstimate,
  worstCaseCost,
} from '../../activities/billing/pricing.js';
import type { Route } from '../../activities/catalog/catalog.js';
import type { InferenceRequest, Message, Usage } from '../../activities/core/types.js';

// nano-USD per million tokens: 1 USD in, 4 USD out, 0.1 USD cache read, 1.25 / 2 USD cache writes
const PRICES = {
  input: 1_000_000_000n,
  output: 4_000_000_000n,
  cachedInput: 100_000_000n,
  cacheWrite: 1_250_000_000n,
  cacheWrite1h: 2_000_000_000n,
};
const route = (price: Partial<typeof PRICES> = PRICES) => ({ price }) as unknown as Route;
const usage = (over: Partial<Usage>): Usage => ({
  promptTokens: 0,
  cachedTokens: 0,
  cacheWriteTokens: 0,
  completionTokens: 0,
  reasoningTokens: 0,
  ...over,
});
const text = (role: Message['role'], t: string): Message => ({ role, content: [{ type: 'text', text: t }] });
const req = (messages: Message[], over: Partial<InferenceRequest> = {}) =>
  ({ messages, ...over }) as Pick<InferenceRequest, 'prompt' | 'messages' | 'tools' | 'responseFormat'>;

describe('pricing', () => {
  describe('the prompt estimate', () => {
    it('is one token per 3 bytes, plus 4 per message', () =>
      assert.equal(estimatePromptTokens(req([text('user', 'abcdef')])), 2 + 4));
    it('counts bytes of UTF-8, not characters', () =>
      assert.equal(estimatePromptTokens(req([text('user', 'ééé')])), 2 + 4));
    it('rounds the bytes up to a whole token', () =>
      assert.equal(estimatePromptTokens(req([text('user', 'abcd')])), 2 + 4));
    it('counts a raw prompt', () => assert.equal(estimatePromptTokens(req([], { prompt: 'x'.repeat(30) })), 10));
    it('counts every message and every text part', () => {
      const m: Message = {
        role: 'user',
        content: [
          { type: 'text', text: 'abc' },
          { type: 'text', text: 'def' },
        ],
      };
      assert.equal(estimatePromptTokens(req([m, text('assistant', 'ghi')])), 3 + 8);
    });
    it('takes 1,600 tokens for an image', () => {
      const m = { role: 'user', content: [{ type: 'image', url: 'https://example.com/a.png' }] } as unknown as Message;
      assert.equal(estimatePromptTokens(req([m])), 1_600 + 4);
    });
    it('takes a document at most its decoded size', () => {
      const m = { role: 'user', content: [{ type: 'document', data: 'A'.repeat(400) }] } as unknown as Message;
      assert.equal(estimatePromptTokens(req([m])), 100 + 4);
    });
    it('counts tool calls, tool definitions and a JSON schema', () => {
      const call = { ...text('assistant', ''), toolCalls: [{ id: 'c', name: 'abc', arguments: '{}{' }] } as Message;
      const base = estimatePromptTokens(req([call]));
      assert.equal(base, 2 + 4);
      const tools = [{ name: 'f', parameters: {} }] as unknown as InferenceRequest['tools'];
      const withTools = estimatePromptTokens(req([call], { tools }));
      assert.equal(withTools, Math.ceil((6 + JSON.stringify(tools).length) / 3) + 4);
      const schema = { type: 'object' };
      const withSchema = estimatePromptTokens(
        req([], { responseFormat: { type: 'json_schema', name: 'answer', schema } }),
      );
      assert.equal(withSchema, Math.ceil(JSON.stringify(schema).length / 3));
    });
    it('the likely count is three quarters of it, rounded up', () => {
      assert.equal(likelyFromEstimate(100), 75);
      assert.equal(likelyFromEstimate(101), 76);
      assert.equal(likelyFromEstimate(0), 0);
    });
  });

  describe('the worst case', () => {
    it('is every prompt token at the input price and every output token used', () =>
      assert.equal(worstCaseCost(route(), 1_000, 500), 1_000_000n + 2_000_000n));
    it('rounds each part up to the nano-dollar', () =>
      assert.equal(worstCaseCost(route({ input: 1n, output: 1n }), 1, 1), 2n));
  });

  describe('the charge', () => {
    it('prices uncached prompt tokens and output', () =>
      assert.equal(costOfUsage(route(), usage({ promptTokens: 1_000, completionTokens: 100 })), 1_000_000n + 400_000n));
    it('prices cache reads at the cached price', () =>
      assert.equal(costOfUsage(route(), usage({ promptTokens: 1_000, cachedTokens: 800 })), 200_000n + 80_000n));
    it('prices cache reads at the input price when the route has no cached price', () =>
      assert.equal(
        costOfUsage(
          route({ input: PRICES.input, output: PRICES.output }),
          usage({ promptTokens: 1_000, cachedTokens: 800 }),
        ),
        1_000_000n,
      ));
    it('prices 5-minute and 1-hour cache writes at their own prices', () =>
      assert.equal(
        costOfUsage(route(), usage({ promptTokens: 1_000, cacheWriteTokens: 600, cacheWrite1hTokens: 200 })),
        400_000n + 400n * 1_250n + 200n * 2_000n,
      ));
    it('prices an hour’s writes at the 5-minute price when there is no 1-hour one', () => {
      const { cacheWrite1h: _, ...noHour } = PRICES;
      assert.equal(
        costOfUsage(route(noHour), usage({ promptTokens: 1_000, cacheWriteTokens: 600, cacheWrite1hTokens: 200 })),
        400_000n + 600n * 1_250n,
      );
    });
    it('never counts more cached or written tokens than the prompt had', () =>
      assert.equal(
        costOfUsage(route(), usage({ promptTokens: 100, cachedTokens: 80, cacheWriteTokens: 50 })),
        80n * 100n + 20n * 1_250n,
      ));
    it('rounds each part up once', () =>
      assert.equal(costOfUsage(route({ input: 3n, output: 3n }), usage({ promptTokens: 1, completionTokens: 1 })), 2n));
  });

  describe('a batch row', () => {
    it('pays half by default', () => assert.equal(batchPriceBps({ batchPriceBps: null }), 5_000));
    it("pays the catalog's factor when it sets one", () =>
      assert.equal(batchPriceBps({ batchPriceBps: 2_500 }), 2_500));
    it('is rounded up to the nano-dollar', () => {
      assert.equal(atPriceBps(1_001n, 5_000), 501n);
      assert.equal(atPriceBps(1_000n, 5_000), 500n);
      assert.equal(atPriceBps(0n, 5_000), 0n);
    });
  });
});
