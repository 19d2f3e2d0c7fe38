import assert from 'node:assert/strict';
import OpenAI from 'openai';
import type { InferenceRequest, Message, StreamEvent } from '../../activities/core/types.js';
import { openaiChat } from '../../activities/providers/openai/index.js';
import { quirksFor } from '../../activities/providers/openai/quirks.js';
import { StreamDecoder } from '../../activities/providers/openai/response.js';
import type { ProviderTarget } from '../../activities/providers/types.js';
import { freePort } from '../support/ports.js';
import { startOpenAIUpstream } from '../support/upstreams/openai.js';
import type { OpenAIUpstream } from '../support/upstreams/openai.js';
import { RequestError } from '../../activities/core/errors.js';
import { waitFor } from '../support/wait.js';

const user = (text: string): Message => ({ role: 'user', content: [{ type: 'text', text }] });
const request = (over: Partial<InferenceRequest> = {}): InferenceRequest => ({
  model: 'gpt-4o-mini',
  messages: [user('hello there')],
  maxTokens: 64,
  sampling: {},
  ...over,
});
const live = () => new AbortController().signal;

async function collect(it: AsyncIterable<StreamEvent>): Promise<StreamEvent[]> {
  const out: StreamEvent[] = [];
  for await (const e of it) out.push(e);
  return out;
}

