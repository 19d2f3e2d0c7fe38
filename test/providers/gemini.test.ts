// The Gemini adapter against a loopback Gemini API (test/support/upstreams/gemini.ts), and the
// safe media fetcher it uses for image URLs.
import assert from 'node:assert/strict';
import dns from 'node:dns';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { geminiChat } from '../../activities/providers/gemini/index.js';
import { MediaFetchError, isAllowedAddress, safeFetch } from '../../activities/core/safeFetch.js';
import type { ProviderTarget } from '../../activities/providers/types.js';
import type { InferenceRequest, Message, StreamEvent } from '../../activities/core/types.js';
import { startGeminiUpstream, type GeminiUpstream } from '../support/upstreams/gemini.js';
import { RequestError } from '../../activities/core/errors.js';
import { waitFor } from '../support/wait.js';

const user = (text: string): Message => ({ role: 'user', content: [{ type: 'text', text }] });
const request = (over: Partial<InferenceRequest> = {}): InferenceRequest => ({
  model: 'gemini-2.0-flash',
  messages: [user('Hello there')],
  maxTokens: 256,
  sampling: {},
  ...over,
});

async function collect(iter: AsyncIterable<StreamEvent>): Promise<StreamEvent[]> {
  const out: StreamEvent[] = [];
  for await (const e of iter) out.push(e);
  return out;
}

async function rejects(p: Promise<unknown>, check: (e: RequestError) => void): Promise<void> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof RequestError, `expected RequestError, got ${String(err)}`);
    check(err);
    return;
  }
  assert.fail('expected a rejection');
}

