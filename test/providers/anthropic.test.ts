import assert from 'node:assert/strict';
import type { InferenceRequest, Message, StreamEvent } from '../../activities/core/types.js';
import { anthropicChat, countTokens } from '../../activities/providers/anthropic/index.js';
import { toMessagesRequest } from '../../activities/providers/anthropic/request.js';
import type { ProviderTarget } from '../../activities/providers/types.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../support/upstreams/anthropic.js';
import { RequestError } from '../../activities/core/errors.js';

const user = (text: string): Message => ({ role: 'user', content: [{ type: 'text', text }] });
const assistant = (text: string, toolCalls?: Message['toolCalls']): Message => ({
  role: 'assistant',
  content: text ? [{ type: 'text', text }] : [],
  toolCalls,
});
const system = (text: string): Message => ({ role: 'system', content: [{ type: 'text', text }] });
const toolResult = (toolCallId: string, text: string): Message => ({
  role: 'tool',
  toolCallId,
  content: [{ type: 'text', text }],
});

const request = (over: Partial<InferenceRequest> = {}): InferenceRequest => ({
  model: 'claude-sonnet-4-20250514',
  messages: [user('hello there')],
  maxTokens: 256,
  sampling: {},
  ...over,
});

async function collect(events: AsyncIterable<StreamEvent>): Promise<StreamEvent[]> {
  const out: StreamEvent[] = [];
  for await (const e of events) out.push(e);
  return out;
}

const textOf = (events: StreamEvent[], type: 'text' | 'reasoning' = 'text') =>
  events.map((e) => (e.type === type ? e.text : '')).join('');

async function rejectsUpstream(p: Promise<unknown>, check: (e: RequestError) => void): Promise<void> {
  await assert.rejects(p, (e: unknown) => {
    assert.ok(e instanceof RequestError, `expected RequestError, got ${String(e)}`);
    check(e);
    return true;
  });
}

