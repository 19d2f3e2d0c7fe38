// biome-ignore-all lint/suspicious/noExplicitAny: wire JSON, read field by field
// Native pass-through and the translated path's fidelity. A surface whose route's upstream speaks
// its wire format (messages → Anthropic, chat → an OpenAI-compatible upstream) sends the caller's
// own body and relays the upstream's answer and frames: fields a translation would lose survive
// both ways, money is still read from the usage, fallback still works before the first byte,
// and a fallback to another protocol is translated. Then the gaps the translated path closed:
// stop_sequence, thinking signatures, cache_control, vendor sampling controls, X-Billing-Mode.
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { startApi, newAccount, apiPost } from './support/api.js';
import { readSse } from './support/chatEnv.js';
import { startAnthropicUpstream, type AnthropicUpstream } from './support/upstreams/anthropic.js';
import { startOpenAIUpstream, type OpenAIUpstream } from './support/upstreams/openai.js';
import { balances } from '../activities/ledger/ledger.js';
import { createKey } from '../activities/accounts/keys.js';
import { assertBooksBalance, settledBalances } from './support/books.js';
import { config } from '../activities/config.js';
import { openaiChat } from '../activities/providers/openai/index.js';
import { anthropicChat } from '../activities/providers/anthropic/index.js';
import { MessageStreamer, toMessage } from '../activities/surfaces/messagesResponse.js';
import type { InferenceRequest, StreamEvent } from '../activities/core/types.js';
import { useProviderEnv } from './support/providerEnv.js';
import { CLAUDE_HAIKU, GPT_4O_MINI, messageUsageCost, textCost } from './support/prices.js';

const ENV = [
  'ANTHROPIC_API_KEY',
  'ANTHROPIC_BASE_URL',
  'OPENAI_API_KEY',
  'OPENAI_BASE_URL',
  'OPENROUTER_API_KEY',
  'OPENROUTER_BASE_URL',
  'GEMINI_API_KEY',
];
const HAIKU = 'claude-3-5-haiku-20241022';
const SONNET = 'claude-sonnet-4-20250514';
const weatherTool = {
  name: 'get_weather',
  description: 'Weather for a city',
  input_schema: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] },
};
const bill = {
  amount: 0,
  currency: 'USD' as const,
  cost: 0,
  paymentSource: 'USD' as const,
  remainingBalance: 0,
  inputTokens: 0,
  outputTokens: 0,
};

