// The chat surface over every provider protocol: Anthropic Messages and Gemini upstreams
// (loopback servers speaking their real protocols) and the built-in local model, each
// non-streaming and streaming, with a tool call where the model can make one, and billed.
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startApi, newAccount, apiPost } from './support/api.js';
import { readSse } from './support/chatEnv.js';
import { startAnthropicUpstream, type AnthropicUpstream } from './support/upstreams/anthropic.js';
import { startGeminiUpstream, type GeminiUpstream } from './support/upstreams/gemini.js';
import { textCost, textPrices } from './support/prices.js';
import { assertBooksBalance, settledBalances } from './support/books.js';
import { useProviderEnv } from './support/providerEnv.js';

const ENV = [
  'ANTHROPIC_API_KEY',
  'ANTHROPIC_BASE_URL',
  'GEMINI_API_KEY',
  'GEMINI_BASE_URL',
  'OPENAI_API_KEY',
  'OPENROUTER_API_KEY',
];
const weatherTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

describe('chat completions over every provider protocol', function () {
  this.timeout(60_000);
  let api: Awaited<ReturnType<typeof startApi>>;
  let anthropic: AnthropicUpstream;
  let gemini: GeminiUpstream;
  let key: string;
  let accountId: string;
  let restoreEnv: () => Promise<void>;

  before(async () => {
    anthropic = await startAnthropicUpstream();
    gemini = await startGeminiUpstream();
    restoreEnv = await useProviderEnv(
      {
        ANTHROPIC_API_KEY: anthropic.apiKey,
        ANTHROPIC_BASE_URL: anthropic.url,
        GEMINI_API_KEY: gemini.apiKey,
        GEMINI_BASE_URL: gemini.url,
      },
      ENV,
    );
    api = await startApi();
    ({ key, accountId } = await newAccount('5'));
  });
  after(async () => {
    await api.close();
    await anthropic.close();
    await gemini.close();
    await restoreEnv();
  });
  afterEach(() => assertBooksBalance());

  const post = (body: object) => apiPost(api.base, '/api/v1/chat/completions', body, { key });

  for (const [label, model, provider] of [
    ['Anthropic', 'claude-3-5-haiku-20241022', 'anthropic'],
    ['Gemini', 'gemini-2.0-flash', 'gemini'],
  ] as const) {
    describe(label, () => {
      it('answers and bills the normalized usage', async () => {
        const before = (await settledBalances(accountId)).USD.amount;
        const res = await post({
          model,
          messages: [
            { role: 'system', content: 'Be brief.' },
            { role: 'user', content: 'Say hello' },
          ],
        });
        const body = await res.json();
        assert.equal(res.status, 200, JSON.stringify(body));
        assert.equal(body.provider, provider);
        assert.match(body.choices[0].message.content, /hello/i);
        assert.ok(body.usage.prompt_tokens > 0);
        const spent = before - (await settledBalances(accountId)).USD.amount;
        assert.equal(Number(spent) / 1e9, body.cost);
        assert.ok(spent > 0n);
      });

      it('streams text and a final chunk with usage', async () => {
        const frames = await readSse(
          await post({
            model,
            messages: [{ role: 'user', content: 'Say hello' }],
            stream: true,
            stream_options: { include_usage: true },
          }),
        );
        assert.equal(frames.at(-1), '[DONE]');
        const text = frames
          .slice(0, -1)
          .map((f) => f.choices[0]?.delta?.content ?? '')
          .join('');
        assert.match(text, /hello/i);
        // as OpenAI sends it: the finishing chunk, then a chunk with empty choices carrying usage and pricing
        const [finishing, usageChunk] = frames.slice(-3, -1);
        assert.equal(finishing.choices[0].finish_reason, 'stop');
        assert.equal(finishing.usage, undefined);
        assert.equal(finishing.x_nanogpt_pricing, undefined);
        assert.deepEqual(usageChunk.choices, []);
        assert.equal(usageChunk.object, 'chat.completion.chunk');
        assert.equal(usageChunk.id, finishing.id);
        assert.ok(usageChunk.usage.completion_tokens > 0);
        assert.ok(usageChunk.x_nanogpt_pricing.cost > 0);
        assert.equal(usageChunk.cost, usageChunk.x_nanogpt_pricing.cost);
      });

      it('without include_usage: no usage chunk, the pricing on the finishing chunk', async () => {
        const frames = await readSse(
          await post({ model, messages: [{ role: 'user', content: 'Say hello' }], stream: true }),
        );
        assert.equal(frames.at(-1), '[DONE]');
        const chunks = frames.slice(0, -1);
        assert.ok(chunks.every((c) => c.choices.length === 1 && c.usage === undefined));
        const last = chunks.at(-1);
        assert.equal(last.choices[0].finish_reason, 'stop');
        assert.ok(last.x_nanogpt_pricing.cost > 0);
      });

      it('makes a tool call, and takes its result back', async () => {
        if (provider === 'anthropic')
          anthropic.script({ toolCalls: [{ id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } }] });
        else gemini.script({ toolCalls: [{ name: 'get_weather', args: { city: 'Paris' } }] });
        const first = await (
          await post({ model, messages: [{ role: 'user', content: 'Weather in Paris?' }], tools: [weatherTool] })
        ).json();
        assert.equal(first.choices[0].finish_reason, 'tool_calls');
        const call = first.choices[0].message.tool_calls[0];
        assert.equal(call.function.name, 'get_weather');
        assert.deepEqual(JSON.parse(call.function.arguments), { city: 'Paris' });
        const second = await post({
          model,
          tools: [weatherTool],
          messages: [
            { role: 'user', content: 'Weather in Paris?' },
            first.choices[0].message,
            { role: 'tool', tool_call_id: call.id, content: '{"temp_c":21}' },
          ],
        });
        assert.equal(second.status, 200, await second.clone().text());
      });
    });
  }

  describe('the built-in local model (no upstream key)', () => {
    it('answers with a real model, billed at its catalog price', async () => {
      const before = (await settledBalances(accountId)).USD.amount;
      const res = await post({
        model: 'local/stories260k',
        messages: [{ role: 'user', content: 'Once upon a time' }],
        max_tokens: 24,
        temperature: 0,
      });
      const body = await res.json();
      assert.equal(res.status, 200, JSON.stringify(body));
      assert.equal(body.provider, 'local');
      assert.ok(body.choices[0].message.content.length > 0);
      const u = body.usage;
      assert.ok(u.prompt_tokens > 0 && u.completion_tokens > 0 && u.completion_tokens <= 24);
      // catalog: $0.02 per 1M tokens, no markup
      const expected = textCost(textPrices('local/stories260k'), {
        input: u.prompt_tokens,
        output: u.completion_tokens,
      });
      assert.equal(before - (await settledBalances(accountId)).USD.amount, expected);
    });

    it('streams through the official SDK', async () => {
      const client = new OpenAI({ apiKey: key, baseURL: `${api.base}/v1`, maxRetries: 0 });
      const stream = await client.chat.completions.create({
        model: 'local/stories260k',
        messages: [{ role: 'user', content: 'Once upon a time' }],
        max_tokens: 16,
        stream: true,
      });
      let text = '';
      for await (const c of stream) text += c.choices[0]?.delta?.content ?? '';
      assert.ok(text.length > 0);
    });
  });
});