describe('gemini adapter', () => {
  let up: GeminiUpstream;
  let target: ProviderTarget;
  const signal = () => AbortSignal.timeout(20_000);

  before(async () => {
    up = await startGeminiUpstream();
    target = { providerId: 'gemini', baseUrl: up.url, apiKey: up.apiKey, options: {} };
  });
  after(() => up.close());
  beforeEach(() => up.reset());

  it('completes a plain request', async () => {
    const res = await geminiChat.complete(
      request({ sampling: { temperature: 0.3, topP: 0.9, topK: 40, seed: 7, minP: 0.1 } }),
      target,
      signal(),
    );
    assert.equal(res.content, 'Echo: Hello there');
    assert.equal(res.finishReason, 'stop');
    assert.deepEqual(res.toolCalls, []);
    assert.ok(res.upstreamId?.startsWith('resp-'));
    const rec = up.lastRequest()!;
    assert.equal(rec.path, '/v1beta/models/gemini-2.0-flash:generateContent');
    assert.equal(rec.headers['x-goog-api-key'], up.apiKey);
    assert.deepEqual(rec.body.contents, [{ role: 'user', parts: [{ text: 'Hello there' }] }]);
    assert.deepEqual(rec.body.generationConfig, {
      maxOutputTokens: 256,
      temperature: 0.3,
      topP: 0.9,
      topK: 40,
      seed: 7,
    });
    assert.equal(res.usage?.completionTokens, 3);
    assert.ok(res.usage!.promptTokens > 0);
    assert.equal(res.usage?.reasoningTokens, 0);
  });

  it('maps usage: cached tokens inside the prompt, thoughts inside the completion', async () => {
    up.script({
      text: 'ok',
      usage: {
        promptTokenCount: 100,
        cachedContentTokenCount: 60,
        candidatesTokenCount: 5,
        thoughtsTokenCount: 20,
        totalTokenCount: 125,
      },
    });
    const res = await geminiChat.complete(request(), target, signal());
    assert.deepEqual(res.usage, {
      promptTokens: 100,
      cachedTokens: 60,
      cacheWriteTokens: 0,
      completionTokens: 25,
      reasoningTokens: 20,
    });
    up.script({ text: 'ok', usage: null });
    assert.equal((await geminiChat.complete(request(), target, signal())).usage, null);
  });

  it('sends system turns as systemInstruction, assistant as model, and merges same-role turns', async () => {
    await geminiChat.complete(
      request({
        messages: [
          { role: 'system', content: [{ type: 'text', text: 'Be brief.' }] },
          { role: 'system', content: [{ type: 'text', text: 'Speak French.' }] },
          user('Hi'),
          { role: 'assistant', content: [{ type: 'text', text: 'Bonjour' }] },
          user('How are you?'),
          user('And the weather?'),
        ],
      }),
      target,
      signal(),
    );
    const body = up.lastRequest()!.body;
    assert.deepEqual(body.systemInstruction, { parts: [{ text: 'Be brief.' }, { text: 'Speak French.' }] });
    assert.deepEqual(body.contents, [
      { role: 'user', parts: [{ text: 'Hi' }] },
      { role: 'model', parts: [{ text: 'Bonjour' }] },
      { role: 'user', parts: [{ text: 'How are you?' }, { text: 'And the weather?' }] },
    ]);
  });

  it('takes a raw prompt as a user turn', async () => {
    const res = await geminiChat.complete(request({ messages: [], prompt: 'Once upon a time' }), target, signal());
    assert.equal(res.content, 'Echo: Once upon a time');
  });

  it('round-trips tools: declarations, choices, calls with ids, results with the function name', async () => {
    const tools = [
      {
        name: 'get_weather',
        description: 'Weather for a city',
        parameters: {
          type: 'object',
          properties: { city: { type: 'string' } },
          required: ['city'],
          additionalProperties: false,
        },
      },
      { name: 'get_time', parameters: { type: 'object', properties: {} } },
    ];
    up.script({
      toolCalls: [
        { name: 'get_weather', args: { city: 'Paris' } },
        { name: 'get_time', args: {} },
      ],
    });
    const first = await geminiChat.complete(
      request({ messages: [user('Weather and time in Paris?')], tools, toolChoice: 'auto' }),
      target,
      signal(),
    );
    let body = up.lastRequest()!.body;
    assert.deepEqual(body.tools, [
      {
        functionDeclarations: [
          { name: 'get_weather', description: 'Weather for a city', parametersJsonSchema: tools[0].parameters },
          { name: 'get_time', parametersJsonSchema: tools[1].parameters },
        ],
      },
    ]);
    assert.deepEqual(body.toolConfig, { functionCallingConfig: { mode: 'AUTO' } });
    assert.equal(first.finishReason, 'tool_calls');
    assert.equal(first.content, '');
    assert.equal(first.toolCalls.length, 2);
    assert.match(first.toolCalls[0].id, /^call_0_/);
    assert.match(first.toolCalls[1].id, /^call_1_/);
    assert.notEqual(first.toolCalls[0].id, first.toolCalls[1].id);
    assert.deepEqual(
      first.toolCalls.map((c) => [c.name, JSON.parse(c.arguments)]),
      [
        ['get_weather', { city: 'Paris' }],
        ['get_time', {}],
      ],
    );

    // The results go back by call id; Gemini wants the function names, found from the assistant turn.
    const second = await geminiChat.complete(
      request({
        tools,
        messages: [
          user('Weather and time in Paris?'),
          { role: 'assistant', content: [], toolCalls: first.toolCalls },
          { role: 'tool', toolCallId: first.toolCalls[1].id, content: [{ type: 'text', text: '12:00' }] },
          { role: 'tool', toolCallId: first.toolCalls[0].id, content: [{ type: 'text', text: '{"temp_c": 21}' }] },
        ],
      }),
      target,
      signal(),
    );
    body = up.lastRequest()!.body;
    assert.deepEqual(body.contents.slice(1), [
      {
        role: 'model',
        parts: [
          { functionCall: { name: 'get_weather', args: { city: 'Paris' } } },
          { functionCall: { name: 'get_time', args: {} } },
        ],
      },
      {
        role: 'user',
        parts: [
          { functionResponse: { name: 'get_time', response: { result: '12:00' } } },
          { functionResponse: { name: 'get_weather', response: { temp_c: 21 } } },
        ],
      },
    ]);
    assert.equal(second.content, 'get_time returned {"result":"12:00"}; get_weather returned {"temp_c":21}');
    assert.equal(second.finishReason, 'stop');
  });

  it('maps tool_choice to functionCallingConfig', async () => {
    const tools = [{ name: 'a' }, { name: 'b' }];
    const cases: Array<[InferenceRequest['toolChoice'], unknown]> = [
      ['none', { mode: 'NONE' }],
      ['required', { mode: 'ANY' }],
      [{ name: 'b' }, { mode: 'ANY', allowedFunctionNames: ['b'] }],
    ];
    for (const [choice, config] of cases) {
      const res = await geminiChat.complete(request({ tools, toolChoice: choice }), target, signal());
      assert.deepEqual(up.lastRequest()!.body.toolConfig, { functionCallingConfig: config });
      if (typeof choice === 'object') assert.equal(res.toolCalls[0].name, 'b');
    }
    assert.deepEqual(up.lastRequest()!.body.tools, [{ functionDeclarations: [{ name: 'a' }, { name: 'b' }] }]);
  });

  it('keeps the call id Gemini sends, and refuses a tool result that answers no call', async () => {
    up.script({ toolCalls: [{ id: 'gem-id-1', name: 'f', args: { x: 1 } }] });
    const res = await geminiChat.complete(request({ tools: [{ name: 'f' }] }), target, signal());
    assert.equal(res.toolCalls[0].id, 'gem-id-1');
    await rejects(
      geminiChat.complete(
        request({
          messages: [user('x'), { role: 'tool', toolCallId: 'nope', content: [{ type: 'text', text: '1' }] }],
        }),
        target,
        signal(),
      ),
      (e) => {
        assert.equal(e.status, 400);
        assert.equal(e.retryable, false);
      },
    );
  });

  it('replays calls with the signature bypass for Gemini 3 models', async () => {
    await geminiChat.complete(
      request({
        model: 'gemini-3-pro-preview',
        messages: [
          user('q'),
          { role: 'assistant', content: [], toolCalls: [{ id: 'c1', name: 'f', arguments: '{}' }] },
          { role: 'tool', toolCallId: 'c1', content: [{ type: 'text', text: 'done' }] },
        ],
      }),
      target,
      signal(),
    );
    assert.equal(up.lastRequest()!.body.contents[1].parts[0].thoughtSignature, 'skip_thought_signature_validator');
  });

  it('asks for JSON output with the full JSON Schema', async () => {
    const schema = {
      type: 'object',
      properties: { answer: { type: 'string' } },
      required: ['answer'],
      additionalProperties: false,
    };
    up.script({ text: '{"answer":"42"}' });
    const res = await geminiChat.complete(
      request({ responseFormat: { type: 'json_schema', name: 'a', schema, strict: true } }),
      target,
      signal(),
    );
    assert.deepEqual(JSON.parse(res.content), { answer: '42' });
    const g = up.lastRequest()!.body.generationConfig!;
    assert.equal(g.responseMimeType, 'application/json');
    assert.deepEqual(g.responseJsonSchema, schema);

    const obj = await geminiChat.complete(request({ responseFormat: { type: 'json_object' } }), target, signal());
    assert.deepEqual(JSON.parse(obj.content), { echo: 'Hello there' });
    assert.equal(up.lastRequest()!.body.generationConfig!.responseJsonSchema, undefined);
  });

  it('thinks: effort/budget to thinkingConfig, thought parts to reasoning', async () => {
    const m = 'gemini-2.5-flash';
    up.script({ reasoning: 'Let me consider the greeting.', text: 'Hi!' });
    const res = await geminiChat.complete(
      request({ model: m, maxTokens: 30000, reasoning: { effort: 'medium' } }),
      target,
      signal(),
    );
    assert.deepEqual(up.lastRequest()!.body.generationConfig!.thinkingConfig, {
      thinkingBudget: 8192,
      includeThoughts: true,
    });
    assert.equal(res.reasoning, 'Let me consider the greeting.');
    assert.equal(res.content, 'Hi!');
    assert.equal(res.usage?.reasoningTokens, 5);
    assert.equal(res.usage?.completionTokens, 6);

    const cases: Array<[InferenceRequest['reasoning'], unknown, number?]> = [
      [{ enabled: true }, { thinkingBudget: -1, includeThoughts: true }],
      [
        { budgetTokens: 2000, exclude: true },
        { thinkingBudget: 2000, includeThoughts: false },
      ],
      [{ effort: 'high' }, { thinkingBudget: 1000, includeThoughts: true }, 1000],
      [{ effort: 'max' }, { thinkingBudget: 24576, includeThoughts: true }, 60000],
      [{ effort: 'none' }, { thinkingBudget: 0 }],
      [{ enabled: false }, { thinkingBudget: 0 }],
    ];
    for (const [reasoning, config, maxTokens] of cases) {
      const r = await geminiChat.complete(
        request({ model: m, reasoning, maxTokens: maxTokens ?? 30000 }),
        target,
        signal(),
      );
      assert.deepEqual(up.lastRequest()!.body.generationConfig!.thinkingConfig, config, JSON.stringify(reasoning));
      if (reasoning?.exclude) assert.equal(r.reasoning, undefined);
    }
    await geminiChat.complete(request({ model: m }), target, signal());
    assert.equal(up.lastRequest()!.body.generationConfig!.thinkingConfig, undefined);
  });

  it('streams text, reasoning and usage', async () => {
    up.script({ text: 'one two three four five six', reasoning: 'hmm yes', chunks: 3 });
    const iter = geminiChat.stream(
      request({ model: 'gemini-2.5-flash', reasoning: { enabled: true } }),
      target,
      signal(),
    );
    assert.equal(up.requests.length, 0, 'no upstream call before the first next()');
    const events = await collect(iter);
    const rec = up.lastRequest()!;
    assert.equal(rec.path, '/v1beta/models/gemini-2.5-flash:streamGenerateContent');
    assert.equal(rec.query.alt, 'sse');
    assert.deepEqual(
      events.filter((e) => e.type === 'reasoning'),
      [{ type: 'reasoning', text: 'hmm yes' }],
    );
    const texts = events.filter((e) => e.type === 'text');
    assert.equal(texts.length, 3);
    assert.equal(texts.map((e) => (e as { text: string }).text).join(''), 'one two three four five six');
    assert.deepEqual(
      events.slice(-2).map((e) => e.type),
      ['finish', 'usage'],
    );
    assert.deepEqual(events.at(-2), { type: 'finish', reason: 'stop' });
    const usage = (events.at(-1) as { usage: { completionTokens: number; reasoningTokens: number } }).usage;
    assert.equal(usage.completionTokens, 8);
    assert.equal(usage.reasoningTokens, 2);
  });

  it('streams a function call whole, with a synthesized id', async () => {
    up.script({ text: 'Let me check.', toolCalls: [{ name: 'get_weather', args: { city: 'Oslo', days: 2 } }] });
    const events = await collect(geminiChat.stream(request({ tools: [{ name: 'get_weather' }] }), target, signal()));
    const calls = events.filter((e) => e.type === 'tool_call');
    assert.equal(calls.length, 1);
    const call = calls[0] as Extract<StreamEvent, { type: 'tool_call' }>;
    assert.equal(call.index, 0);
    assert.match(call.id!, /^call_0_/);
    assert.equal(call.name, 'get_weather');
    assert.deepEqual(JSON.parse(call.argumentsDelta), { city: 'Oslo', days: 2 });
    assert.deepEqual(
      events.find((e) => e.type === 'finish'),
      { type: 'finish', reason: 'tool_calls' },
    );
  });

  it('maps safety stops and blocked prompts to content_filter, MAX_TOKENS to length', async () => {
    up.script({ finishReason: 'SAFETY', text: '' });
    let res = await geminiChat.complete(request(), target, signal());
    assert.equal(res.finishReason, 'content_filter');
    assert.equal(res.content, '');

    up.script({ blockReason: 'PROHIBITED_CONTENT' });
    res = await geminiChat.complete(request(), target, signal());
    assert.equal(res.finishReason, 'content_filter');
    assert.equal(res.content, '');
    assert.ok(res.usage!.promptTokens > 0);

    up.script({ blockReason: 'SAFETY' });
    const events = await collect(geminiChat.stream(request(), target, signal()));
    assert.deepEqual(events[0], { type: 'finish', reason: 'content_filter' });

    up.script({ finishReason: 'RECITATION', text: 'partial' });
    const streamed = await collect(geminiChat.stream(request(), target, signal()));
    assert.deepEqual(
      streamed.find((e) => e.type === 'finish'),
      { type: 'finish', reason: 'content_filter' },
    );

    res = await geminiChat.complete(request({ maxTokens: 2, messages: [user('a b c d e')] }), target, signal());
    assert.equal(res.finishReason, 'length');
    assert.equal(res.content, 'Echo: a');
  });

  it('maps upstream errors to RequestError with the right retryability', async () => {
    const cases: Array<[number, boolean]> = [
      [400, false],
      [403, false],
      [404, false],
      [429, true],
      [500, true],
      [503, true],
    ];
    for (const [status, retryable] of cases) {
      up.script({ error: { status } });
      await rejects(geminiChat.complete(request(), target, signal()), (e) => {
        assert.equal(e.status, status);
        assert.equal(e.retryable, retryable, `status ${status}`);
        assert.equal(e.opts.providerId, 'gemini');
      });
    }
    up.script({ error: { status: 429 } });
    await rejects(geminiChat.complete(request(), target, signal()), (e) => {
      assert.match(e.opts.detail ?? '', /Resource has been exhausted/);
      assert.equal(e.message, 'gemini is rate limiting the gateway (HTTP 429).');
    });

    // A wrong key is Google's 400 API_KEY_INVALID: reported as the 401 it means. No key: 403.
    await rejects(geminiChat.complete(request(), { ...target, apiKey: 'wrong' }, signal()), (e) => {
      assert.equal(e.status, 401);
      assert.equal(e.retryable, false);
      assert.equal(e.code, 'upstream_auth');
    });
    await rejects(geminiChat.complete(request(), { ...target, apiKey: undefined }, signal()), (e) => {
      assert.equal(e.status, 403);
      assert.equal(e.retryable, false);
    });

    // Streaming: a failure before the first event comes out of the first next().
    up.script({ error: { status: 503 } });
    const it = geminiChat.stream(request(), target, signal())[Symbol.asyncIterator]();
    await rejects(it.next(), (e) => {
      assert.equal(e.status, 503);
      assert.equal(e.retryable, true);
    });

    // An error frame after some output comes out of a later next().
    up.script({ text: 'a b c', chunks: 3, errorAfter: 1, error: { status: 500, message: 'boom' } });
    const it2 = geminiChat.stream(request(), target, signal())[Symbol.asyncIterator]();
    assert.deepEqual((await it2.next()).value, { type: 'text', text: 'a ' });
    await rejects(it2.next(), (e) => {
      assert.equal(e.status, 500);
      assert.equal(e.retryable, true);
      assert.match(e.opts.detail ?? '', /boom/);
      assert.doesNotMatch(e.message, /boom/);
    });
  });

  it('reports a cut stream as upstream_stream_cut', async () => {
    for (const cutMode of ['end', 'destroy'] as const) {
      up.script({ text: 'a b c', chunks: 3, cutAfter: 2, cutMode });
      const it = geminiChat.stream(request(), target, signal())[Symbol.asyncIterator]();
      assert.equal((await it.next()).value.type, 'text');
      assert.equal((await it.next()).value.type, 'text');
      await rejects(it.next(), (e) => {
        assert.equal(e.code, 'upstream_stream_cut', cutMode);
        assert.equal(e.retryable, true);
      });
    }
    // Cut before anything: from the first next(), so the router can still fall back.
    up.script({ cutAfter: 0, cutMode: 'end' });
    await rejects(geminiChat.stream(request(), target, signal())[Symbol.asyncIterator]().next(), (e) =>
      assert.equal(e.code, 'upstream_stream_cut'),
    );
  });

  it('stops a hanging upstream when aborted', async () => {
    up.script({ hang: true });
    const ac = new AbortController();
    const started = Date.now();
    setTimeout(() => ac.abort(), 150);
    await rejects(geminiChat.complete(request(), target, ac.signal), (e) => assert.equal(e.code, 'aborted'));
    assert.ok(Date.now() - started < 3000);
    await waitFor(() => up.lastRequest()!.clientClosed);

    up.script({ text: 'a b c', chunks: 3, hangAfter: 1 });
    const ac2 = new AbortController();
    const it = geminiChat.stream(request(), target, ac2.signal)[Symbol.asyncIterator]();
    assert.equal((await it.next()).value.type, 'text');
    setTimeout(() => ac2.abort(), 100);
    await rejects(it.next(), (e) => assert.equal(e.code, 'aborted'));
    await waitFor(() => up.lastRequest()!.clientClosed);
  });

  describe('stop sequences, enforced by the gateway', () => {
    const texts = (events: StreamEvent[]) => events.flatMap((e) => (e.type === 'text' ? [e.text] : []));

    it('streams up to the first stop sequence, split across frames, and names it', async () => {
      up.script({ text: 'alpha beta gamma delta epsilon', textChunks: ['alpha be', 'ta gam', 'ma', ' delta epsilon'] });
      const events = await collect(
        geminiChat.stream(request({ sampling: { stop: ['delta', 'beta gamma'] } }), target, signal()),
      );
      const rec = up.lastRequest()!;
      assert.equal(rec.action, 'streamGenerateContent');
      // not forwarded: Gemini would stop on it silently, and nobody could tell which one matched
      assert.equal(rec.body.generationConfig?.stopSequences, undefined);
      // never a part of the stop sequence, not even the 'be' that could have started it
      assert.deepEqual(texts(events), ['alpha ']);
      assert.deepEqual(events.at(-2), { type: 'finish', reason: 'stop', stopSequence: 'beta gamma' });
      // the running totals of the frame that held the stop ('alpha beta gamma': 3 words), not the final 5
      const usage = (events.at(-1) as Extract<StreamEvent, { type: 'usage' }>).usage;
      assert.equal(usage.completionTokens, 3);
      assert.ok(usage.promptTokens > 0);
    });

    it('answers a non-streamed request from a streamed upstream call, cut at the stop', async () => {
      up.script({ text: 'one two STOP three four', textChunks: ['one two S', 'TOP three', ' four'] });
      const res = await geminiChat.complete(request({ sampling: { stop: ['STOP'] } }), target, signal());
      const rec = up.lastRequest()!;
      assert.equal(rec.action, 'streamGenerateContent');
      assert.equal(rec.query.alt, 'sse');
      assert.equal(rec.body.generationConfig?.stopSequences, undefined);
      assert.equal(res.content, 'one two ');
      assert.equal(res.finishReason, 'stop');
      assert.equal(res.stopSequence, 'STOP');
      assert.equal(res.usage?.completionTokens, 4); // 'one two STOP three'
      assert.ok(res.upstreamId?.startsWith('resp-'));
    });

    it('stops the upstream at the stop instead of reading on', async () => {
      // the upstream would hang after the frame holding the stop: only a gateway that stops reading finishes
      up.script({ text: 'a b END c d', textChunks: ['a b ', 'END c', ' d'], hangAfter: 2 });
      const res = await geminiChat.complete(request({ sampling: { stop: ['END'] } }), target, signal());
      assert.equal(res.content, 'a b ');
      assert.equal(res.stopSequence, 'END');
      await waitFor(() => up.lastRequest()!.clientClosed);
    });

    it('without a match: the whole text (held-back text included), a plain stop, the final usage', async () => {
      up.script({ text: 'one two thr', textChunks: ['one t', 'wo thr'] });
      const events = await collect(geminiChat.stream(request({ sampling: { stop: ['three'] } }), target, signal()));
      assert.equal(texts(events).join(''), 'one two thr');
      assert.deepEqual(events.at(-2), { type: 'finish', reason: 'stop' });
      assert.equal((events.at(-1) as Extract<StreamEvent, { type: 'usage' }>).usage.completionTokens, 3);

      up.script({ text: 'one two thr', textChunks: ['one t', 'wo thr'] });
      const res = await geminiChat.complete(request({ sampling: { stop: ['three'] } }), target, signal());
      assert.equal(res.content, 'one two thr');
      assert.equal(res.stopSequence, undefined);
      assert.equal(res.usage?.completionTokens, 3);
    });

    it('keeps the text before a function call, and the cap still ends an answer as length', async () => {
      up.script({ text: 'Let me ch', toolCalls: [{ name: 'lookup', args: { q: 1 } }] });
      const res = await geminiChat.complete(
        request({ sampling: { stop: ['check'] }, tools: [{ name: 'lookup' }] }),
        target,
        signal(),
      );
      assert.equal(res.content, 'Let me ch');
      assert.equal(res.finishReason, 'tool_calls');
      assert.equal(res.toolCalls[0].name, 'lookup');
      assert.match(res.toolCalls[0].id, /^call_0_/);

      up.script({ text: 'w1 w2 w3 w4 w5' });
      const capped = await geminiChat.complete(
        request({ maxTokens: 3, sampling: { stop: ['zzz'] } }),
        target,
        signal(),
      );
      assert.equal(capped.content, 'w1 w2 w3');
      assert.equal(capped.finishReason, 'length');

      // an empty sequence stops nothing (it would match before the first character)
      up.script({ text: 'still here' });
      const empty = await geminiChat.complete(request({ sampling: { stop: [''] } }), target, signal());
      assert.equal(empty.content, 'still here');
      assert.equal(up.lastRequest()!.action, 'generateContent');
    });

    it('bills no usage at a cut when the frames did not count the output yet (the gateway estimates it)', async () => {
      up.script({ text: 'a b END c', textChunks: ['a b ', 'END', ' c'], runningUsage: false });
      const res = await geminiChat.complete(request({ sampling: { stop: ['END'] } }), target, signal());
      assert.equal(res.content, 'a b ');
      assert.equal(res.usage, null);
    });

    it('has a loopback that stops on stopSequences as Gemini does: the sequence left out, a plain STOP', async () => {
      const res = await fetch(`${up.url}/v1beta/models/gemini-2.0-flash:generateContent`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-goog-api-key': up.apiKey },
        body: JSON.stringify({
          contents: [{ role: 'user', parts: [{ text: 'a b c' }] }],
          generationConfig: { stopSequences: ['b'] },
        }),
      });
      const body = await res.json();
      assert.equal(body.candidates[0].content.parts[0].text, 'Echo: a ');
      assert.equal(body.candidates[0].finishReason, 'STOP');
    });
  });

  it('releases the upstream when the consumer stops reading', async () => {
    up.script({ text: 'a b c d', chunks: 4, hangAfter: 2 });
    for await (const e of geminiChat.stream(request(), target, signal())) {
      assert.equal(e.type, 'text');
      break;
    }
    await waitFor(() => up.lastRequest()!.clientClosed);
  });

  it('has a loopback upstream that rejects what the real API rejects', async () => {
    const post = async (body: unknown) => {
      const r = await fetch(`${up.url}/v1beta/models/gemini-2.0-flash:generateContent`, {
        method: 'POST',
        headers: { 'x-goog-api-key': up.apiKey, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: r.status, error: ((await r.json()) as { error: { status: string; message: string } }).error };
    };
    let r = await post({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }], generation_config: { max_tokens: 5 } });
    assert.equal(r.status, 400);
    assert.equal(r.error.status, 'INVALID_ARGUMENT');
    assert.match(r.error.message, /Unknown name "max_tokens" at 'generation_config'/);
    r = await post({
      contents: [
        { role: 'user', parts: [{ text: 'hi' }] },
        { role: 'user', parts: [{ functionResponse: { name: 'f', response: {} } }] },
      ],
    });
    assert.match(r.error.message, /function response turn comes immediately after a function call turn/);
    r = await post({ contents: [{ role: 'assistant', parts: [{ text: 'hi' }] }] });
    assert.match(r.error.message, /valid role/);
  });

  it('inlines data: URL images and base64 documents', async () => {
    const png = tinyPng().toString('base64');
    await geminiChat.complete(
      request({
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'What is this?' },
              { type: 'image', url: `data:image/png;base64,${png}` },
              { type: 'image', data: png },
              { type: 'document', data: Buffer.from('%PDF-1.4').toString('base64'), mediaType: 'application/pdf' },
            ],
          },
        ],
      }),
      target,
      signal(),
    );
    assert.deepEqual(up.lastRequest()!.body.contents[0].parts.slice(1), [
      { inlineData: { mimeType: 'image/png', data: png } },
      { inlineData: { mimeType: 'image/png', data: png } },
      { inlineData: { mimeType: 'application/pdf', data: Buffer.from('%PDF-1.4').toString('base64') } },
    ]);
  });

  describe('image URLs', () => {
    let media: http.Server;
    let mediaUrl: string;
    const saved = process.env.SWITCHYARD_FETCH_ALLOW_PRIVATE;

    before(async () => {
      media = http.createServer((req, res) => {
        if (req.url === '/cat.png') {
          res.writeHead(200, { 'content-type': 'image/png' });
          res.end(tinyPng());
        } else if (req.url === '/slow') {
          // never answers
        } else if (req.url === '/page') {
          res.writeHead(200, { 'content-type': 'text/html' });
          res.end('<html></html>');
        } else {
          res.writeHead(404);
          res.end();
        }
      });
      media.listen(0, '127.0.0.1');
      await new Promise((r) => media.once('listening', r));
      mediaUrl = `http://127.0.0.1:${(media.address() as AddressInfo).port}`;
    });
    after(() => {
      if (saved === undefined) delete process.env.SWITCHYARD_FETCH_ALLOW_PRIVATE;
      else process.env.SWITCHYARD_FETCH_ALLOW_PRIVATE = saved;
      media.closeAllConnections();
      return new Promise<void>((r) => media.close(() => r()));
    });

    it('fetches an http(s) image and inlines it (private hosts allowed by the operator)', async () => {
      process.env.SWITCHYARD_FETCH_ALLOW_PRIVATE = '1';
      await geminiChat.complete(
        request({
          messages: [
            {
              role: 'user',
              content: [
                { type: 'text', text: 'see' },
                { type: 'image', url: `${mediaUrl}/cat.png` },
              ],
            },
          ],
        }),
        target,
        signal(),
      );
      assert.deepEqual(up.lastRequest()!.body.contents[0].parts[1], {
        inlineData: { mimeType: 'image/png', data: tinyPng().toString('base64') },
      });

      await rejects(
        geminiChat.complete(
          request({ messages: [{ role: 'user', content: [{ type: 'image', url: `${mediaUrl}/page` }] }] }),
          target,
          signal(),
        ),
        (e) => {
          assert.equal(e.status, 400);
          assert.equal(e.code, 'invalid_image_url');
        },
      );
    });

    it('stops fetching an image when the caller aborts', async () => {
      process.env.SWITCHYARD_FETCH_ALLOW_PRIVATE = '1';
      const ac = new AbortController();
      setTimeout(() => ac.abort(), 100);
      const before = up.requests.length;
      await rejects(
        geminiChat.complete(
          request({ messages: [{ role: 'user', content: [{ type: 'image', url: `${mediaUrl}/slow` }] }] }),
          target,
          ac.signal,
        ),
        (e) => {
          assert.equal(e.code, 'aborted');
        },
      );
      assert.equal(up.requests.length, before);
    });

    it('refuses a private image URL by default, as a 400 invalid_image_url', async () => {
      delete process.env.SWITCHYARD_FETCH_ALLOW_PRIVATE;
      const before = up.requests.length;
      await rejects(
        geminiChat.complete(
          request({ messages: [{ role: 'user', content: [{ type: 'image', url: `${mediaUrl}/cat.png` }] }] }),
          target,
          signal(),
        ),
        (e) => {
          assert.equal(e.status, 400);
          assert.equal(e.retryable, false);
          assert.equal(e.code, 'invalid_image_url');
        },
      );
      assert.equal(up.requests.length, before, 'nothing was sent upstream');
    });
  });
});