describe('pass-through and translation fidelity', function () {
  this.timeout(60_000);
  let api: Awaited<ReturnType<typeof startApi>>;
  let anthropic: AnthropicUpstream;
  let openai: OpenAIUpstream;
  let openrouter: OpenAIUpstream;
  let key: string;
  let accountId: string;
  let claude: Anthropic;
  let gpt: OpenAI;
  let restoreEnv: () => Promise<void>;

  before(async () => {
    anthropic = await startAnthropicUpstream();
    openai = await startOpenAIUpstream({ strict: true });
    openrouter = await startOpenAIUpstream({ basePath: '/api/v1', apiKey: 'sk-or-loopback' });
    restoreEnv = await useProviderEnv(
      {
        ANTHROPIC_API_KEY: anthropic.apiKey,
        ANTHROPIC_BASE_URL: anthropic.url,
        OPENAI_API_KEY: openai.apiKey,
        OPENAI_BASE_URL: openai.url,
        OPENROUTER_API_KEY: openrouter.apiKey,
        OPENROUTER_BASE_URL: openrouter.url,
      },
      ENV,
    );
    api = await startApi();
    ({ key, accountId } = await newAccount('5'));
    claude = new Anthropic({ apiKey: key, baseURL: `${api.base}/api`, maxRetries: 0 });
    gpt = new OpenAI({ apiKey: key, baseURL: `${api.base}/api/v1`, maxRetries: 0 });
  });
  after(async () => {
    await api.close();
    await Promise.all([anthropic.close(), openai.close(), openrouter.close()]);
    await restoreEnv();
  });
  beforeEach(() => {
    openai.reset();
    openrouter.reset();
  });
  afterEach(() => assertBooksBalance());

  // charges taken from a credit lease are written a moment later: read the settled balance
  const usd = async () => (await settledBalances(accountId)).USD.amount;
  const post = (path: string, body: unknown, headers: Record<string, string> = {}, withKey = key) =>
    apiPost(api.base, path, body, { key: withKey, headers });

  describe('messages → Anthropic, passed through (Anthropic SDK)', () => {
    it("sends the caller's body as written: cache_control, unknown fields and all", async () => {
      const body = {
        model: HAIKU,
        max_tokens: 300,
        system: [{ type: 'text' as const, text: 'You are terse.', cache_control: { type: 'ephemeral' as const } }],
        messages: [
          {
            role: 'user' as const,
            content: [
              {
                type: 'text' as const,
                text: 'Say hello',
                cache_control: { type: 'ephemeral' as const, ttl: '1h' as const },
              },
            ],
          },
        ],
        tools: [{ ...weatherTool, cache_control: { type: 'ephemeral' as const } }],
        metadata: { user_id: 'u-7' },
        service_tier: 'standard_only',
      };
      await claude.messages.create(body as any);
      const up = anthropic.last().body;
      assert.deepEqual(up, { ...body, model: HAIKU });
      assert.deepEqual(up.messages[0].content[0].cache_control, { type: 'ephemeral', ttl: '1h' });
    });

    it('returns the upstream message as it came: its id, cache_creation_input_tokens, billed on that usage', async () => {
      anthropic.script({ usage: { input_tokens: 12, cache_creation_input_tokens: 300, cache_read_input_tokens: 40 } });
      const before = await usd();
      const msg: any = await claude.messages.create({
        model: HAIKU,
        max_tokens: 64,
        messages: [{ role: 'user', content: 'Cache this' }],
      });
      assert.match(msg.id, /^msg_loop/, 'the upstream id, not a gateway one');
      assert.equal(msg.model, 'anthropic/claude-3-5-haiku', 'the model the caller is shown is the catalog one');
      assert.equal(msg.usage.cache_creation_input_tokens, 300);
      assert.equal(msg.usage.cache_read_input_tokens, 40);
      assert.equal(msg.usage.input_tokens, 12);
      assert.equal(msg.provider, 'anthropic');
      const charged = before - (await usd());
      assert.equal(charged, messageUsageCost(CLAUDE_HAIKU, msg.usage));
      assert.equal(msg.cost, Number(charged) / 1e9);
    });

    it('stop_sequence comes back with the sequence that matched, streaming and not', async () => {
      const msg: any = await claude.messages.create({
        model: HAIKU,
        max_tokens: 64,
        stop_sequences: ['Paris'],
        messages: [{ role: 'user', content: 'Weather in Paris today' }],
      });
      assert.equal(msg.stop_reason, 'stop_sequence');
      assert.equal(msg.stop_sequence, 'Paris');
      assert.equal(msg.content[0].text, 'Echo: Weather in ');
      const final: any = await claude.messages
        .stream({
          model: HAIKU,
          max_tokens: 64,
          stop_sequences: ['Paris'],
          messages: [{ role: 'user', content: 'Weather in Paris today' }],
        })
        .finalMessage();
      assert.equal(final.stop_reason, 'stop_sequence');
      assert.equal(final.stop_sequence, 'Paris');
    });

    it('thinking blocks come back signed, and sending them back keeps thinking on in a tool loop', async () => {
      anthropic.script({
        reasoning: 'I should look up the weather.',
        toolCalls: [{ id: 'toolu_think', name: 'get_weather', input: { city: 'Paris' } }],
      });
      const thinking = { type: 'enabled' as const, budget_tokens: 1024 };
      const first: any = await claude.messages.create({
        model: SONNET,
        max_tokens: 2048,
        thinking,
        tools: [weatherTool],
        messages: [{ role: 'user', content: 'Weather in Paris?' }],
      });
      assert.equal(first.content[0].type, 'thinking');
      assert.equal(first.content[0].signature, Buffer.from('sig:I should look up the weather.').toString('base64'));
      // the loopback, like Anthropic, rejects a tool loop with thinking on whose assistant turn lacks its signed block
      const second: any = await claude.messages.create({
        model: SONNET,
        max_tokens: 2048,
        thinking,
        tools: [weatherTool],
        messages: [
          { role: 'user', content: 'Weather in Paris?' },
          { role: 'assistant', content: first.content },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_think', content: '{"temp_c":21}' }] },
        ],
      });
      assert.equal(second.stop_reason, 'end_turn');
      const up = anthropic.last().body;
      assert.deepEqual(up.thinking, thinking);
      assert.deepEqual(up.messages[1].content[0], first.content[0]);

      // streamed: the signature arrives as a signature_delta, and the SDK assembles the block
      const stream = claude.messages.stream({
        model: SONNET,
        max_tokens: 2048,
        thinking,
        messages: [{ role: 'user', content: 'Think' }],
      });
      const final: any = await stream.finalMessage();
      assert.equal(final.content[0].type, 'thinking');
      assert.equal(final.content[0].signature, Buffer.from(`sig:${final.content[0].thinking}`).toString('base64'));
    });

    it("streams Anthropic's frames as they came, with the bill on message_delta", async () => {
      anthropic.script({ usage: { input_tokens: 9, cache_creation_input_tokens: 50 } });
      const before = await usd();
      const res = await post('/api/v1/messages', {
        model: HAIKU,
        max_tokens: 64,
        stream: true,
        messages: [{ role: 'user', content: 'Stream it' }],
      });
      const text = await res.text();
      const frames = text
        .split('\n\n')
        .filter(Boolean)
        .map((f) => {
          const [e, d] = f.split('\n');
          return [e.slice('event: '.length), JSON.parse(d.slice('data: '.length))] as [string, any];
        });
      const start = frames[0][1];
      assert.match(start.message.id, /^msg_loop/);
      assert.equal(start.message.model, 'anthropic/claude-3-5-haiku');
      assert.equal(start.message.usage.cache_creation_input_tokens, 50);
      // a text block as Anthropic sent it: word by word
      const deltas = frames.filter(([e]) => e === 'content_block_delta').map(([, d]) => d.delta.text);
      assert.deepEqual(deltas, ['Echo: ', 'Stream ', 'it']);
      const [, delta] = frames.find(([e]) => e === 'message_delta')!;
      assert.equal(frames.at(-1)![0], 'message_stop');
      assert.equal(delta.usage.cache_creation_input_tokens, 50);
      const charged = before - (await usd());
      assert.equal(charged, messageUsageCost(CLAUDE_HAIKU, delta.usage));
      assert.equal(delta.x_nanogpt_pricing.cost, Number(charged) / 1e9);
    });

    it("suffix-derived settings are the gateway's edits: `:thinking` adds thinking and drops what Anthropic rejects beside it", async () => {
      const msg: any = await claude.messages.create({
        model: `${SONNET}:thinking`,
        max_tokens: 4096,
        temperature: 0.5,
        messages: [{ role: 'user', content: 'Ponder' }],
      } as any);
      const up = anthropic.last().body;
      assert.equal(up.model, SONNET);
      assert.deepEqual(up.thinking, { type: 'enabled', budget_tokens: 2048 });
      assert.equal(up.temperature, undefined);
      assert.match(msg.id, /^msg_loop/, 'still passed through');
      assert.equal(msg.content[0].type, 'thinking');
    });

    it('SWITCHYARD_PASS_THROUGH=0 translates instead', async () => {
      const was = config.passThrough;
      config.passThrough = false;
      try {
        const msg: any = await claude.messages.create({
          model: HAIKU,
          max_tokens: 32,
          messages: [{ role: 'user', content: 'Translate me' }],
        });
        assert.match(msg.id, /^msg_(?!loop)/, 'a gateway id');
        assert.deepEqual(anthropic.last().body.messages, [
          { role: 'user', content: [{ type: 'text', text: 'Translate me' }] },
        ]);
      } finally {
        config.passThrough = was;
      }
    });

    it('falls back before the first byte to another protocol, translated there', async () => {
      anthropic.script({ error: { status: 529 } }, { error: { status: 529 } });
      const msg: any = await claude.messages.create({
        model: HAIKU,
        max_tokens: 64,
        messages: [{ role: 'user', content: 'Fallback please' }],
      });
      assert.equal(msg.provider, 'openrouter');
      assert.match(msg.content[0].text, /Fallback please/);
      const up = openrouter.last().body;
      assert.equal(up.model, 'anthropic/claude-3.5-haiku');
      assert.deepEqual(
        up.messages,
        [{ role: 'user', content: 'Fallback please' }],
        'an OpenAI-protocol body, translated',
      );

      const final: any = await claude.messages
        .stream({ model: HAIKU, max_tokens: 64, messages: [{ role: 'user', content: 'Stream fallback' }] })
        .finalMessage();
      assert.match(final.content[0].text, /Stream fallback/);
      assert.equal(openrouter.last().body.stream, true);
    });

    it('a failure after message_start but before content still falls back', async () => {
      anthropic.script({ text: 'never shown', streamError: { afterEvents: 1 } });
      const final: any = await claude.messages
        .stream({ model: HAIKU, max_tokens: 64, messages: [{ role: 'user', content: 'Early failure' }] })
        .finalMessage();
      assert.match(final.content[0].text, /Early failure/);
      assert.equal(openrouter.requests.length, 1);
    });
  });

  describe('chat → OpenAI-compatible, passed through (openai SDK)', () => {
    it("sends the caller's body with only the gateway's edits, and returns the upstream answer with its own fields", async () => {
      const before = await usd();
      const completion: any = await gpt.chat.completions.create({
        model: 'openai/gpt-4o-mini',
        max_tokens: 50,
        store: false,
        metadata: { run: 'p1' },
        service_tier: 'default',
        messages: [{ role: 'user', content: [{ type: 'text', text: 'Say hello' }] }],
        provider: { sort: 'price' },
      } as any);
      const up = openai.last().body;
      assert.deepEqual(up, {
        model: 'gpt-4o-mini',
        max_completion_tokens: 50,
        store: false,
        metadata: { run: 'p1' },
        service_tier: 'default',
        messages: [{ role: 'user', content: [{ type: 'text', text: 'Say hello' }] }],
      });
      assert.match(completion.id, /^chatcmpl-loopback/);
      assert.equal(completion.model, 'openai/gpt-4o-mini');
      assert.equal(completion.system_fingerprint, 'fp_loopback');
      assert.equal(completion.service_tier, 'default');
      assert.equal(completion.choices[0].message.refusal, null);
      assert.deepEqual(completion.choices[0].message.annotations, []);
      assert.equal(completion.provider, 'openai');
      const u = completion.usage;
      const expected = textCost(GPT_4O_MINI, { input: u.prompt_tokens, output: u.completion_tokens });
      assert.equal(before - (await usd()), expected);
      assert.equal(completion.cost, Number(expected) / 1e9);
    });

    it('streams the upstream chunks; usage is asked for billing but shown only when the caller asked', async () => {
      const before = await usd();
      const frames = await readSse(
        await post('/api/v1/chat/completions', {
          model: 'openai/gpt-4o-mini',
          stream: true,
          messages: [{ role: 'user', content: 'Say hello' }],
        }),
      );
      assert.deepEqual(openai.last().body.stream_options, { include_usage: true }, 'the gateway asked for usage');
      const chunks = frames.filter((f) => f !== '[DONE]');
      assert.equal(frames.at(-1), '[DONE]');
      assert.ok(
        chunks.every(
          (c) => c.system_fingerprint === 'fp_loopback' && c.model === 'openai/gpt-4o-mini' && c.provider === 'openai',
        ),
        "every chunk is the upstream's, renamed, with provider",
      );
      assert.ok(
        chunks.every((c) => c.usage === undefined || c.usage === null),
        'no usage shown: the caller did not ask',
      );
      assert.deepEqual(chunks[0].choices[0].delta, { role: 'assistant', content: '', refusal: null });
      const last = chunks.at(-1);
      assert.equal(last.choices[0].finish_reason, 'stop');
      assert.ok(last.x_nanogpt_pricing.cost > 0, 'pricing on the final chunk');
      assert.equal(before - (await usd()), BigInt(Math.round(last.cost * 1e9)));
    });

    it('with include_usage, usage and pricing come on a last chunk with empty choices, as OpenAI sends them', async () => {
      const ask = {
        model: 'openai/gpt-4o-mini',
        stream: true,
        stream_options: { include_usage: true },
        messages: [{ role: 'user', content: 'Say hello' }],
      };
      // the upstream's own usage chunk, and an upstream that puts usage on its finishing chunk instead
      for (const usageOnFinish of [false, true]) {
        openai.script({ usageOnFinish });
        const frames = await readSse(await post('/api/v1/chat/completions', ask));
        assert.equal(frames.at(-1), '[DONE]');
        const [finishing, last] = frames.slice(-3, -1);
        assert.equal(finishing.choices[0].finish_reason, 'stop', `usageOnFinish ${usageOnFinish}`);
        assert.equal(finishing.x_nanogpt_pricing, undefined);
        assert.deepEqual(last.choices, []);
        assert.equal(last.object, 'chat.completion.chunk');
        assert.equal(last.id, finishing.id);
        assert.equal(last.model, 'openai/gpt-4o-mini');
        assert.ok(last.usage.completion_tokens > 0);
        assert.ok(last.x_nanogpt_pricing.cost > 0);
      }
    });

    it("the official SDK's stream helper reads a passed-through stream, usage included when asked", async () => {
      const stream = gpt.chat.completions.stream({
        model: 'openai/gpt-4o-mini',
        messages: [{ role: 'user', content: 'Say hello' }],
        stream_options: { include_usage: true },
      });
      const done = await stream.finalChatCompletion();
      assert.match(done.choices[0].message.content!, /Say hello/);
      assert.ok(done.usage!.completion_tokens > 0, 'usage shown when asked');
    });

    it('falls back before the first byte to another OpenAI-compatible upstream, passed through there too', async () => {
      openai.script({ status: 503 });
      const frames = await readSse(
        await post('/api/v1/chat/completions', {
          model: 'openai/gpt-4o-mini',
          stream: true,
          messages: [{ role: 'user', content: 'hi' }],
          logit_bias: { '50256': -100 },
        }),
      );
      assert.equal(frames[0].provider, 'openrouter');
      const up = openrouter.last().body;
      assert.equal(up.model, 'openai/gpt-4o-mini');
      assert.deepEqual(up.logit_bias, { '50256': -100 });
      assert.deepEqual(up.messages, [{ role: 'user', content: 'hi' }]);
    });

    it('a stream cut midway ends with an error frame and bills exactly what was produced', async () => {
      // the role chunk, "one", " two", " three", then the body ends
      openai.script({ text: 'one two three four five six seven', cutAfter: 4 });
      const before = await usd();
      const frames = await readSse(
        await post('/api/v1/chat/completions', {
          model: 'openai/gpt-4o-mini',
          stream: true,
          messages: [{ role: 'user', content: 'hi' }],
        }),
      );
      assert.ok(
        frames.some((f) => f !== '[DONE]' && f.error),
        'an error frame',
      );
      // no usage came: the README's estimate, by hand. The prompt "hi": 2 bytes, one token per 3
      // rounded up, plus 4 for the message = 5 tokens; "one two three": 13 bytes, one per 4 = 4 tokens
      const expected = textCost(GPT_4O_MINI, { input: 5, output: 4 });
      assert.equal(expected, 788n + 2520n);
      assert.equal(before - (await usd()), expected, 'the produced text is billed, nothing more');
    });

    it('max_tool_calls and :reasoning-exclude need the translated path', async () => {
      openai.script({
        toolCalls: [
          { name: 'a', arguments: '{}' },
          { name: 'b', arguments: '{}' },
        ],
      });
      const j = await (
        await post('/api/v1/chat/completions', {
          model: 'openai/gpt-4o-mini',
          max_tool_calls: 1,
          messages: [{ role: 'user', content: 'hi' }],
          tools: [
            { type: 'function', function: { name: 'a' } },
            { type: 'function', function: { name: 'b' } },
          ],
        })
      ).json();
      assert.equal(j.choices[0].message.tool_calls.length, 1);
      assert.match(j.id, /^chatcmpl-(?!loopback)/, 'a gateway id: translated');
    });

    it('60 concurrent pass-through calls at a balance that covers a few: no overspend, books balance', async () => {
      const { key: poor, accountId: poorId } = await newAccount('0.02');
      const results = await Promise.all(
        Array.from({ length: 60 }, (_, i) =>
          post(
            '/api/v1/chat/completions',
            {
              model: 'openai/gpt-4o-mini',
              max_tokens: 16000,
              stream: i % 2 === 0,
              messages: [{ role: 'user', content: `race ${i}` }],
            },
            {},
            poor,
          ).then(async (r) => ({ status: r.status, text: await r.text() })),
        ),
      );
      assert.ok(
        results.every((r) => r.status === 200 || r.status === 402),
        JSON.stringify(results.map((r) => r.status)),
      );
      assert.ok(
        results.some((r) => r.status === 402) && results.some((r) => r.status === 200),
        'some served, some refused',
      );
      const bal = (await balances(poorId))!.USD;
      assert.equal(bal.held, 0n);
      assert.ok(bal.amount >= 0n, 'no overspend');
      await assertBooksBalance(poorId);
    });
  });

  describe('the translated path', () => {
    it('messages → Anthropic with :reasoning-exclude (translated): stop_sequence, and signed thinking sent back keeps thinking on in a tool loop', async () => {
      const msg: any = await claude.messages.create({
        model: `${SONNET}:reasoning-exclude`,
        max_tokens: 64,
        stop_sequences: ['Paris'],
        messages: [{ role: 'user', content: 'Weather in Paris today' }],
      });
      assert.match(msg.id, /^msg_(?!loop)/, 'a gateway id: translated');
      assert.equal(msg.stop_reason, 'stop_sequence');
      assert.equal(msg.stop_sequence, 'Paris');
      const signed = {
        type: 'thinking',
        thinking: 'Look it up.',
        signature: Buffer.from('sig:Look it up.').toString('base64'),
      };
      await claude.messages.create({
        model: `${SONNET}:reasoning-exclude`,
        max_tokens: 4096,
        thinking: { type: 'enabled', budget_tokens: 2048 },
        tools: [weatherTool],
        messages: [
          { role: 'user', content: 'Weather in Paris?' },
          {
            role: 'assistant',
            content: [
              signed as any,
              { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } },
            ],
          },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '{"temp_c":21}' }] },
        ],
      });
      const up = anthropic.last().body;
      assert.deepEqual(up.thinking, { type: 'enabled', budget_tokens: 2048 }, 'thinking stays on');
      assert.deepEqual(up.messages[1].content[0], signed, 'the signed block leads the assistant turn');
    });

    it('chat → Anthropic carries cache_control on content parts, system parts and keeps stop sequences', async () => {
      const j = await (
        await post('/api/v1/chat/completions', {
          model: HAIKU,
          max_tokens: 64,
          stop: ['Paris'],
          messages: [
            {
              role: 'system',
              content: [{ type: 'text', text: 'Long instructions', cache_control: { type: 'ephemeral' } }],
            },
            {
              role: 'user',
              content: [
                { type: 'text', text: 'Weather in Paris today', cache_control: { type: 'ephemeral', ttl: '5m' } },
              ],
            },
          ],
        })
      ).json();
      const up = anthropic.last().body;
      assert.deepEqual(up.system, [{ type: 'text', text: 'Long instructions', cache_control: { type: 'ephemeral' } }]);
      assert.deepEqual(up.messages[0].content, [
        { type: 'text', text: 'Weather in Paris today', cache_control: { type: 'ephemeral', ttl: '5m' } },
      ]);
      assert.equal(j.choices[0].message.content, 'Echo: Weather in ');
      assert.equal(j.choices[0].finish_reason, 'stop');
    });

    it('a bad cache_control is a 400 naming it, nothing charged', async () => {
      const before = await usd();
      const res = await post('/api/v1/messages', {
        model: HAIKU,
        max_tokens: 10,
        messages: [{ role: 'user', content: [{ type: 'text', text: 'x', cache_control: { type: 'forever' } }] }],
      });
      assert.equal(res.status, 400);
      assert.match((await res.json()).error.message, /cache_control/);
      assert.equal(await usd(), before);
    });

    it('the Anthropic adapter returns signatures and stop sequences; the message surface shows them', async () => {
      const target = { providerId: 'anthropic', baseUrl: anthropic.url, apiKey: anthropic.apiKey, options: {} };
      const req: InferenceRequest = {
        model: SONNET,
        maxTokens: 4096,
        sampling: { stop: ['Paris'] },
        reasoning: { enabled: true, budgetTokens: 1024 },
        messages: [{ role: 'user', content: [{ type: 'text', text: 'Weather in Paris today' }] }],
      };
      const r = await anthropicChat.complete(req, target, AbortSignal.timeout(5000));
      assert.equal(r.stopSequence, 'Paris');
      const block = r.thinkingBlocks![0] as { text: string; signature: string };
      assert.equal(block.signature, Buffer.from(`sig:${block.text}`).toString('base64'));
      const shown: any = toMessage(r, r.usage!, bill, {
        id: 'msg_x',
        model: 'm',
        provider: 'anthropic',
        showReasoning: true,
      });
      assert.deepEqual(shown.content[0], { type: 'thinking', thinking: block.text, signature: block.signature });
      assert.equal(shown.stop_reason, 'stop_sequence');

      const events: StreamEvent[] = [];
      for await (const e of anthropicChat.stream(req, target, AbortSignal.timeout(5000))) events.push(e);
      const sig = events.find((e) => e.type === 'reasoning_signature') as { signature: string };
      assert.equal(sig.signature, block.signature);
      assert.equal((events.find((e) => e.type === 'finish') as any).stopSequence, 'Paris');
      const streamer = new MessageStreamer({ id: 'msg_x', model: 'm', provider: 'anthropic', showReasoning: true });
      const frames = events.flatMap((e) => streamer.event(e));
      assert.ok(
        frames.some(([, d]: any) => d.delta?.type === 'signature_delta' && d.delta.signature === block.signature),
        'a signature_delta frame',
      );
      const [, delta]: any = streamer.end('stop', r.usage!, bill, 'Paris').find(([e]) => e === 'message_delta');
      assert.deepEqual(delta.delta, { stop_reason: 'stop_sequence', stop_sequence: 'Paris' });
    });

    it('vendor sampling controls reach vLLM and llama.cpp under their names, and nobody else', async () => {
      const vendor = { min_tokens: 3, ignore_eos: true, mirostat_mode: 2, mirostat_tau: 4, tfs: 0.9, top_a: 0.2 };
      const req: InferenceRequest = {
        model: 'm',
        maxTokens: 8,
        prompt: 'Once upon',
        messages: [],
        sampling: { vendor },
      };
      const send = (providerId: string) =>
        openaiChat.complete(
          req,
          { providerId, baseUrl: openrouter.url, apiKey: openrouter.apiKey, options: {} },
          AbortSignal.timeout(5000),
        );
      await send('vllm');
      const v = openrouter.last().body;
      assert.equal(openrouter.last().path, '/api/v1/completions');
      assert.deepEqual([v.min_tokens, v.ignore_eos, v.mirostat, v.top_a], [3, true, undefined, undefined]);
      await send('llamacpp');
      const l = openrouter.last().body;
      assert.deepEqual(
        [l.mirostat, l.mirostat_tau, l.tfs_z, l.ignore_eos, l.min_tokens, l.top_a],
        [2, 4, 0.9, true, undefined, undefined],
      );
      await send('together');
      const t = openrouter.last().body;
      for (const k of ['min_tokens', 'ignore_eos', 'mirostat', 'mirostat_mode', 'tfs', 'tfs_z', 'top_a'])
        assert.equal(t[k], undefined, k);
    });

    it('legacy completions take vendor controls and do not send them to OpenAI (whose API would reject them)', async () => {
      const res = await post('/api/v1/completions', {
        model: 'openai/gpt-4o-mini',
        prompt: 'Once upon',
        max_tokens: 8,
        top_a: 0.3,
        mirostat_mode: 1,
        min_tokens: 2,
      });
      assert.equal(res.status, 200, await res.clone().text());
      const up = openai.last().body;
      for (const k of ['top_a', 'mirostat_mode', 'mirostat', 'min_tokens']) assert.equal(up[k], undefined, k);
    });
  });

  describe('a stream cut midway says what it cost', () => {
    /** The named frames of an SSE body: [event, parsed data] ([DONE] kept as text). */
    async function namedFrames(res: Response): Promise<Array<[string, any]>> {
      const text = await res.text();
      return text
        .split(/\n\n/)
        .filter((f) => f.includes('data: '))
        .map((f) => {
          const event = /^event: (.*)$/m.exec(f)?.[1] ?? 'message';
          const data = f
            .split('\n')
            .filter((l) => l.startsWith('data: '))
            .map((l) => l.slice(6))
            .join('\n');
          return [event, data === '[DONE]' ? data : JSON.parse(data)];
        });
    }

    /** Chat: the cut frame, then a chunk with the pricing extension and what was charged, then [DONE]. */
    async function chatCutCosts(model: string) {
      const before = await usd();
      const frames = await readSse(
        await post('/api/v1/chat/completions', { model, stream: true, messages: [{ role: 'user', content: 'hi' }] }),
      );
      const charged = before - (await usd());
      assert.ok(charged > 0n, 'the produced text is billed');
      const cut = frames.findIndex((f) => f !== '[DONE]' && f.error);
      assert.ok(cut >= 0, 'an error frame');
      assert.equal(frames[cut].error.code, 'upstream_stream_cut');
      assert.equal(frames.at(-1), '[DONE]');
      const priced = frames.findIndex((f, i) => i > cut && f !== '[DONE]' && f.x_nanogpt_pricing);
      assert.ok(priced > cut, `a pricing frame after the cut frame: ${JSON.stringify(frames.slice(cut))}`);
      assert.equal(frames[priced].x_nanogpt_pricing.cost, Number(charged) / 1e9);
      assert.equal(frames[priced].cost, Number(charged) / 1e9);
      assert.equal(priced, frames.length - 2, 'the pricing frame comes right before [DONE]');
    }

    it('chat passed through', async () => {
      openai.script({ text: 'one two three four five six seven', cutAfter: 4 });
      await chatCutCosts('openai/gpt-4o-mini');
      assert.equal(openai.requests.length, 1);
    });

    it('chat translated', async () => {
      anthropic.script({ text: 'one two three four five six seven', cut: { afterEvents: 5 } });
      await chatCutCosts(HAIKU);
    });

    /** Messages: a message_delta with the usage and pricing, then the error frame (the last). */
    async function messagesCutCosts(model: string) {
      const before = await usd();
      const frames = await namedFrames(
        await post('/api/v1/messages', {
          model,
          max_tokens: 200,
          stream: true,
          messages: [{ role: 'user', content: 'hi' }],
        }),
      );
      const charged = before - (await usd());
      assert.ok(charged > 0n, 'the produced text is billed');
      const [lastEvent, lastData] = frames.at(-1)!;
      assert.equal(lastEvent, 'error');
      assert.match(lastData.error.message, /cut|broke|ended/);
      const [deltaEvent, delta] = frames.at(-2)!;
      assert.equal(deltaEvent, 'message_delta', JSON.stringify(frames.slice(-3)));
      assert.equal(delta.delta.stop_reason, null);
      assert.ok(delta.usage.output_tokens > 0);
      assert.equal(delta.x_nanogpt_pricing.cost, Number(charged) / 1e9);
      assert.ok(!frames.some(([e]) => e === 'message_stop'), 'no message_stop: the message did not end');
    }

    it('messages passed through', async () => {
      anthropic.script({ text: 'one two three four five six seven', cut: { afterEvents: 5 } });
      await messagesCutCosts(HAIKU);
    });

    it('messages translated', async () => {
      openai.script({ text: 'one two three four five six seven', cutAfter: 4 });
      await messagesCutCosts('openai/gpt-4o-mini');
    });
  });

  describe('X-Billing-Mode', () => {
    it('accepts the pay-as-you-go spellings, case-insensitively', async () => {
      for (const v of ['paygo', 'PAYG', 'pay-as-you-go']) {
        const res = await post(
          '/api/v1/chat/completions',
          { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] },
          { 'X-Billing-Mode': v },
        );
        assert.equal(res.status, 200, v);
      }
    });

    it("rejects another value with a 400 naming the header, in each surface's envelope, nothing charged", async () => {
      const before = await usd();
      const chat = await post(
        '/api/v1/chat/completions',
        { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] },
        { 'X-Billing-Mode': 'subscription' },
      );
      assert.equal(chat.status, 400);
      const e = (await chat.json()).error;
      assert.equal(e.param, 'X-Billing-Mode');
      assert.match(e.message, /paygo/);
      const msg = await post(
        '/api/v1/messages',
        { model: HAIKU, max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] },
        { 'x-billing-mode': 'free' },
      );
      assert.equal(msg.status, 400);
      assert.equal((await msg.json()).type, 'error');
      const resp = await post(
        '/api/v1/responses',
        { model: 'openai/gpt-4o-mini', input: 'hi' },
        { 'X-Billing-Mode': 'credits' },
      );
      assert.equal(resp.status, 400);
      assert.equal((await resp.json()).error.param, 'X-Billing-Mode');
      const talk = await post(
        '/api/talk-to-gpt',
        { model: 'openai/gpt-4o-mini', prompt: 'hi' },
        { 'X-Billing-Mode': 'credits' },
      );
      assert.equal(talk.status, 400);
      assert.match((await talk.json()).message, /X-Billing-Mode/);
      assert.equal(await usd(), before);
    });

    it('on a subscription-only key, a forced pay-as-you-go request is refused saying why', async () => {
      const { key: subKey } = await createKey(accountId, { billingMode: 'subscription_only' });
      const res = await post(
        '/api/v1/completions',
        { model: 'openai/gpt-4o-mini', prompt: 'hi', max_tokens: 4 },
        { 'X-Billing-Mode': 'paygo' },
        subKey,
      );
      assert.equal(res.status, 402);
      assert.match((await res.json()).error.message, /pay-as-you-go billing/);
    });
  });
});
