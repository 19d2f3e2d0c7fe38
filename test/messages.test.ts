// biome-ignore-all lint/suspicious/noExplicitAny: wire JSON, read field by field
// The message-style API (Anthropic Messages wire format) through the official `@anthropic-ai/sdk`,
// pointed at the gateway unchanged, against (a) the Anthropic loopback upstream, (b) an
// OpenAI-compatible loopback upstream (translated), (c) the built-in local model. Every billed
// call is checked against its reported usage, and the books balance after each test.
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import Anthropic from '@anthropic-ai/sdk';
import { startApi, newAccount } from './support/api.js';
import { startAnthropicUpstream, type AnthropicUpstream } from './support/upstreams/anthropic.js';
import { startOpenAIUpstream, type OpenAIUpstream } from './support/upstreams/openai.js';
import { assertBooksBalance, settledBalances } from './support/books.js';
import { useProviderEnv } from './support/providerEnv.js';
import { readUntil } from './support/chatEnv.js';
import { CLAUDE_HAIKU, GPT_4O_MINI, messageUsageCost, textCost, textPrices } from './support/prices.js';
import { waitFor } from './support/wait.js';

const ENV = [
  'ANTHROPIC_API_KEY',
  'ANTHROPIC_BASE_URL',
  'OPENAI_API_KEY',
  'OPENAI_BASE_URL',
  'OPENROUTER_API_KEY',
  'OPENROUTER_BASE_URL',
  'GEMINI_API_KEY',
];
const weatherTool = {
  name: 'get_weather',
  description: 'Weather for a city',
  input_schema: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] },
};
const PNG_1PX = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