describe('safeFetch', () => {
  let server: http.Server;
  let base: string;
  let port: number;
  const saved = process.env.SWITCHYARD_FETCH_ALLOW_PRIVATE;

  before(async () => {
    delete process.env.SWITCHYARD_FETCH_ALLOW_PRIVATE;
    server = http.createServer((req, res) => {
      const u = new URL(req.url ?? '/', 'http://x');
      if (u.pathname === '/img') {
        res.writeHead(200, { 'content-type': 'image/png; charset=binary' });
        res.end(tinyPng());
      } else if (u.pathname === '/redirect') {
        res.writeHead(302, { location: u.searchParams.get('to') ?? '/img' });
        res.end();
      } else if (u.pathname === '/loop') {
        res.writeHead(302, { location: '/loop' });
        res.end();
      } else if (u.pathname === '/slow') {
        // never answers
      } else if (u.pathname === '/big') {
        res.writeHead(200, { 'content-type': 'image/png', 'content-length': '5000' });
        res.end(Buffer.alloc(5000));
      } else if (u.pathname === '/big-chunked') {
        res.writeHead(200, { 'content-type': 'image/png' });
        for (let i = 0; i < 10; i++) res.write(Buffer.alloc(1000));
        res.end();
      } else {
        res.writeHead(404);
        res.end();
      }
    });
    server.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    port = (server.address() as AddressInfo).port;
    base = `http://127.0.0.1:${port}`;
  });
  after(() => {
    if (saved !== undefined) process.env.SWITCHYARD_FETCH_ALLOW_PRIVATE = saved;
    server.closeAllConnections();
    return new Promise<void>((r) => server.close(() => r()));
  });

  async function refused(
    url: string,
    reason: MediaFetchError['reason'],
    opts: Parameters<typeof safeFetch>[1] = {},
  ): Promise<void> {
    try {
      await safeFetch(url, { timeoutMs: 5000, ...opts });
    } catch (err) {
      assert.ok(err instanceof MediaFetchError, `expected MediaFetchError for ${url}, got ${String(err)}`);
      assert.equal(err.reason, reason, `${url}: ${err.message}`);
      assert.equal(err.status, 400);
      return;
    }
    assert.fail(`${url} was fetched`);
  }

  it('refuses loopback, private, link-local and mapped addresses, literal or resolved', async () => {
    await refused(`${base}/img`, 'forbidden_address');
    await refused('http://10.0.0.1/x.png', 'forbidden_address');
    await refused(`http://[::1]:${port}/img`, 'forbidden_address');
    await refused(`http://localhost:${port}/img`, 'forbidden_address');
    await refused(`http://[::ffff:127.0.0.1]:${port}/img`, 'forbidden_address');
    await refused(`http://[::ffff:7f00:1]:${port}/img`, 'forbidden_address');
    await refused(`http://[::ffff:0:7f00:1]:${port}/img`, 'forbidden_address');
    await refused(`http://[::ffff:0:127.0.0.1]:${port}/img`, 'forbidden_address');
    await refused(`http://[64:ff9b::7f00:1]:${port}/img`, 'forbidden_address');
    await refused(`http://[2002:7f00:1::]:${port}/img`, 'forbidden_address');
    await refused('http://169.254.169.254/latest/meta-data/', 'forbidden_address');
    await refused(`http://2130706433:${port}/img`, 'forbidden_address');
    await refused('file:///etc/passwd', 'bad_url');
    await refused('ftp://example.com/x', 'bad_url');
  });

  it('classifies addresses', () => {
    for (const a of [
      '127.0.0.1',
      '10.1.2.3',
      '172.16.0.1',
      '172.31.255.255',
      '192.168.1.1',
      '100.64.0.1',
      '169.254.169.254',
      '0.0.0.0',
      '::1',
      '::',
      'fd12::1',
      'fe80::1',
      '::ffff:10.0.0.1',
      '::ffff:7f00:1',
      '64:ff9b::a00:1',
      '224.0.0.1',
      // IPv4-mapped, dotted and hex, and IPv4-translated (::ffff:0:0:0/96), dotted and hex
      '::ffff:127.0.0.1',
      '0:0:0:0:0:ffff:7f00:1',
      '::ffff:0:7f00:1',
      '::ffff:0:127.0.0.1',
      '::ffff:0:a9fe:a9fe',
      '::ffff:0:10.0.0.1',
      '::ffff:0:c0a8:101',
      // IPv4-compatible (deprecated), NAT64 and 6to4 embedding private or public IPv4
      '::127.0.0.1',
      '::7f00:1',
      '64:ff9b::7f00:1',
      '64:ff9b::8.8.8.8',
      '64:ff9b:1::a00:1',
      '2002:7f00:1::1',
      '2002:a9fe:a9fe::',
      '2002:808:808::1',
      // Teredo, documentation, discard, site-local, multicast, link-local with a zone
      '2001:0:4136:e378:8000:63bf:3fff:fdd2',
      '2001:db8::1',
      '3fff::1',
      '100::1',
      'fec0::1',
      'ff02::1',
      'fe80::1%eth0',
      // outside global unicast altogether
      '4000::1',
      'e000::1',
    ]) {
      assert.equal(isAllowedAddress(a), false, a);
    }
    for (const a of [
      '8.8.8.8',
      '1.1.1.1',
      '172.32.0.1',
      '2606:4700:4700::1111',
      '2001:4860:4860::8888',
      '::ffff:8.8.8.8',
      '::ffff:0:808:808',
    ])
      assert.equal(isAllowedAddress(a), true, a);
    assert.equal(isAllowedAddress('::ffff:0:a01:203', ['10.1.2.0/24']), true, 'judged as the IPv4 it names');
    assert.equal(isAllowedAddress('10.1.2.3', ['10.1.2.0/24']), true);
    assert.equal(isAllowedAddress('10.1.3.3', ['10.1.2.0/24']), false);
    assert.equal(isAllowedAddress('not-an-ip', true), false);
  });

  it('refuses a name that resolves to a public and a private address, in either order', async () => {
    // The system resolver answers from /etc/hosts and the network: the name's answers are given here.
    const answers: Record<string, Array<{ address: string; family: number }>> = {
      'public-first.test': [
        { address: '93.184.215.14', family: 4 },
        { address: '127.0.0.1', family: 4 },
      ],
      'private-first.test': [
        { address: '127.0.0.1', family: 4 },
        { address: '93.184.215.14', family: 4 },
      ],
      'mapped-last.test': [
        { address: '2606:4700:4700::1111', family: 6 },
        { address: '93.184.215.14', family: 4 },
        { address: '::ffff:127.0.0.1', family: 6 },
      ],
      'two-private.test': [
        { address: '127.0.0.1', family: 4 },
        { address: '10.0.0.1', family: 4 },
      ],
      'nothing.test': [],
    };
    const lookup = dns.promises.lookup;
    const resolved: string[] = [];
    dns.promises.lookup = (async (name: string, options: dns.LookupAllOptions) => {
      const fake = answers[name];
      if (!fake) return lookup(name, options);
      resolved.push(name);
      return fake;
    }) as typeof dns.promises.lookup;
    try {
      // a short timeout: a name let through would be tried against a public address this machine cannot reach
      for (const name of ['public-first.test', 'private-first.test', 'mapped-last.test', 'nothing.test'])
        await refused(`http://${name}:${port}/img`, 'forbidden_address', { timeoutMs: 2000 });
      // 127.0.0.1 allowed, 10.0.0.1 not: every answer is judged, not only the first
      await refused(`http://two-private.test:${port}/img`, 'forbidden_address', {
        allowPrivate: ['127.0.0.1/32'],
        timeoutMs: 2000,
      });
      assert.deepEqual(resolved, [
        'public-first.test',
        'private-first.test',
        'mapped-last.test',
        'nothing.test',
        'two-private.test',
      ]);
    } finally {
      dns.promises.lookup = lookup;
    }
  });

  it('fetches when the operator allows the range, re-checking every redirect', async () => {
    const allow = ['127.0.0.1/32'];
    const got = await safeFetch(`${base}/img`, { allowPrivate: allow });
    assert.equal(got.mediaType, 'image/png');
    assert.deepEqual(got.data, tinyPng());
    const redirected = await safeFetch(`${base}/redirect?to=/img`, { allowPrivate: allow });
    assert.equal(redirected.url, `${base}/img`);

    // 127.0.0.1 is allowed here, but a redirect still cannot lead elsewhere in private space.
    await refused(`${base}/redirect?to=${encodeURIComponent('http://10.0.0.1/x.png')}`, 'forbidden_address', {
      allowPrivate: allow,
    });
    await refused(`${base}/redirect?to=${encodeURIComponent(`http://[::1]:${port}/img`)}`, 'forbidden_address', {
      allowPrivate: allow,
    });
    await refused(`${base}/redirect?to=${encodeURIComponent('http://169.254.169.254/')}`, 'forbidden_address', {
      allowPrivate: allow,
    });
    await refused(`${base}/loop`, 'too_many_redirects', { allowPrivate: allow });
  });

  it('follows the environment switch', async () => {
    process.env.SWITCHYARD_FETCH_ALLOW_PRIVATE = '1';
    try {
      assert.equal((await safeFetch(`http://localhost:${port}/img`)).mediaType, 'image/png');
    } finally {
      delete process.env.SWITCHYARD_FETCH_ALLOW_PRIVATE;
    }
    await refused(`http://localhost:${port}/img`, 'forbidden_address');
  });

  it('enforces the size limit, declared or streamed', async () => {
    await refused(`${base}/big`, 'too_large', { allowPrivate: true, maxBytes: 1000 });
    await refused(`${base}/big-chunked`, 'too_large', { allowPrivate: true, maxBytes: 4000 });
    assert.equal(
      (await safeFetch(`${base}/big-chunked`, { allowPrivate: true, maxBytes: 10_000 })).data.length,
      10_000,
    );
    await refused(`${base}/missing`, 'http_status', { allowPrivate: true });
  });

  it('answers one message for every way the far end can fail, so a caller cannot map what answers', async () => {
    // a closed port, a name that does not resolve, an HTTP error, a host that never answers
    const closed = http.createServer();
    closed.listen(0, '127.0.0.1');
    await new Promise((r) => closed.once('listening', r));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const cases: Array<[string, MediaFetchError['reason'], number?]> = [
      [`http://127.0.0.1:${closedPort}/img`, 'network'],
      ['http://no-such-host.invalid/img', 'dns'],
      [`${base}/missing`, 'http_status'],
      [`${base}/slow`, 'timeout', 300],
    ];
    for (const [url, reason, timeoutMs] of cases) {
      const err = await safeFetch(url, { allowPrivate: true, timeoutMs: timeoutMs ?? 5000 }).then(
        () => assert.fail(`${url} was fetched`),
        (e: unknown) => e,
      );
      assert.ok(err instanceof MediaFetchError, String(err));
      assert.equal(err.reason, reason, url);
      assert.equal(err.message, `could not fetch ${url}`);
      assert.ok(err.detail, 'the operator still learns what happened');
    }
  });

  it('gives up after its timeout', async () => {
    const started = Date.now();
    await refused(`${base}/slow`, 'timeout', { allowPrivate: true, timeoutMs: 200 });
    assert.ok(Date.now() - started < 2000);
  });
});

/** A real 1×1 PNG. */
function tinyPng(): Buffer {
  return Buffer.from(
    'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
    'base64',
  );
}