describe('anthropic provider adapter', () => {
  let up: AnthropicUpstream;
  let target: ProviderTarget;
  const signal = () => new AbortController().signal;

  before(async () => {
    up = await startAnthropicUpstream();
    target = {
      providerId: 'anthropic',
      baseUrl: up.url,
      apiKey: up.apiKey,
      options: {},
      headers: { 'anthropic-beta': 'prompt-caching-2024-07-31' },
    };
  });
  after(() => up.close());
  afterEach(() => up.always(undefined));

  describe('complete', () => {
    it('sends a plain chat as a Messages request and maps the answer back', async () => {
      const result = await anthropicChat.complete(request({ user: 'user-42' }), target, signal());
      const rec = up.last();
      assert.equal(rec.path, '/v1/messages');
      assert.equal(rec.headers['x-api-key'], up.apiKey);
      assert.equal(rec.headers['anthropic-version'], '2023-06-01');
      assert.equal(rec.headers['anthropic-beta'], 'prompt-caching-2024-07-31');
      assert.match(String(rec.headers['content-type']), /application\/json/);
      assert.deepEqual(rec.body, {
        model: 'claude-sonnet-4-20250514',
        max_tokens: 256,
        messages: [{ role: 'user', content: [{ type: 'text', text: 'hello there' }] }],
        metadata: { user_id: 'user-42' },
      });
      assert.equal(result.content, 'Echo: hello there');
      assert.equal(result.finishReason, 'stop');
      assert.deepEqual(result.toolCalls, []);
      assert.equal(result.reasoning, undefined);
      assert.match(result.upstreamId ?? '', /^msg_/);
      assert.ok(result.usage && result.usage.promptTokens > 0 && result.usage.completionTokens > 0);
    });

    it('moves system turns to the top level and merges consecutive turns of one role', async () => {
      await anthropicChat.complete(
        request({
          messages: [
            system('Be brief.'),
            system('Answer in French.'),
            user('one'),
            user('two'),
            assistant('first answer'),
            assistant(''),
            user('three'),
            assistant('Prefilled '),
          ],
          sampling: { temperature: 1.6, topP: 0.9, topK: 40, stop: ['END', '  '] },
        }),
        target,
        signal(),
      );
      const body = up.last().body;
      assert.deepEqual(body.system, [
        { type: 'text', text: 'Be brief.' },
        { type: 'text', text: 'Answer in French.' },
      ]);
      assert.deepEqual(body.messages, [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'one' },
            { type: 'text', text: 'two' },
          ],
        },
        { role: 'assistant', content: [{ type: 'text', text: 'first answer' }] },
        { role: 'user', content: [{ type: 'text', text: 'three' }] },
        // a final assistant turn is a prefill; Anthropic rejects trailing whitespace in it
        { role: 'assistant', content: [{ type: 'text', text: 'Prefilled' }] },
      ]);
      assert.equal(body.temperature, 1, 'OpenAI-range temperature is clamped to Anthropic range');
      assert.equal(body.top_p, 0.9);
      assert.equal(body.top_k, 40);
      assert.deepEqual(body.stop_sequences, ['END']);

      await anthropicChat.complete(request({ messages: [system('Only one.'), user('hi')] }), target, signal());
      assert.equal(up.last().body.system, 'Only one.');

      // a raw prompt (legacy completions) becomes the user turn
      assert.deepEqual(toMessagesRequest(request({ messages: [], prompt: 'Once upon a time' })).body.messages, [
        { role: 'user', content: [{ type: 'text', text: 'Once upon a time' }] },
      ]);
    });

    it('translates images and documents into Anthropic blocks', async () => {
      const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).toString('base64');
      const jpeg = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 0x10]).toString('base64');
      const pdf = Buffer.from('%PDF-1.4 test').toString('base64');
      await anthropicChat.complete(
        request({
          messages: [
            {
              role: 'user',
              content: [
                { type: 'text', text: 'What are these?' },
                { type: 'image', data: png, mediaType: 'image/png' },
                { type: 'image', data: jpeg }, // media type read from the bytes
                { type: 'image', url: `data:image/webp;base64,${png}` },
                { type: 'image', url: 'data:image/svg+xml,%3Csvg%3E%3C/svg%3E' },
                { type: 'image', url: 'https://example.com/cat.png', detail: 'high' },
                { type: 'document', data: pdf, mediaType: 'application/pdf', title: 'Report' },
                { type: 'document', data: Buffer.from('plain words').toString('base64'), mediaType: 'text/plain' },
              ],
            },
          ],
        }),
        target,
        signal(),
      );
      assert.deepEqual(up.last().body.messages[0].content, [
        { type: 'text', text: 'What are these?' },
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: png } },
        { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: jpeg } },
        { type: 'image', source: { type: 'base64', media_type: 'image/webp', data: png } },
        {
          type: 'image',
          source: { type: 'base64', media_type: 'image/svg+xml', data: Buffer.from('<svg></svg>').toString('base64') },
        },
        { type: 'image', source: { type: 'url', url: 'https://example.com/cat.png' } },
        { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: pdf }, title: 'Report' },
        { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'plain words' } },
      ]);
    });

    it('round-trips tools: tool_use and tool_result blocks out, tool calls back', async () => {
      const weather = {
        name: 'get_weather',
        description: 'Weather for a city',
        parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      };
      up.script({
        text: 'Checking both.',
        toolCalls: [
          { id: 'toolu_a', name: 'get_weather', input: { city: 'Oslo' } },
          { id: 'toolu_b', name: 'get_time', input: {} },
        ],
      });
      const result = await anthropicChat.complete(
        request({
          messages: [
            user('Weather in Paris and Rome?'),
            assistant('Let me look.', [
              { id: 'toolu_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
              { id: 'toolu_2', name: 'get_weather', arguments: '{"city": Rome' }, // broken JSON from the model
              { id: 'toolu_3', name: 'get_time', arguments: '' },
            ]),
            toolResult('toolu_1', '18C, sunny'),
            toolResult('toolu_2', 'error: arguments were not JSON'),
            toolResult('toolu_3', ''), // a tool that returned nothing
            user('And Oslo?'),
          ],
          tools: [weather, { name: 'get_time' }],
          parallelToolCalls: false,
        }),
        target,
        signal(),
      );
      const body = up.last().body;
      assert.deepEqual(body.tools, [
        { name: 'get_weather', description: 'Weather for a city', input_schema: weather.parameters },
        { name: 'get_time', input_schema: { type: 'object', properties: {} } },
      ]);
      assert.deepEqual(body.tool_choice, { type: 'auto', disable_parallel_tool_use: true });
      assert.deepEqual(body.messages.slice(1), [
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Let me look.' },
            { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } },
            { type: 'tool_use', id: 'toolu_2', name: 'get_weather', input: {} },
            { type: 'tool_use', id: 'toolu_3', name: 'get_time', input: {} },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_1', content: '18C, sunny' },
            { type: 'tool_result', tool_use_id: 'toolu_2', content: 'error: arguments were not JSON' },
            { type: 'tool_result', tool_use_id: 'toolu_3' },
            { type: 'text', text: 'And Oslo?' },
          ],
        },
      ]);
      assert.equal(result.content, 'Checking both.');
      assert.equal(result.finishReason, 'tool_calls');
      assert.deepEqual(result.toolCalls, [
        { id: 'toolu_a', name: 'get_weather', arguments: '{"city":"Oslo"}' },
        { id: 'toolu_b', name: 'get_time', arguments: '{}' },
      ]);
    });

    it('maps tool_choice to Anthropic spelling', () => {
      const tools = [{ name: 'f' }];
      const choice = (toolChoice: InferenceRequest['toolChoice'], parallelToolCalls?: boolean) =>
        toMessagesRequest(request({ tools, toolChoice, parallelToolCalls })).body.tool_choice;
      assert.deepEqual(choice('auto'), { type: 'auto' });
      assert.deepEqual(choice('required'), { type: 'any' });
      assert.deepEqual(choice({ name: 'f' }, false), { type: 'tool', name: 'f', disable_parallel_tool_use: true });
      assert.deepEqual(choice('none', false), { type: 'none' });
      assert.equal(choice(undefined), undefined);
      assert.equal(
        toMessagesRequest(request({ toolChoice: 'auto' })).body.tool_choice,
        undefined,
        'no tools, no tool_choice',
      );
    });

    it('maps stop reasons', async () => {
      const cases: Array<[string, string]> = [
        ['end_turn', 'stop'],
        ['stop_sequence', 'stop'],
        ['pause_turn', 'stop'],
        ['max_tokens', 'length'],
        ['refusal', 'content_filter'],
      ];
      for (const [stopReason, expected] of cases) {
        up.script({ text: 'x', stopReason });
        const r = await anthropicChat.complete(request(), target, signal());
        assert.equal(r.finishReason, expected, stopReason);
      }
    });

    it('implements json_schema with a forced tool and returns its input as the content', async () => {
      const schema = {
        type: 'object',
        properties: { city: { type: 'string' }, population: { type: 'integer' } },
        required: ['city', 'population'],
      };
      const r = await anthropicChat.complete(
        request({ responseFormat: { type: 'json_schema', name: 'city_info', schema } }),
        target,
        signal(),
      );
      const body = up.last().body;
      assert.deepEqual(body.tools, [
        {
          name: 'json_response',
          description: 'Give your final answer by calling this tool with "city_info".',
          input_schema: schema,
        },
      ]);
      assert.deepEqual(body.tool_choice, { type: 'tool', name: 'json_response' });
      assert.deepEqual(JSON.parse(r.content), { city: 'example', population: 0 });
      assert.equal(r.finishReason, 'stop');
      assert.deepEqual(r.toolCalls, []);

      // a root that is not an object is wrapped as {value} for the tool and unwrapped on return
      const list = { type: 'array', items: { type: 'string' } };
      const r2 = await anthropicChat.complete(
        request({ responseFormat: { type: 'json_schema', name: 'names', schema: list } }),
        target,
        signal(),
      );
      assert.deepEqual(up.last().body.tools[0].input_schema, {
        type: 'object',
        properties: { value: list },
        required: ['value'],
      });
      assert.deepEqual(JSON.parse(r2.content), ['example']);

      // json_object: an open object schema
      up.script({ toolCalls: [{ name: 'json_response', input: { anything: [1, 2] } }] });
      const r3 = await anthropicChat.complete(request({ responseFormat: { type: 'json_object' } }), target, signal());
      assert.deepEqual(up.last().body.tools[0].input_schema, { type: 'object', additionalProperties: true });
      assert.equal(r3.content, '{"anything":[1,2]}');
      assert.equal(r3.finishReason, 'stop');
    });

    it("keeps the caller's tools callable next to the JSON tool", async () => {
      up.script({ toolCalls: [{ id: 'toolu_x', name: 'lookup', input: { q: 'a' } }] });
      const r = await anthropicChat.complete(
        request({ tools: [{ name: 'lookup' }], toolChoice: 'auto', responseFormat: { type: 'json_object' } }),
        target,
        signal(),
      );
      const body = up.last().body;
      assert.deepEqual(
        body.tools.map((t: { name: string }) => t.name),
        ['lookup', 'json_response'],
      );
      assert.deepEqual(body.tool_choice, { type: 'auto' });
      assert.equal(r.finishReason, 'tool_calls');
      assert.deepEqual(r.toolCalls, [{ id: 'toolu_x', name: 'lookup', arguments: '{"q":"a"}' }]);
    });

    it("turns reasoning options into thinking, within Anthropic's rules, and returns the thinking", async () => {
      const r = await anthropicChat.complete(
        request({
          maxTokens: 4000,
          reasoning: { effort: 'high' },
          sampling: { temperature: 0.5, topK: 5, topP: 0.5 },
        }),
        target,
        signal(),
      );
      const body = up.last().body;
      assert.deepEqual(body.thinking, { type: 'enabled', budget_tokens: 3200 }); // high = 80% of max_tokens
      assert.equal(body.temperature, undefined);
      assert.equal(body.top_k, undefined);
      assert.equal(body.top_p, undefined);
      assert.equal(r.reasoning, 'Thinking about "hello there".');
      assert.equal(r.content, 'Echo: hello there');

      const budget = (reasoning: InferenceRequest['reasoning'], maxTokens = 4000) =>
        toMessagesRequest(request({ reasoning, maxTokens })).body.thinking;
      assert.deepEqual(budget({ enabled: true }), { type: 'enabled', budget_tokens: 2000 });
      assert.deepEqual(budget({ effort: 'low' }), { type: 'enabled', budget_tokens: 1024 }); // 800 raised to the minimum
      assert.deepEqual(budget({ budgetTokens: 9999 }), { type: 'enabled', budget_tokens: 3999 }); // kept below max_tokens
      assert.equal(budget({ enabled: true }, 1024), undefined, 'no room for the minimum budget: thinking stays off');
      assert.equal(budget({ effort: 'none' }), undefined);
      assert.equal(budget({ enabled: true, effort: 'high' }, 4000) !== undefined, true);
      // temperature 1 is the one value Anthropic accepts with thinking
      assert.equal(
        toMessagesRequest(request({ maxTokens: 4000, reasoning: { enabled: true }, sampling: { temperature: 1 } })).body
          .temperature,
        1,
      );
      // a forced tool or a tool loop (no signed thinking block to send back) turns thinking off
      assert.equal(
        toMessagesRequest(
          request({ maxTokens: 4000, reasoning: { enabled: true }, tools: [{ name: 'f' }], toolChoice: 'required' }),
        ).body.thinking,
        undefined,
      );
      assert.equal(
        toMessagesRequest(
          request({
            maxTokens: 4000,
            reasoning: { enabled: true },
            messages: [user('q'), assistant('', [{ id: 't1', name: 'f', arguments: '{}' }]), toolResult('t1', 'ok')],
            tools: [{ name: 'f' }],
          }),
        ).body.thinking,
        undefined,
      );

      const hidden = await anthropicChat.complete(
        request({ maxTokens: 4000, reasoning: { enabled: true, exclude: true } }),
        target,
        signal(),
      );
      assert.ok(up.last().body.thinking, 'exclude still thinks');
      assert.equal(hidden.reasoning, undefined);
    });

    it('normalizes usage: prompt tokens include cache reads and writes', async () => {
      const usage = {
        input_tokens: 10,
        cache_read_input_tokens: 100,
        cache_creation_input_tokens: 50,
        output_tokens: 7,
      };
      up.script({ usage });
      const r = await anthropicChat.complete(request(), target, signal());
      assert.deepEqual(r.usage, {
        promptTokens: 160,
        cachedTokens: 100,
        cacheWriteTokens: 50,
        completionTokens: 7,
        reasoningTokens: 0,
      });

      up.script({ usage });
      const events = await collect(anthropicChat.stream(request(), target, signal()));
      assert.deepEqual(events.at(-1), {
        type: 'usage',
        usage: { promptTokens: 160, cachedTokens: 100, cacheWriteTokens: 50, completionTokens: 7, reasoningTokens: 0 },
      });

      // newer answers break thinking out of output_tokens
      up.script({ usage: { ...usage, output_tokens: 70, output_tokens_details: { thinking_tokens: 60 } } });
      assert.equal((await anthropicChat.complete(request(), target, signal())).usage?.reasoningTokens, 60);

      // no usage reported (a proxy may strip it): null, and no usage event
      up.script({ usage: null });
      assert.equal((await anthropicChat.complete(request(), target, signal())).usage, null);
      up.script({ usage: null });
      const bare = await collect(anthropicChat.stream(request(), target, signal()));
      assert.deepEqual(bare.at(-1), { type: 'finish', reason: 'stop' });
      assert.equal(bare.filter((e) => e.type === 'usage').length, 0);
    });

    it('a text answer that reaches max_tokens finishes with length', async () => {
      const r = await anthropicChat.complete(
        request({ messages: [user('a long question that will not fit')], maxTokens: 3 }),
        target,
        signal(),
      );
      assert.equal(r.finishReason, 'length');
      assert.equal(r.content.length, 12);
    });
  });

  describe('stream', () => {
    it('streams text, then finish and usage', async () => {
      const events = await collect(anthropicChat.stream(request(), target, signal()));
      assert.equal(up.last().body.stream, true);
      assert.equal(textOf(events), 'Echo: hello there');
      assert.ok(events.filter((e) => e.type === 'text').length > 1, 'arrives in several deltas');
      assert.deepEqual(events.at(-2), { type: 'finish', reason: 'stop' });
      const usage = events.at(-1);
      assert.ok(usage?.type === 'usage' && usage.usage.promptTokens > 0 && usage.usage.completionTokens > 0);
    });

    it('streams tool calls with their arguments assembled from input_json_delta', async () => {
      up.script({
        text: 'Calling.',
        toolCalls: [
          { id: 'toolu_s1', name: 'get_weather', input: { city: 'Paris', days: [1, 2, 3] } },
          { id: 'toolu_s2', name: 'get_time', input: { tz: 'Europe/Oslo' } },
        ],
      });
      const events = await collect(
        anthropicChat.stream(request({ tools: [{ name: 'get_weather' }, { name: 'get_time' }] }), target, signal()),
      );
      const calls = events.filter((e) => e.type === 'tool_call');
      // indexes count tool calls (0, 1), not content blocks (the text block is block 0)
      assert.deepEqual(
        calls.filter((c) => c.id),
        [
          { type: 'tool_call', index: 0, id: 'toolu_s1', name: 'get_weather', argumentsDelta: '' },
          { type: 'tool_call', index: 1, id: 'toolu_s2', name: 'get_time', argumentsDelta: '' },
        ],
      );
      const args = (i: number) =>
        calls
          .filter((c) => c.index === i)
          .map((c) => c.argumentsDelta)
          .join('');
      assert.ok(calls.filter((c) => c.index === 0).length > 2, 'arguments arrive in pieces');
      assert.deepEqual(JSON.parse(args(0)), { city: 'Paris', days: [1, 2, 3] });
      assert.deepEqual(JSON.parse(args(1)), { tz: 'Europe/Oslo' });
      assert.equal(textOf(events), 'Calling.');
      assert.deepEqual(
        events.find((e) => e.type === 'finish'),
        { type: 'finish', reason: 'tool_calls' },
      );
    });

    it('streams thinking as reasoning before the text (unless excluded)', async () => {
      up.script({ reasoning: 'Step one. Step two.', text: 'Done.' });
      const events = await collect(
        anthropicChat.stream(request({ maxTokens: 4000, reasoning: { enabled: true } }), target, signal()),
      );
      assert.equal(textOf(events, 'reasoning'), 'Step one. Step two.');
      assert.equal(textOf(events), 'Done.');
      assert.ok(events.findIndex((e) => e.type === 'reasoning') < events.findIndex((e) => e.type === 'text'));

      up.script({ reasoning: 'secret', text: 'Done.' });
      const hidden = await collect(
        anthropicChat.stream(
          request({ maxTokens: 4000, reasoning: { enabled: true, exclude: true } }),
          target,
          signal(),
        ),
      );
      assert.equal(hidden.filter((e) => e.type === 'reasoning').length, 0);
    });

    it('streams a JSON-mode answer as text with finish stop', async () => {
      const schema = { type: 'object', properties: { ok: { type: 'boolean' } } };
      const events = await collect(
        anthropicChat.stream(request({ responseFormat: { type: 'json_schema', name: 'r', schema } }), target, signal()),
      );
      assert.deepEqual(JSON.parse(textOf(events)), { ok: false });
      assert.equal(events.filter((e) => e.type === 'tool_call').length, 0);
      assert.deepEqual(
        events.find((e) => e.type === 'finish'),
        { type: 'finish', reason: 'stop' },
      );

      const wrapped = await collect(
        anthropicChat.stream(
          request({
            responseFormat: { type: 'json_schema', name: 'n', schema: { type: 'array', items: { type: 'integer' } } },
          }),
          target,
          signal(),
        ),
      );
      assert.deepEqual(JSON.parse(textOf(wrapped)), [0]);
    });

    it('reuses the keep-alive connection after a complete stream', async () => {
      await collect(anthropicChat.stream(request(), target, signal()));
      await new Promise((r) => setTimeout(r, 50)); // a fixed time on purpose: no abort may follow within it
      assert.equal(up.last().aborted, false);
      assert.equal(up.last().connectionOpen, true);
    });

    it('does not call the upstream before the first next()', async () => {
      const before = up.requests.length;
      const it = anthropicChat.stream(request(), target, signal())[Symbol.asyncIterator]();
      await new Promise((r) => setTimeout(r, 30)); // a fixed time on purpose: no request may start within it
      assert.equal(up.requests.length, before);
      await it.next();
      assert.equal(up.requests.length, before + 1);
      await it.return?.(undefined);
    });

    it('frees the upstream connection when the caller stops early', async () => {
      up.script({ text: 'many words to stream here one by one' });
      for await (const e of anthropicChat.stream(request(), target, signal())) {
        if (e.type === 'text') break;
      }
      await up.last().closed;
      assert.equal(up.last().aborted, true);
    });
  });

  describe('errors', () => {
    it("a wrong or missing key is a 401, not retryable, with Anthropic's message kept for the operator", async () => {
      await rejectsUpstream(anthropicChat.complete(request(), { ...target, apiKey: 'sk-ant-wrong' }, signal()), (e) => {
        assert.equal(e.status, 401);
        assert.equal(e.retryable, false);
        assert.match(e.opts.detail ?? '', /invalid x-api-key/);
        // the caller reads the provider and the kind of failure, never the upstream's words
        assert.equal(e.message, "anthropic refused the gateway's credentials (an authentication error, HTTP 401).");
        assert.equal(JSON.parse(e.opts.upstreamBody ?? '').error.type, 'authentication_error');
      });
      await rejectsUpstream(
        collect(anthropicChat.stream(request(), { ...target, apiKey: undefined }, signal())),
        (e) => {
          assert.equal(e.status, 401);
          assert.match(e.opts.detail ?? '', /x-api-key header is required/);
          assert.doesNotMatch(e.message, /x-api-key/);
        },
      );
    });

    for (const [status, type, message] of [
      [429, 'rate_limit_error', 'This request would exceed the rate limit'],
      [500, 'api_error', 'Internal server error'],
      [529, 'overloaded_error', 'Overloaded'],
    ] as const) {
      it(`${status} ${type} is retryable and keeps Anthropic's message for the operator`, async () => {
        up.script({ error: { status, retryAfter: status === 429 ? 7 : undefined } });
        await rejectsUpstream(anthropicChat.complete(request(), target, signal()), (e) => {
          assert.equal(e.status, status);
          assert.equal(e.retryable, true);
          assert.ok(e.opts.detail?.includes(message), e.opts.detail);
          assert.ok(!e.message.includes(message), e.message);
          assert.equal(JSON.parse(e.opts.upstreamBody ?? '').error.type, type);
          if (status === 429) assert.equal(e.opts.retryAfterSeconds, 7);
        });
        // streaming: thrown from the first next(), before any event, so the router can fall back
        up.script({ error: { status } });
        const it = anthropicChat.stream(request(), target, signal())[Symbol.asyncIterator]();
        await rejectsUpstream(it.next(), (e) => {
          assert.equal(e.status, status);
          assert.equal(e.retryable, true);
        });
      });
    }

    it('a 400 from Anthropic is not retryable', async () => {
      await rejectsUpstream(
        anthropicChat.complete(request({ messages: [user('x')], model: '' }), target, signal()),
        (e) => {
          assert.equal(e.status, 400);
          assert.equal(e.retryable, false);
          assert.match(e.message, /model: Field required/);
        },
      );
    });

    it('an overloaded `event: error` after some text is thrown from a later next()', async () => {
      // message_start, block start, ping, 'one ', 'two ': then the error frame
      up.script({ text: 'one two three four', streamError: { afterEvents: 5, type: 'overloaded_error' } });
      const it = anthropicChat.stream(request(), target, signal())[Symbol.asyncIterator]();
      const first = await it.next();
      assert.deepEqual(first.value, { type: 'text', text: 'one ' });
      const second = await it.next();
      assert.deepEqual(second.value, { type: 'text', text: 'two ' });
      await rejectsUpstream(it.next(), (e) => {
        assert.equal(e.status, 529);
        assert.equal(e.retryable, true);
        assert.match(e.opts.detail ?? '', /Overloaded/);
      });
    });

    it('an `event: error` before any event is thrown from the first next()', async () => {
      up.script({ streamError: { afterEvents: 1, type: 'api_error', message: 'Internal server error' } });
      const it = anthropicChat.stream(request(), target, signal())[Symbol.asyncIterator]();
      await rejectsUpstream(it.next(), (e) => {
        assert.equal(e.status, 500);
        assert.equal(e.retryable, true);
      });
    });

    for (const mode of ['end', 'destroy'] as const) {
      it(`a stream cut before message_stop (${mode}) is upstream_stream_cut`, async () => {
        up.script({ text: 'one two three', cut: { afterEvents: 4, mode } });
        const events: StreamEvent[] = [];
        await rejectsUpstream(
          (async () => {
            for await (const e of anthropicChat.stream(request(), target, signal())) events.push(e);
          })(),
          (e) => {
            assert.equal(e.code, 'upstream_stream_cut');
            assert.equal(e.retryable, true);
          },
        );
        assert.ok(
          events.length > 0 && events.every((e) => e.type === 'text'),
          'the text before the cut arrived, no finish',
        );
      });
    }

    it('a stream cut after message_delta (finish known, no message_stop) is still a cut', async () => {
      up.script({ text: 'hi', cut: { afterEvents: 6 } }); // start, block start, ping, delta, block stop, message_delta
      await rejectsUpstream(collect(anthropicChat.stream(request(), target, signal())), (e) =>
        assert.equal(e.code, 'upstream_stream_cut'),
      );
    });

    it('an abort stops a hanging upstream promptly (before headers and mid-stream)', async () => {
      up.script({ hang: true });
      const ac = new AbortController();
      const started = Date.now();
      setTimeout(() => ac.abort(), 50);
      await rejectsUpstream(anthropicChat.complete(request(), target, ac.signal), (e) => {
        assert.equal(e.code, 'aborted');
        assert.equal(e.retryable, false);
      });
      assert.ok(Date.now() - started < 1000, `took ${Date.now() - started} ms`);
      await up.last().closed;
      assert.equal(up.last().aborted, true);

      up.script({ text: 'a b c', hang: { afterEvents: 4 } }); // start, block start, ping, 'a '
      const ac2 = new AbortController();
      const it = anthropicChat.stream(request(), target, ac2.signal)[Symbol.asyncIterator]();
      assert.deepEqual((await it.next()).value, { type: 'text', text: 'a ' });
      setTimeout(() => ac2.abort(new Error('client went away')), 50); // a custom reason is still an abort
      const t = Date.now();
      await rejectsUpstream(it.next(), (e) => assert.equal(e.code, 'aborted'));
      assert.ok(Date.now() - t < 1000);
      await up.last().closed;
      assert.equal(up.last().aborted, true);
    });

    it('a deadline (AbortSignal.timeout) is a retryable upstream timeout', async () => {
      up.script({ hang: true });
      await rejectsUpstream(anthropicChat.complete(request(), target, AbortSignal.timeout(50)), (e) => {
        assert.equal(e.code, 'upstream_timeout');
        assert.equal(e.status, 504);
        assert.equal(e.retryable, true);
      });
      up.script({ text: 'a b c', hang: { afterEvents: 4 } });
      const it = anthropicChat.stream(request(), target, AbortSignal.timeout(300))[Symbol.asyncIterator]();
      await it.next();
      await rejectsUpstream(it.next(), (e) => assert.equal(e.code, 'upstream_timeout'));
    });

    it('an abort while waiting for a delayed stream is thrown from the first next()', async () => {
      up.script({ delayMs: 5000 });
      const ac = new AbortController();
      setTimeout(() => ac.abort(), 50);
      const it = anthropicChat.stream(request(), target, ac.signal)[Symbol.asyncIterator]();
      await rejectsUpstream(it.next(), (e) => assert.equal(e.code, 'aborted'));
    });

    it('an unreachable upstream is retryable', async () => {
      await rejectsUpstream(
        anthropicChat.complete(request(), { ...target, baseUrl: 'http://127.0.0.1:1' }, signal()),
        (e) => {
          assert.equal(e.retryable, true);
          assert.equal(e.code, 'upstream_unreachable');
        },
      );
    });
  });

  describe('countTokens', () => {
    it('asks /v1/messages/count_tokens with only the prompt-shaping fields', async () => {
      up.script({ endpoint: 'count_tokens', inputTokens: 1234 });
      const n = await countTokens(
        request({
          messages: [system('Be brief.'), user('count me')],
          tools: [{ name: 'f' }],
          sampling: { temperature: 0.2 },
          maxTokens: 100,
        }),
        target,
        signal(),
      );
      assert.equal(n, 1234);
      const rec = up.last();
      assert.equal(rec.path, '/v1/messages/count_tokens');
      assert.equal(rec.headers['anthropic-version'], '2023-06-01');
      assert.deepEqual(Object.keys(rec.body).sort(), ['messages', 'model', 'system', 'tools']);

      // unscripted: the loopback's own estimate, same as it reports for the message
      const counted = await countTokens(request(), target, signal());
      const answered = await anthropicChat.complete(request(), target, signal());
      assert.equal(counted, answered.usage?.promptTokens);
    });

    it('maps count_tokens failures like any other', async () => {
      up.script({ endpoint: 'count_tokens', error: { status: 529 } });
      await rejectsUpstream(countTokens(request(), target, signal()), (e) => {
        assert.equal(e.status, 529);
        assert.equal(e.retryable, true);
      });
    });
  });
});