describe('messages API (Anthropic wire format)', function () {
  this.timeout(60_000);
  let api: Awaited<ReturnType<typeof startApi>>;
  let anthropic: AnthropicUpstream;
  let openai: OpenAIUpstream;
  let key: string;
  let accountId: string;
  let client: Anthropic;
  let restoreEnv: () => Promise<void>;

  before(async () => {
    anthropic = await startAnthropicUpstream();
    openai = await startOpenAIUpstream({ strict: true });
    restoreEnv = await useProviderEnv(
      {
        ANTHROPIC_API_KEY: anthropic.apiKey,
        ANTHROPIC_BASE_URL: anthropic.url,
        OPENAI_API_KEY: openai.apiKey,
        OPENAI_BASE_URL: openai.url,
      },
      ENV,
    );
    api = await startApi();
    ({ key, accountId } = await newAccount('5'));
    client = new Anthropic({ apiKey: key, baseURL: `${api.base}/api`, maxRetries: 0 });
  });
  after(async () => {
    await api.close();
    await anthropic.close();
    await openai.close();
    await restoreEnv();
  });
  afterEach(() => assertBooksBalance());

  const usd = async () => (await settledBalances(accountId)).USD.amount;

  /** The charge equals the price of the reported usage at the model's prices (test/support/prices.ts). */
  async function assertBilled(before: bigint, msg: any, modelId: string) {
    const spent = before - (await usd());
    const expected = messageUsageCost(textPrices(modelId), msg.usage);
    assert.ok(spent > 0n, 'something was charged');
    assert.equal(spent, expected, `charged ${spent}, usage ${JSON.stringify(msg.usage)} prices to ${expected}`);
    if (msg.cost !== undefined) assert.equal(Number(spent) / 1e9, msg.cost);
  }

  const raw = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${api.base}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key, 'anthropic-version': '2023-06-01', ...headers },
      body: JSON.stringify(body),
    });

  /** Named SSE frames as [event, data]. */
  async function readEvents(res: Response): Promise<Array<[string, any]>> {
    const text = await res.text();
    return text
      .split(/\n\n/)
      .filter((f) => f.trim())
      .map((f) => {
        const lines = f.split('\n');
        const event = lines.find((l) => l.startsWith('event: '))?.slice(7) ?? '';
        const data = lines
          .filter((l) => l.startsWith('data: '))
          .map((l) => l.slice(6))
          .join('\n');
        return [event, JSON.parse(data)];
      });
  }

  describe('(a) routed to the Anthropic upstream', () => {
    const model = 'claude-3-5-haiku-20241022';
    const modelId = 'anthropic/claude-3-5-haiku';

    it('creates a message, billed at its usage', async () => {
      const before = await usd();
      const msg: any = await client.messages.create({
        model,
        max_tokens: 256,
        system: 'Be brief.',
        messages: [{ role: 'user', content: 'Say hello' }],
        metadata: { user_id: 'u-1' },
      });
      assert.equal(msg.type, 'message');
      assert.equal(msg.role, 'assistant');
      assert.match(msg.id, /^msg_/);
      assert.equal(msg.stop_reason, 'end_turn');
      assert.equal(msg.content[0].type, 'text');
      assert.match(msg.content[0].text, /Echo: Say hello/);
      assert.ok(msg.usage.input_tokens > 0 && msg.usage.output_tokens > 0);
      assert.ok(msg.x_nanogpt_pricing && typeof msg.remainingBalance === 'number');
      const up = anthropic.last().body;
      assert.equal(up.model, 'claude-3-5-haiku-20241022');
      assert.equal(up.max_tokens, 256);
      assert.deepEqual(JSON.stringify(up.system).includes('Be brief.'), true);
      assert.equal(up.metadata?.user_id, 'u-1');
      await assertBilled(before, msg, msg.model);
    });

    it('excludes cache reads and writes from input_tokens', async () => {
      anthropic.script({ usage: { input_tokens: 10, cache_read_input_tokens: 100, cache_creation_input_tokens: 20 } });
      const before = await usd();
      const msg: any = await client.messages.create({
        model,
        max_tokens: 64,
        messages: [{ role: 'user', content: 'Cached?' }],
      });
      assert.equal(msg.usage.input_tokens, 10);
      assert.equal(msg.usage.cache_read_input_tokens, 100);
      assert.equal(msg.usage.cache_creation_input_tokens, 20);
      await assertBilled(before, msg, modelId);
    });

    it('streams through messages.stream() and finalMessage()', async () => {
      const before = await usd();
      const stream = client.messages.stream({
        model,
        max_tokens: 256,
        messages: [{ role: 'user', content: 'Say hello' }],
      });
      let text = '';
      stream.on('text', (t) => {
        text += t;
      });
      const final: any = await stream.finalMessage();
      assert.match(text, /Echo: Say hello/);
      assert.equal(final.content[0].text, text);
      assert.equal(final.stop_reason, 'end_turn');
      assert.ok(final.usage.output_tokens > 0 && final.usage.input_tokens > 0);
      await assertBilled(before, final, modelId);
    });

    it('accepts a gzip-compressed request body', async () => {
      const res = await fetch(`${api.base}/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-encoding': 'gzip', 'x-api-key': key },
        body: gzipSync(
          JSON.stringify({ model, max_tokens: 64, messages: [{ role: 'user', content: 'Say hello compressed' }] }),
        ),
      });
      assert.equal(res.status, 200);
      assert.match((await res.json()).content[0].text, /compressed/);
    });

    it('streams named events in Anthropic order, with pricing on message_delta', async () => {
      const before = await usd();
      const res = await raw(
        '/v1/messages',
        { model, max_tokens: 256, stream: true, messages: [{ role: 'user', content: 'Say hello' }] },
        { 'anthropic-beta': 'prompt-caching-2024-07-31' },
      );
      assert.equal(res.status, 200);
      const frames = await readEvents(res);
      assert.equal(anthropic.last().headers['anthropic-beta'], 'prompt-caching-2024-07-31', 'anthropic-beta passed on');
      const names = frames.map(([e]) => e);
      // passed through: Anthropic's own order (its ping follows the first block's start)
      assert.deepEqual(names.slice(0, 3), ['message_start', 'content_block_start', 'ping']);
      assert.deepEqual(names.slice(-3), ['content_block_stop', 'message_delta', 'message_stop']);
      for (const [e, d] of frames) assert.equal(d.type, e);
      const delta = frames.at(-2)![1];
      assert.equal(delta.delta.stop_reason, 'end_turn');
      assert.ok(delta.x_nanogpt_pricing.cost > 0);
      await assertBilled(before, { usage: delta.usage, cost: delta.cost }, modelId);
    });

    it('round-trips a tool call (tool_use, then tool_result)', async () => {
      anthropic.script({ toolCalls: [{ id: 'toolu_abc', name: 'get_weather', input: { city: 'Paris' } }] });
      const before = await usd();
      const first: any = await client.messages.create({
        model,
        max_tokens: 256,
        tools: [weatherTool],
        messages: [{ role: 'user', content: 'Weather in Paris?' }],
      });
      assert.equal(first.stop_reason, 'tool_use');
      const use = first.content.find((b: any) => b.type === 'tool_use');
      assert.deepEqual(
        { id: use.id, name: use.name, input: use.input },
        { id: 'toolu_abc', name: 'get_weather', input: { city: 'Paris' } },
      );
      assert.equal(anthropic.last().body.tools[0].name, 'get_weather');
      await assertBilled(before, first, modelId);

      const second = await client.messages.create({
        model,
        max_tokens: 256,
        tools: [weatherTool],
        messages: [
          { role: 'user', content: 'Weather in Paris?' },
          { role: 'assistant', content: first.content },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: '{"temp_c":21}' }] },
        ],
      });
      assert.equal(second.stop_reason, 'end_turn');
      const sent = anthropic.last().body.messages;
      assert.equal(sent[1].content.find((b: any) => b.type === 'tool_use').id, 'toolu_abc');
      const result = sent[2].content.find((b: any) => b.type === 'tool_result');
      assert.equal(result.tool_use_id, 'toolu_abc');
      assert.match(JSON.stringify(result.content), /temp_c/);
    });

    it('streams a forced tool call as a tool_use block with input_json_delta', async () => {
      const stream = client.messages.stream({
        model,
        max_tokens: 256,
        tools: [weatherTool],
        tool_choice: { type: 'tool', name: 'get_weather' },
        messages: [{ role: 'user', content: 'Weather?' }],
      });
      const final: any = await stream.finalMessage();
      assert.equal(final.stop_reason, 'tool_use');
      const use = final.content.find((b: any) => b.type === 'tool_use');
      assert.equal(use.name, 'get_weather');
      assert.deepEqual(use.input, { city: 'example' });
      assert.deepEqual(anthropic.last().body.tool_choice, { type: 'tool', name: 'get_weather' });
    });

    it('passes thinking through to a reasoning model, and returns the thinking block', async () => {
      const before = await usd();
      const msg: any = await client.messages.create({
        model: 'claude-sonnet-4-20250514',
        max_tokens: 4096,
        thinking: { type: 'enabled', budget_tokens: 2048 },
        messages: [{ role: 'user', content: 'Think about it' }],
      });
      assert.deepEqual(anthropic.last().body.thinking, { type: 'enabled', budget_tokens: 2048 });
      assert.equal(anthropic.last().body.max_tokens, 4096);
      assert.equal(msg.content[0].type, 'thinking');
      assert.match(msg.content[0].thinking, /Think about it/);
      assert.equal(msg.content[1].type, 'text');
      await assertBilled(before, msg, 'anthropic/claude-sonnet-4');

      const stream = client.messages.stream({
        model: 'claude-sonnet-4-20250514',
        max_tokens: 4096,
        thinking: { type: 'enabled', budget_tokens: 1024 },
        messages: [{ role: 'user', content: 'Think again' }],
      });
      let thinking = '';
      stream.on('thinking', (t) => {
        thinking += t;
      });
      const final: any = await stream.finalMessage();
      assert.match(thinking, /Think again/);
      assert.deepEqual(
        final.content.map((b: any) => b.type),
        ['thinking', 'text'],
      );
      assert.equal(anthropic.last().body.thinking.budget_tokens, 1024);
    });

    it('counts tokens with the upstream counter, unbilled', async () => {
      anthropic.script({ endpoint: 'count_tokens', inputTokens: 42 });
      const before = await usd();
      const r = await client.messages.countTokens({
        model,
        system: 'Be brief.',
        messages: [{ role: 'user', content: 'Hello there' }],
      });
      assert.deepEqual(r, { input_tokens: 42 });
      const up = anthropic.last();
      assert.equal(up.path, '/v1/messages/count_tokens');
      assert.equal(up.body.model, 'claude-3-5-haiku-20241022');
      assert.equal(await usd(), before);
    });

    it('sends images and PDF documents as content blocks', async () => {
      await client.messages.create({
        model,
        max_tokens: 64,
        messages: [
          {
            role: 'user',
            content: [
              { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG_1PX } },
              {
                type: 'document',
                source: {
                  type: 'base64',
                  media_type: 'application/pdf',
                  data: Buffer.from('%PDF-1.4 test').toString('base64'),
                },
              },
              { type: 'text', text: 'What is this?' },
            ],
          },
        ],
      });
      const blocks = anthropic.last().body.messages[0].content;
      assert.deepEqual(
        blocks.map((b: any) => b.type),
        ['image', 'document', 'text'],
      );
      assert.equal(blocks[0].source.media_type, 'image/png');
    });
  });

  describe('(b) routed to an OpenAI-compatible upstream (translated)', () => {
    const model = 'gpt-4o-mini';
    const modelId = 'openai/gpt-4o-mini';

    it('creates a message, billed at its usage', async () => {
      const before = await usd();
      const msg: any = await client.messages.create({
        model,
        max_tokens: 128,
        system: [{ type: 'text', text: 'Be brief.' }],
        stop_sequences: ['END'],
        ...({ temperature: 0.5 } as object),
        messages: [{ role: 'user', content: 'Say hello' }],
      });
      assert.match(msg.content[0].text, /Echo: Say hello/);
      assert.equal(msg.stop_reason, 'end_turn');
      const up = openai.last().body;
      assert.deepEqual(up.messages[0], { role: 'system', content: 'Be brief.' });
      assert.equal(up.messages[1].role, 'user');
      assert.deepEqual(up.stop, ['END']);
      assert.equal(up.temperature, 0.5);
      await assertBilled(before, msg, modelId);
    });

    it('streams through messages.stream() and finalMessage()', async () => {
      const before = await usd();
      const stream = client.messages.stream({
        model,
        max_tokens: 128,
        messages: [{ role: 'user', content: 'Say hello' }],
      });
      const final: any = await stream.finalMessage();
      assert.match(final.content[0].text, /Echo: Say hello/);
      assert.ok(final.usage.output_tokens > 0);
      await assertBilled(before, final, modelId);
    });

    it('round-trips a tool call (tool_use, then tool_result as a tool message)', async () => {
      openai.script({ toolCalls: [{ id: 'call_7', name: 'get_weather', arguments: '{"city":"Paris"}' }] });
      const before = await usd();
      const first: any = await client.messages.create({
        model,
        max_tokens: 128,
        tools: [weatherTool],
        tool_choice: { type: 'any' },
        messages: [{ role: 'user', content: 'Weather in Paris?' }],
      });
      assert.equal(first.stop_reason, 'tool_use');
      const use = first.content.find((b: any) => b.type === 'tool_use');
      assert.deepEqual(
        { id: use.id, name: use.name, input: use.input },
        { id: 'call_7', name: 'get_weather', input: { city: 'Paris' } },
      );
      const up1 = openai.last().body;
      assert.equal(up1.tools[0].function.name, 'get_weather');
      assert.deepEqual(up1.tools[0].function.parameters, weatherTool.input_schema);
      assert.equal(up1.tool_choice, 'required');
      await assertBilled(before, first, modelId);

      const stream = client.messages.stream({
        model,
        max_tokens: 128,
        tools: [weatherTool],
        messages: [
          { role: 'user', content: 'Weather in Paris?' },
          { role: 'assistant', content: first.content },
          {
            role: 'user',
            content: [
              { type: 'tool_result', tool_use_id: 'call_7', content: [{ type: 'text', text: '{"temp_c":21}' }] },
              { type: 'text', text: 'And so?' },
            ],
          },
        ],
      });
      const final = await stream.finalMessage();
      assert.equal(final.stop_reason, 'end_turn');
      const sent = openai.last().body.messages;
      assert.equal(sent[1].role, 'assistant');
      assert.equal(sent[1].tool_calls[0].id, 'call_7');
      assert.equal(sent[2].role, 'tool');
      assert.equal(sent[2].tool_call_id, 'call_7');
      assert.match(JSON.stringify(sent[2].content), /temp_c/);
      assert.equal(sent[3].role, 'user');
    });

    it('streams tool calls as tool_use blocks', async () => {
      openai.script({ toolCalls: [{ id: 'call_8', name: 'get_weather', arguments: '{"city":"Rome"}' }] });
      const final: any = await client.messages
        .stream({
          model,
          max_tokens: 128,
          tools: [weatherTool],
          messages: [{ role: 'user', content: 'Weather in Rome?' }],
        })
        .finalMessage();
      assert.equal(final.stop_reason, 'tool_use');
      assert.deepEqual(
        final.content.find((b: any) => b.type === 'tool_use'),
        { type: 'tool_use', id: 'call_8', name: 'get_weather', input: { city: 'Rome' } },
      );
    });

    it('thinking: not sent to a non-reasoning model; upstream reasoning comes back as a thinking block', async () => {
      openai.script({ reasoning: 'Pondering.', text: 'Done.' });
      const msg: any = await client.messages.create({
        model,
        max_tokens: 4096,
        thinking: { type: 'enabled', budget_tokens: 1024 },
        messages: [{ role: 'user', content: 'Think' }],
      });
      const up = openai.last().body;
      assert.equal(up.reasoning_effort, undefined);
      assert.equal(up.reasoning, undefined);
      assert.deepEqual(
        msg.content.map((b: any) => b.type),
        ['thinking', 'text'],
      );
      assert.equal(msg.content[0].thinking, 'Pondering.');
    });

    it('counts tokens with the documented estimate, unbilled', async () => {
      const before = await usd();
      const body = {
        model,
        system: 'Be brief.',
        messages: [{ role: 'user' as const, content: 'Hello there, how are you today?' }],
      };
      const r = await client.messages.countTokens(body);
      // the estimate, by hand: 9 + 31 = 40 bytes of text, one token per 3 rounded up = 14, plus 4 for
      // each of the 2 messages = 22; the likely count is 3/4 of that, rounded up: 17
      assert.deepEqual(r, { input_tokens: 17 });
      assert.equal(await usd(), before);
    });
  });

  describe('(c) the built-in local model', () => {
    const model = 'local/stories260k';

    it('creates a message, billed at its usage; count_tokens agrees with it', async () => {
      const before = await usd();
      const messages = [{ role: 'user' as const, content: 'Once upon a time' }];
      const msg: any = await client.messages.create({
        model,
        max_tokens: 16,
        ...({ temperature: 0 } as object),
        messages,
      });
      assert.equal(msg.model, 'local/stories260k');
      assert.ok(msg.content[0].text.length > 0);
      assert.ok(['end_turn', 'max_tokens'].includes(msg.stop_reason));
      assert.ok(msg.usage.output_tokens > 0 && msg.usage.output_tokens <= 16);
      await assertBilled(before, msg, model);

      const afterCreate = await usd();
      const counted = await client.messages.countTokens({ model, messages });
      // the local engine reuses a cached prompt prefix from earlier requests: Anthropic's
      // input_tokens leave cache reads out, count_tokens counts the whole prompt
      assert.equal(
        counted.input_tokens,
        msg.usage.input_tokens +
          (msg.usage.cache_read_input_tokens ?? 0) +
          (msg.usage.cache_creation_input_tokens ?? 0),
      );
      assert.equal(await usd(), afterCreate);
    });

    it('streams through messages.stream()', async () => {
      const before = await usd();
      let text = '';
      const stream = client.messages.stream({
        model,
        max_tokens: 16,
        messages: [{ role: 'user', content: 'Once upon a time' }],
      });
      stream.on('text', (t) => {
        text += t;
      });
      const final: any = await stream.finalMessage();
      assert.ok(text.length > 0);
      assert.equal(final.content[0].text, text);
      await assertBilled(before, final, model);
    });
  });

  describe('bad input, in the message envelope, never charged', () => {
    const model = 'claude-3-5-haiku-20241022';
    let before: bigint;
    beforeEach(async () => {
      before = await usd();
    });
    afterEach(async () => assert.equal(await usd(), before));

    async function expect400(body: unknown, pattern: RegExp, status = 400) {
      const res = await raw('/api/v1/messages', body);
      const j = await res.json();
      assert.equal(res.status, status, JSON.stringify(j));
      assert.equal(j.type, 'error');
      assert.equal(j.error.type, status === 400 ? 'invalid_request_error' : j.error.type);
      assert.match(j.error.message, pattern);
      return j;
    }

    it('missing max_tokens', () => expect400({ model, messages: [{ role: 'user', content: 'hi' }] }, /max_tokens/));
    it('first message from the assistant', () =>
      expect400({ model, max_tokens: 10, messages: [{ role: 'assistant', content: 'hi' }] }, /first message/i));
    it('thinking budget below 1024', () =>
      expect400(
        {
          model,
          max_tokens: 4096,
          thinking: { type: 'enabled', budget_tokens: 500 },
          messages: [{ role: 'user', content: 'hi' }],
        },
        /at least 1024/,
      ));
    it('thinking budget not below max_tokens', () =>
      expect400(
        {
          model,
          max_tokens: 2000,
          thinking: { type: 'enabled', budget_tokens: 2000 },
          messages: [{ role: 'user', content: 'hi' }],
        },
        /less than max_tokens/,
      ));
    it('a video block', () =>
      expect400(
        {
          model,
          max_tokens: 10,
          messages: [{ role: 'user', content: [{ type: 'video', source: { type: 'url', url: 'https://x/v.mp4' } }] }],
        },
        /video/,
      ));
    it('an unsupported image media type', () =>
      expect400(
        {
          model,
          max_tokens: 10,
          messages: [
            {
              role: 'user',
              content: [{ type: 'image', source: { type: 'base64', media_type: 'image/bmp', data: 'AAAA' } }],
            },
          ],
        },
        /image\/bmp/,
      ));
    it('an image source whose type or media type is not text: named as such, not "[object Object]"', async () => {
      const image = (source: unknown) => ({
        model,
        max_tokens: 10,
        messages: [{ role: 'user', content: [{ type: 'image', source }] }],
      });
      const a = await expect400(
        image({ type: { url: 1 }, url: 'https://x.test/a.png' }),
        /source\.type must be a string, not an object/,
      );
      const b = await expect400(
        image({ type: 'base64', media_type: ['image/png'], data: 'AAAA' }),
        /media_type must be a string, not an array/,
      );
      for (const j of [a, b]) assert.doesNotMatch(j.error.message, /\[object /);
    });
    it('a tool_result for no tool_use', () =>
      expect400(
        {
          model,
          max_tokens: 10,
          messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'nope', content: 'x' }] }],
        },
        /nope/,
      ));
    it('an unknown model is a 404 not_found_error', async () => {
      const j = await expect400(
        { model: 'no-such-model', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] },
        /does not exist/,
        404,
      );
      assert.equal(j.error.type, 'not_found_error');
    });
    it('count_tokens validates too', async () => {
      const res = await raw('/api/v1/messages/count_tokens', {
        model,
        messages: [{ role: 'assistant', content: 'hi' }],
      });
      assert.equal(res.status, 400);
      assert.equal((await res.json()).type, 'error');
    });

    it('a bad key is a 401 authentication_error, also through the SDK', async () => {
      const res = await raw(
        '/api/v1/messages',
        { model, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] },
        { 'x-api-key': 'sk-nanogpt-00000000-0000-0000-0000-000000000000' },
      );
      const j = await res.json();
      assert.equal(res.status, 401);
      assert.deepEqual(Object.keys(j).sort(), ['error', 'type']);
      assert.equal(j.error.type, 'authentication_error');
      const bad = new Anthropic({ apiKey: 'wrong', baseURL: `${api.base}/api`, maxRetries: 0 });
      await assert.rejects(
        bad.messages.create({ model, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }),
        (e: any) => e instanceof Anthropic.AuthenticationError,
      );
      const none = await fetch(`${api.base}/v1/messages/count_tokens`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
      });
      assert.equal(none.status, 401);
      assert.equal((await none.json()).error.type, 'authentication_error');
    });

    it('an upstream failure before the stream is a JSON error; nothing charged', async () => {
      anthropic.script({ error: { status: 400, message: 'bad thing' } });
      const res = await raw('/api/v1/messages', {
        model,
        max_tokens: 10,
        stream: true,
        messages: [{ role: 'user', content: 'hi' }],
      });
      assert.equal(res.status, 400);
      const j = await res.json();
      assert.equal(j.type, 'error');
    });
  });

  describe('mid-stream failure', () => {
    // A broken or abandoned stream's usage is unknown: the bill is the README's estimate, worked
    // out by hand. The prompt "hi" is 2 bytes: one token per 3 bytes rounded up, plus 4 for the
    // message = 5 tokens; the output is one token per 4 bytes of the text produced, rounded up.
    const HI_PROMPT_TOKENS = 5;

    /** Posts a stream and leaves once `until` has reached the caller; the upstream has hung by then. */
    async function leaveAfter(body: unknown, until: string): Promise<void> {
      const abort = new AbortController();
      const res = await fetch(`${api.base}/api/v1/messages`, {
        method: 'POST',
        signal: abort.signal,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify(body),
      });
      await readUntil(res, until);
      abort.abort();
      await waitFor(
        async () => (await settledBalances(accountId)).USD.held === 0n,
        5_000,
        'the reservation to be released',
      );
    }

    it('ends with an `event: error` frame and bills exactly what was produced', async () => {
      // message_start, content_block_start, ping, "one ", "two ", then the error
      anthropic.script({ text: 'one two three four five six', streamError: { afterEvents: 5 } });
      const before = await usd();
      const res = await raw('/api/v1/messages', {
        model: 'claude-3-5-haiku-20241022',
        max_tokens: 100,
        stream: true,
        messages: [{ role: 'user', content: 'hi' }],
      });
      const frames = await readEvents(res);
      const [event, data] = frames.at(-1)!;
      assert.equal(event, 'error');
      assert.equal(data.type, 'error');
      assert.ok(data.error.type && data.error.message);
      assert.ok(!frames.some(([e]) => e === 'message_stop'));
      // "one two ": 8 bytes, 2 tokens
      const expected = textCost(CLAUDE_HAIKU, { input: HI_PROMPT_TOKENS, output: 2 });
      assert.equal(expected, 4200n + 8400n);
      assert.equal(before - (await usd()), expected, 'the produced text is billed, nothing more');
    });

    it('a caller who leaves midway is billed exactly what was produced (passed through), and the hold is released', async () => {
      anthropic.script({ text: 'one two three four five six', hang: { afterEvents: 5 } });
      const before = await usd();
      const body = {
        model: 'claude-3-5-haiku-20241022',
        max_tokens: 100,
        stream: true,
        messages: [{ role: 'user', content: 'hi' }],
      };
      await leaveAfter(body, '"two "');
      assert.equal(anthropic.last().aborted, true, 'the upstream call is aborted');
      // "one two ": 8 bytes, 2 tokens
      const expected = textCost(CLAUDE_HAIKU, { input: HI_PROMPT_TOKENS, output: 2 });
      assert.equal(before - (await usd()), expected, 'the produced text is billed, nothing more');
    });

    it('a caller who leaves a translated stream midway is billed exactly what was produced', async () => {
      // OpenAI's role chunk and four words, then the upstream stalls
      openai.script({ text: 'alpha beta gamma delta epsilon zeta', hangAfter: 5 });
      const before = await usd();
      const body = {
        model: 'openai/gpt-4o-mini',
        max_tokens: 100,
        stream: true,
        messages: [{ role: 'user', content: 'hi' }],
      };
      await leaveAfter(body, '" delta"');
      assert.equal(openai.last().aborted, true, 'the upstream call is aborted');
      // "alpha beta gamma delta": 22 bytes, 6 tokens
      const expected = textCost(GPT_4O_MINI, { input: HI_PROMPT_TOKENS, output: 6 });
      assert.equal(expected, 788n + 3780n);
      assert.equal(before - (await usd()), expected, 'the produced text is billed, nothing more');
    });
  });
});