async function rejection(p: Promise<unknown>): Promise<RequestError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof RequestError, `expected an RequestError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected a rejection');
}

const weatherTool = {
  name: 'get_weather',
  description: 'Weather for a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

describe('OpenAI-compatible adapter', () => {
  // `up` answers like api.openai.com (`strict`: any field it does not know is a 400);
  // `selfHosted` like a keyless vLLM, which takes anything.
  let up: OpenAIUpstream;
  let selfHosted: OpenAIUpstream;
  let openai: ProviderTarget;
  let vllm: ProviderTarget;

  before(async () => {
    up = await startOpenAIUpstream({ strict: true });
    selfHosted = await startOpenAIUpstream({ apiKey: null });
  });
  after(async () => {
    await up.close();
    await selfHosted.close();
  });
  beforeEach(() => {
    up.reset();
    selfHosted.reset();
    openai = { providerId: 'openai', baseUrl: up.url, apiKey: up.apiKey, options: {} };
    vllm = { providerId: 'vllm', baseUrl: selfHosted.url, options: {} };
  });

  it('completes a chat: content, finish, usage, id, and the request as OpenAI expects it', async () => {
    const r = await openaiChat.complete(
      request({ user: 'end-user-7', sampling: { temperature: 0.2, seed: 3, stop: ['\n\n'] } }),
      openai,
      live(),
    );
    assert.equal(r.content, 'Echo: hello there');
    assert.equal(r.finishReason, 'stop');
    assert.deepEqual(r.toolCalls, []);
    assert.deepEqual(r.usage, {
      promptTokens: 2,
      cachedTokens: 0,
      cacheWriteTokens: 0,
      completionTokens: 3,
      reasoningTokens: 0,
    });
    assert.match(r.upstreamId!, /^chatcmpl-/);
    const got = up.last();
    assert.equal(got.path, '/v1/chat/completions');
    assert.equal(got.headers.authorization, `Bearer ${up.apiKey}`);
    assert.deepEqual(got.body, {
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'hello there' }],
      max_completion_tokens: 64,
      temperature: 0.2,
      seed: 3,
      stop: ['\n\n'],
      user: 'end-user-7',
    });
  });

  it('translates system turns, names, images (data: and http) and documents', async () => {
    await openaiChat.complete(
      request({
        messages: [
          {
            role: 'system',
            content: [
              { type: 'text', text: 'Be brief.' },
              { type: 'text', text: 'Be kind.' },
            ],
          },
          {
            role: 'user',
            name: 'ada',
            content: [
              { type: 'text', text: 'What is in these?' },
              { type: 'image', data: 'iVBORw0KGgo=', mediaType: 'image/png', detail: 'low' },
              { type: 'image', url: 'https://example.com/cat.jpg' },
              {
                type: 'document',
                data: Buffer.from('plain notes').toString('base64'),
                mediaType: 'text/plain',
                title: 'notes.txt',
              },
              { type: 'document', data: 'JVBERi0=', mediaType: 'application/pdf' },
            ],
          },
        ],
      }),
      openai,
      live(),
    );
    assert.deepEqual(up.last().body.messages, [
      { role: 'system', content: 'Be brief.\nBe kind.' },
      {
        role: 'user',
        name: 'ada',
        content: [
          { type: 'text', text: 'What is in these?' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'low' } },
          { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg' } },
          { type: 'text', text: 'notes.txt\n\nplain notes' },
          { type: 'file', file: { filename: 'document.pdf', file_data: 'data:application/pdf;base64,JVBERi0=' } },
        ],
      },
    ]);
  });

  it('round-trips a tool call: tools and choice out, the call back, then the call and its result as history', async () => {
    up.script({ toolCalls: [{ id: 'call_abc', name: 'get_weather', arguments: '{"city":"Paris"}' }] });
    const first = await openaiChat.complete(
      request({
        messages: [user('Weather in Paris?')],
        tools: [weatherTool],
        toolChoice: { name: 'get_weather' },
        parallelToolCalls: false,
      }),
      openai,
      live(),
    );
    assert.equal(first.finishReason, 'tool_calls');
    assert.deepEqual(first.toolCalls, [{ id: 'call_abc', name: 'get_weather', arguments: '{"city":"Paris"}' }]);
    assert.equal(first.content, '');
    const sent = up.last().body;
    assert.deepEqual(sent.tools, [{ type: 'function', function: weatherTool }]);
    assert.deepEqual(sent.tool_choice, { type: 'function', function: { name: 'get_weather' } });
    assert.equal(sent.parallel_tool_calls, false);

    const second = await openaiChat.complete(
      request({
        messages: [
          user('Weather in Paris?'),
          { role: 'assistant', content: [], toolCalls: first.toolCalls },
          { role: 'tool', toolCallId: 'call_abc', content: [{ type: 'text', text: '{"temp_c":21}' }] },
        ],
        tools: [weatherTool],
        toolChoice: 'auto',
      }),
      openai,
      live(),
    );
    assert.equal(second.finishReason, 'stop');
    const history = up.last().body;
    assert.equal(history.tool_choice, 'auto');
    assert.deepEqual(history.messages.slice(1), [
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_abc', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_abc', content: '{"temp_c":21}' },
    ]);
  });

  it('leaves tool_choice out when there are no tools (OpenAI answers 400 to it)', async () => {
    await openaiChat.complete(request({ toolChoice: 'none', parallelToolCalls: true }), openai, live());
    assert.equal(up.last().body.tool_choice, undefined);
    assert.equal(up.last().body.parallel_tool_calls, undefined);
  });

  it('passes json_schema and json_object output formats through', async () => {
    const schema = {
      type: 'object',
      properties: { echo: { type: 'string' } },
      required: ['echo'],
      additionalProperties: false,
    };
    const r = await openaiChat.complete(
      request({ responseFormat: { type: 'json_schema', name: 'echo', schema, strict: true } }),
      openai,
      live(),
    );
    assert.deepEqual(up.last().body.response_format, {
      type: 'json_schema',
      json_schema: { name: 'echo', schema, strict: true },
    });
    assert.deepEqual(JSON.parse(r.content), { echo: 'hello there' });
    await openaiChat.complete(request({ responseFormat: { type: 'json_object' } }), openai, live());
    assert.deepEqual(up.last().body.response_format, { type: 'json_object' });
  });

  it('streams text, then finish and usage, asking for the usage chunk', async () => {
    const events = await collect(openaiChat.stream(request(), openai, live()));
    assert.deepEqual(events, [
      { type: 'text', text: 'Echo:' },
      { type: 'text', text: ' hello' },
      { type: 'text', text: ' there' },
      { type: 'finish', reason: 'stop' },
      {
        type: 'usage',
        usage: { promptTokens: 2, cachedTokens: 0, cacheWriteTokens: 0, completionTokens: 3, reasoningTokens: 0 },
      },
    ]);
    assert.equal(up.last().body.stream, true);
    assert.deepEqual(up.last().body.stream_options, { include_usage: true });
    assert.equal(up.last().headers.accept, 'text/event-stream');
  });

  it('streams tool-call deltas: id and name first, then argument pieces by index', async () => {
    up.script({
      toolCalls: [
        { id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
        { id: 'call_2', name: 'get_weather', arguments: '{"city":"Rome"}' },
      ],
    });
    const events = await collect(openaiChat.stream(request({ tools: [weatherTool] }), openai, live()));
    const calls = events.filter((e): e is Extract<StreamEvent, { type: 'tool_call' }> => e.type === 'tool_call');
    assert.deepEqual(calls[0], { type: 'tool_call', index: 0, id: 'call_1', name: 'get_weather', argumentsDelta: '' });
    assert.ok(calls.length > 4, 'arguments should arrive in several pieces');
    for (const later of calls.filter((c, i) => i > 0 && c.index === calls[i - 1].index)) {
      assert.equal(later.id, undefined);
      assert.equal(later.name, undefined);
    }
    const assembled = new Map<number, { id?: string; name?: string; args: string }>();
    for (const c of calls) {
      const a = assembled.get(c.index) ?? { args: '' };
      assembled.set(c.index, { id: a.id ?? c.id, name: a.name ?? c.name, args: a.args + c.argumentsDelta });
    }
    assert.deepEqual(
      [...assembled.values()],
      [
        { id: 'call_1', name: 'get_weather', args: '{"city":"Paris"}' },
        { id: 'call_2', name: 'get_weather', args: '{"city":"Rome"}' },
      ],
    );
    assert.deepEqual(events.at(-2), { type: 'finish', reason: 'tool_calls' });
  });

  it('reads reasoning under either name, and drops it when asked to exclude it', async () => {
    selfHosted.script(
      { reasoning: 'Think first.', reasoningField: 'reasoning_content' },
      { reasoning: 'Think again.', reasoningField: 'reasoning' },
    );
    const a = await openaiChat.complete(request(), vllm, live());
    assert.equal(a.reasoning, 'Think first.');
    const events = await collect(openaiChat.stream(request(), vllm, live()));
    assert.equal(
      events
        .filter((e) => e.type === 'reasoning')
        .map((e) => (e as { text: string }).text)
        .join(''),
      'Think again.',
    );
    assert.equal(
      events.findIndex((e) => e.type === 'reasoning'),
      0,
      'reasoning comes before the answer',
    );

    selfHosted.script({ reasoning: 'Secret.' }, { reasoning: 'Secret.' });
    const hidden = await openaiChat.complete(request({ reasoning: { exclude: true } }), vllm, live());
    assert.equal(hidden.reasoning, undefined);
    const hiddenEvents = await collect(openaiChat.stream(request({ reasoning: { exclude: true } }), vllm, live()));
    assert.ok(!hiddenEvents.some((e) => e.type === 'reasoning'));
  });

  it('normalizes usage with cached and reasoning tokens, and reports none as null', async () => {
    up.script(
      {
        usage: {
          prompt_tokens: 1200,
          completion_tokens: 300,
          total_tokens: 1500,
          prompt_tokens_details: { cached_tokens: 1024 },
          completion_tokens_details: { reasoning_tokens: 256 },
        },
      },
      { usage: null },
      { usage: null },
    );
    assert.deepEqual((await openaiChat.complete(request(), openai, live())).usage, {
      promptTokens: 1200,
      cachedTokens: 1024,
      cacheWriteTokens: 0,
      completionTokens: 300,
      reasoningTokens: 256,
    });
    assert.equal((await openaiChat.complete(request(), openai, live())).usage, null);
    const events = await collect(openaiChat.stream(request(), openai, live()));
    assert.ok(!events.some((e) => e.type === 'usage'));
    assert.deepEqual(events.at(-1), { type: 'finish', reason: 'stop' });
  });

  it('maps vendor finish reasons and the output cap', async () => {
    selfHosted.script(
      { finishReason: 'eos' },
      { finishReason: 'function_call', toolCalls: [{ name: 'f', arguments: '{}' }] },
      { finishReason: 'stop', toolCalls: [{ name: 'f', arguments: '{}' }] },
    );
    assert.equal((await openaiChat.complete(request(), vllm, live())).finishReason, 'stop');
    assert.equal(
      (await openaiChat.complete(request({ tools: [weatherTool] }), vllm, live())).finishReason,
      'tool_calls',
    );
    assert.equal(
      (await openaiChat.complete(request({ tools: [weatherTool] }), vllm, live())).finishReason,
      'tool_calls',
    );
    const capped = await openaiChat.complete(request({ maxTokens: 2 }), vllm, live());
    assert.equal(capped.finishReason, 'length');
    assert.equal(capped.content, 'Echo: hello');
  });

  it('returns chat logprobs', async () => {
    const r = await openaiChat.complete(request({ sampling: { logprobs: true, topLogprobs: 2 } }), openai, live());
    assert.equal(up.last().body.logprobs, true);
    assert.equal(up.last().body.top_logprobs, 2);
    assert.equal(r.logprobs?.length, 3);
    assert.equal(r.logprobs![1].token, ' hello');
    assert.equal(r.logprobs![1].logprob, -0.2);
    assert.deepEqual(r.logprobs![1].bytes, [...Buffer.from(' hello')]);
    assert.deepEqual(
      r.logprobs![1].topLogprobs!.map((t) => t.token),
      [' hello', ' hello~1'],
    );
  });

  describe('vendor quirks', () => {
    const sampled = request({
      sampling: { temperature: 0.7, topK: 40, minP: 0.05, repetitionPenalty: 1.1 },
      reasoning: { effort: 'high' },
    });

    it('OpenAI gets max_completion_tokens and no extended sampling; vLLM gets max_tokens and top_k', async () => {
      await openaiChat.complete(sampled, openai, live()); // strict: an unknown field would be a 400
      const o = up.last().body;
      assert.equal(o.max_completion_tokens, 64);
      assert.equal(o.max_tokens, undefined);
      assert.equal(o.top_k, undefined);
      assert.equal(o.min_p, undefined);
      assert.equal(o.repetition_penalty, undefined);
      assert.equal(o.reasoning_effort, 'high');

      await openaiChat.complete(sampled, vllm, live());
      const v = selfHosted.last().body;
      assert.equal(v.max_tokens, 64);
      assert.equal(v.max_completion_tokens, undefined);
      assert.equal(v.top_k, 40);
      assert.equal(v.min_p, 0.05);
      assert.equal(v.repetition_penalty, 1.1);
      assert.equal(selfHosted.last().headers.authorization, undefined, 'a keyless server gets no Authorization');
    });

    it('OpenRouter gets its reasoning object and attribution headers; Groq loses what it rejects', async () => {
      const router = await startOpenAIUpstream({ basePath: '/api/v1' });
      try {
        const target = {
          providerId: 'openrouter',
          baseUrl: router.url,
          apiKey: router.apiKey,
          options: { http_referer: 'https://switchyard.example', x_title: 'Switchyard' },
        };
        await openaiChat.complete(
          request({ reasoning: { effort: 'max', exclude: true }, sampling: { topK: 20 } }),
          target,
          live(),
        );
        const got = router.last();
        assert.equal(got.path, '/api/v1/chat/completions');
        assert.deepEqual(got.body.reasoning, { effort: 'xhigh', exclude: true });
        assert.equal(got.body.reasoning_effort, undefined);
        assert.equal(got.body.top_k, 20);
        assert.equal(got.headers['http-referer'], 'https://switchyard.example');
        assert.equal(got.headers['x-title'], 'Switchyard');
        await openaiChat.complete(request({ reasoning: { enabled: true, budgetTokens: 2000 } }), target, live());
        assert.deepEqual(router.last().body.reasoning, { max_tokens: 2000 });

        const groq = { providerId: 'groq', baseUrl: router.url, apiKey: router.apiKey, options: {} };
        await openaiChat.complete(
          request({
            messages: [{ ...user('hi'), name: 'ada' }],
            sampling: { logprobs: true, topLogprobs: 3, logitBias: { '50256': -100 }, topK: 5 },
          }),
          groq,
          live(),
        );
        const g = router.last().body;
        assert.equal(g.max_tokens, 64);
        for (const gone of ['logprobs', 'top_logprobs', 'logit_bias', 'top_k']) assert.equal(g[gone], undefined, gone);
        assert.equal(g.messages[0].name, undefined);
      } finally {
        await router.close();
      }
    });

    it('takes catalog options over the vendor defaults', async () => {
      const target = {
        ...openai,
        options: { stream_usage: false, drop_params: ['temperature'], max_tokens_field: 'max_tokens' },
      };
      const events = await collect(openaiChat.stream(request({ sampling: { temperature: 1 } }), target, live()));
      const body = up.last().body;
      assert.equal(body.stream_options, undefined);
      assert.equal(body.temperature, undefined);
      assert.equal(body.max_tokens, 64);
      assert.ok(!events.some((e) => e.type === 'usage'), 'no usage chunk was asked for');
      assert.throws(
        () => quirksFor('openai', { extended_sampling: 'yes' }),
        (e: RequestError) => /extended_sampling.*true or false/.test(e.opts.detail ?? ''),
      );
    });
  });

  describe('errors', () => {
    it('401 and 400 are not retryable; only the 400 (the request itself) shows the upstream message', async () => {
      const e401 = await rejection(openaiChat.complete(request(), { ...openai, apiKey: 'sk-wrong-key' }, live()));
      assert.equal(e401.status, 401);
      assert.equal(e401.retryable, false);
      assert.match(e401.opts.detail ?? '', /Incorrect API key provided: \[redacted\]/);
      assert.doesNotMatch(
        `${e401.opts.detail} ${e401.opts.upstreamBody}`,
        /sk-wrong/,
        'no credentials, even in the log',
      );
      assert.equal(e401.message, "openai refused the gateway's credentials (an authentication error, HTTP 401).");
      up.script({ status: 400, error: { message: "Invalid value for 'messages[0].role'", param: 'messages' } });
      const e400 = await rejection(openaiChat.complete(request(), openai, live()));
      assert.equal(e400.status, 400);
      assert.equal(e400.retryable, false);
      assert.equal(e400.message, "openai refused the request (HTTP 400): Invalid value for 'messages[0].role'");
      // strict OpenAI rejects what it does not know: the adapter's own mistakes would look like this
      const e400b = await rejection(
        openaiChat.complete(
          request({ sampling: { topK: 3 } }),
          { ...openai, options: { extended_sampling: true } },
          live(),
        ),
      );
      assert.match(e400b.message, /Unrecognized request argument supplied: top_k/);
    });

    it('429 (with Retry-After), 500 and 503 are retryable', async () => {
      up.script({ status: 429, headers: { 'retry-after': '7' } }, { status: 500 }, { status: 503 });
      const e429 = await rejection(openaiChat.complete(request(), openai, live()));
      assert.equal(e429.status, 429);
      assert.equal(e429.retryable, true);
      assert.equal(e429.opts.retryAfterSeconds, 7);
      assert.match(e429.opts.detail ?? '', /Rate limit reached/);
      const e500 = await rejection(openaiChat.complete(request(), openai, live()));
      assert.deepEqual([e500.status, e500.retryable], [500, true]);
      assert.match(e500.opts.detail ?? '', /had an error while processing/);
      assert.equal(e500.message, 'openai failed (a server error, HTTP 500).');
      const e503 = await rejection(openaiChat.complete(request(), openai, live()));
      assert.deepEqual([e503.status, e503.retryable], [503, true]);
      assert.match(e503.opts.detail ?? '', /overloaded/);
    });

    it('a refused connection is a retryable 502', async () => {
      const port = await freePort();
      const e = await rejection(
        openaiChat.complete(request(), { ...openai, baseUrl: `http://127.0.0.1:${port}/v1` }, live()),
      );
      assert.deepEqual([e.status, e.retryable, e.code], [502, true, 'upstream_unreachable']);
    });

    it('a slow upstream is given up on at the deadline, and a hanging one when the caller aborts', async () => {
      up.script({ delayMs: 5_000 });
      let t0 = Date.now();
      const slow = await rejection(openaiChat.complete(request(), openai, AbortSignal.timeout(150)));
      assert.ok(Date.now() - t0 < 1_000, `took ${Date.now() - t0} ms`);
      assert.deepEqual([slow.status, slow.retryable, slow.code], [504, true, 'upstream_timeout']);

      up.script({ hang: true });
      const ac = new AbortController();
      t0 = Date.now();
      setTimeout(() => ac.abort(), 100);
      const it = openaiChat.stream(request(), openai, ac.signal)[Symbol.asyncIterator]();
      const hung = await rejection(it.next());
      assert.ok(Date.now() - t0 < 1_000, `took ${Date.now() - t0} ms`);
      assert.deepEqual([hung.status, hung.retryable, hung.code], [499, false, 'aborted']);
      await waitFor(() => up.last().aborted, 2_000, 'the upstream to see the request go away');
    });

    it('an error status on a stream is thrown from the first next(), and nothing is sent before it', async () => {
      up.script({ status: 503 });
      const it = openaiChat.stream(request(), openai, live())[Symbol.asyncIterator]();
      assert.equal(up.requests.length, 0);
      const e = await rejection(it.next());
      assert.deepEqual([e.status, e.retryable], [503, true]);
      assert.equal(up.requests.length, 1);
    });

    for (const cutMode of ['end', 'destroy'] as const) {
      it(`a stream cut midway (${cutMode}) fails a later next() with upstream_stream_cut`, async () => {
        up.script({ cutAfter: 3, cutMode });
        const it = openaiChat.stream(request(), openai, live())[Symbol.asyncIterator]();
        assert.deepEqual((await it.next()).value, { type: 'text', text: 'Echo:' });
        assert.deepEqual((await it.next()).value, { type: 'text', text: ' hello' });
        const e = await rejection(it.next());
        assert.deepEqual([e.status, e.retryable, e.code], [502, true, 'upstream_stream_cut']);
      });
    }

    it('a stream that ends before its first event fails the first next()', async () => {
      up.script({ cutAfter: 0 });
      const e = await rejection(openaiChat.stream(request(), openai, live())[Symbol.asyncIterator]().next());
      assert.equal(e.code, 'upstream_stream_cut');
    });

    it('an error frame mid-stream becomes an RequestError with its message', async () => {
      up.script({ errorAfter: 2, error: { message: 'The model crashed midway', type: 'server_error' } });
      const it = openaiChat.stream(request(), openai, live())[Symbol.asyncIterator]();
      assert.equal((await it.next()).value.type, 'text');
      const e = await rejection(it.next());
      assert.match(e.opts.detail ?? '', /The model crashed midway/);
      assert.doesNotMatch(e.message, /crashed/);
      assert.equal(e.retryable, true);
    });

    it('a finish without [DONE] is a complete stream', async () => {
      selfHosted.script({ omitDone: true });
      const events = await collect(openaiChat.stream(request(), vllm, live()));
      assert.deepEqual(
        events.map((e) => e.type),
        ['text', 'text', 'text', 'finish', 'usage'],
      );
    });

    it('a server that ignores stream: true and answers in one piece is replayed as events', async () => {
      selfHosted.script({ ignoreStream: true, reasoning: 'Hmm.' });
      const events = await collect(openaiChat.stream(request(), vllm, live()));
      assert.deepEqual(
        events.map((e) => e.type),
        ['reasoning', 'text', 'finish', 'usage'],
      );
      assert.deepEqual(events[1], { type: 'text', text: 'Echo: hello there' });
    });

    it('a consumer that stops early releases the upstream request', async () => {
      up.script({ eventDelayMs: 20 });
      for await (const e of openaiChat.stream(
        request({ messages: [user('one two three four five six seven')] }),
        openai,
        live(),
      )) {
        assert.equal(e.type, 'text');
        break;
      }
      await waitFor(() => up.last().aborted, 2_000, 'the upstream to see the abort');
    });
  });

  describe('legacy prompts', () => {
    it('go to /completions with legacy logprobs mapped, JSON and streamed', async () => {
      const req = request({
        model: 'meta-llama/Llama-3.1-8B',
        messages: [],
        prompt: 'Once upon a time',
        sampling: { logprobs: true, topLogprobs: 2, topK: 10 },
      });
      const r = await openaiChat.complete(req, vllm, live());
      const sent = selfHosted.last();
      assert.equal(sent.path, '/v1/completions');
      assert.deepEqual(sent.body, {
        model: 'meta-llama/Llama-3.1-8B',
        prompt: 'Once upon a time',
        max_tokens: 64,
        logprobs: 2,
        top_k: 10,
      });
      assert.equal(r.content, ' Echo: Once upon a time');
      assert.equal(r.finishReason, 'stop');
      assert.deepEqual(r.logprobs![0], {
        token: ' Echo:',
        logprob: -0.1,
        topLogprobs: [
          { token: ' Echo:', logprob: -0.1 },
          { token: ' Echo:~1', logprob: -1.1 },
        ],
      });
      assert.deepEqual(r.usage, {
        promptTokens: 4,
        cachedTokens: 0,
        cacheWriteTokens: 0,
        completionTokens: 5,
        reasoningTokens: 0,
      });

      const events = await collect(openaiChat.stream({ ...req, sampling: { logprobs: true } }, vllm, live()));
      const texts = events.filter((e): e is Extract<StreamEvent, { type: 'text' }> => e.type === 'text');
      assert.equal(texts.map((t) => t.text).join(''), ' Echo: Once upon a time');
      assert.deepEqual(texts[1].logprobs, [
        { token: ' Once', logprob: -0.2, topLogprobs: [{ token: ' Once', logprob: -0.2 }] },
      ]);
      assert.deepEqual(
        events.slice(-2).map((e) => e.type),
        ['finish', 'usage'],
      );
    });

    it('become a user turn where the vendor has no /completions for the model (OpenAI chat models)', async () => {
      const r = await openaiChat.complete(request({ messages: [], prompt: 'Say hi' }), openai, live());
      assert.equal(up.last().path, '/v1/chat/completions');
      assert.deepEqual(up.last().body.messages, [{ role: 'user', content: 'Say hi' }]);
      assert.equal(r.content, 'Echo: Say hi');
    });
  });

  it('reads the stream chunks of less regular servers', () => {
    // no index, id and name repeated on every delta, arguments as an object, usage under x_groq, "eos"
    const d = new StreamDecoder('x', false, false);
    const chunk = (delta: unknown, extra: Record<string, unknown> = {}) => ({
      choices: [{ index: 0, delta, finish_reason: null, ...extra }],
    });
    const events = [
      chunk({ tool_calls: [{ id: 'a', function: { name: 'f', arguments: '{"x":' } }] }),
      chunk({ tool_calls: [{ id: 'a', function: { name: 'f', arguments: '1}' } }] }),
      chunk({ tool_calls: [{ function: { name: 'g', arguments: { y: 2 } } }] }),
      {
        choices: [{ index: 0, delta: {}, finish_reason: 'eos' }],
        x_groq: { usage: { prompt_tokens: 5, completion_tokens: 7 } },
      },
    ].flatMap((c) => d.push(c));
    assert.deepEqual(events, [
      { type: 'tool_call', index: 0, id: 'a', name: 'f', argumentsDelta: '{"x":' },
      { type: 'tool_call', index: 0, argumentsDelta: '1}' },
      { type: 'tool_call', index: 0, argumentsDelta: '{"y":2}' },
    ]);
    assert.ok(d.finished);
    assert.deepEqual(d.end(), [
      { type: 'finish', reason: 'tool_calls' },
      {
        type: 'usage',
        usage: { promptTokens: 5, cachedTokens: 0, cacheWriteTokens: 0, completionTokens: 7, reasoningTokens: 0 },
      },
    ]);
    // OpenRouter ends a failed generation with finish_reason "error"; vLLM sends {"object":"error"}
    assert.throws(
      () =>
        new StreamDecoder('x', false, false).push({
          choices: [{ delta: {}, finish_reason: 'error', error: { code: 502, message: 'provider down' } }],
        }),
      (e: RequestError) => e.status === 502 && e.retryable && /provider down/.test(e.opts.detail ?? ''),
    );
    assert.throws(
      () =>
        new StreamDecoder('x', false, false).push({
          object: 'error',
          message: 'bad schema',
          type: 'BadRequestError',
          code: 400,
        }),
      (e: RequestError) => e.status === 400 && !e.retryable && /bad schema/.test(e.message),
    );
  });

  it('the loopback speaks the protocol the official OpenAI SDK expects', async () => {
    const client = new OpenAI({ baseURL: up.url, apiKey: up.apiKey, maxRetries: 0 });
    up.script({ toolCalls: [{ name: 'get_weather', arguments: '{"city":"Oslo"}' }] });
    const runner = client.chat.completions.stream({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'Weather?' }],
      tools: [{ type: 'function', function: weatherTool }],
      stream_options: { include_usage: true },
    });
    const done = await runner.finalChatCompletion();
    assert.equal(
      done.choices[0].message.tool_calls?.[0].type === 'function' &&
        done.choices[0].message.tool_calls[0].function.arguments,
      '{"city":"Oslo"}',
    );
    assert.equal(done.choices[0].finish_reason, 'tool_calls');
    const err = await client.chat.completions
      .create({ model: 'x', messages: [] }, { headers: { authorization: 'Bearer nope' } })
      .catch((e) => e);
    assert.ok(err instanceof OpenAI.AuthenticationError);
  });
});
