// A passed-through stream reads the text of plain text chunks without parsing them
// (providers/openai/stream.ts plainTextDelta) and relays them renamed in their text
// (surfaces/chatPassthrough.ts). For any chunk, that must give what parsing gives: the same text
// for billing, and the same bytes for the caller; chunks that say anything more must be parsed.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { plainTextDelta } from '../../activities/providers/openai/stream.js';
import { StreamDecoder } from '../../activities/providers/openai/response.js';
import { ChatRelay } from '../../activities/surfaces/chatPassthrough.js';
import { MessageStreamDecoder, plainTextDeltaFrame } from '../../activities/providers/anthropic/stream.js';

/** What the decoder makes of a chunk: its events, or the error it throws. */
function decoded(data: string) {
  try {
    const decoder = new StreamDecoder('openai', false, false);
    const events = decoder.push(JSON.parse(data));
    return { events, finished: decoder.finished, end: decoder.end() };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

const text = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme' }),
  fc.constantFrom('', 'Hello', ' world', 'a "quoted" \\ back\\slash', 'line\nbreak\ttab', '\u2028 \ud83d\ude00', '"}'),
);
type Chunk = Record<string, any>;
/** Changes that make a plain text chunk say more (or differently), applied a few at a time. */
const changes: ((c: Chunk) => void)[] = [
  (c) => (c.provider = 'vendor'),
  (c) => (c.object = 'error'),
  (c) => (c.error = { message: 'boom' }),
  (c) => (c.error = null),
  (c) => (c.usage = { prompt_tokens: 3, completion_tokens: 5, total_tokens: 8 }),
  (c) => (c.usage = null),
  (c) => (c.x_groq = { usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }),
  (c) => (c.choices[0].finish_reason = 'stop'),
  (c) => (c.choices[0].finish_reason = 'error'),
  (c) => delete c.choices[0].finish_reason,
  (c) => (c.choices[0].index = 1),
  (c) => delete c.choices[0].index,
  (c) => (c.choices[0].logprobs = { content: [{ token: 'a', logprob: -1, top_logprobs: [] }] }),
  (c) => (c.choices[0].logprobs = null),
  (c) => (c.choices[0].delta.role = 'assistant'),
  (c) => (c.choices[0].delta.reasoning = 'hmm'),
  (c) => (c.choices[0].delta.reasoning_content = 'hmm'),
  (c) => (c.choices[0].delta.tool_calls = [{ index: 0, id: 'c1', function: { name: 'f', arguments: '{}' } }]),
  (c) => (c.choices[0].delta.content = null),
  (c) => delete c.choices[0].delta.content,
  (c) => c.choices.push({ index: 1, delta: { content: 'other' }, finish_reason: null }),
  (c) => c.choices.unshift({ index: 1, delta: { content: 'other' }, finish_reason: null }),
  (c) => (c.vendor = { delta: { content: 'not this' }, index: 3 }),
  (c) => (c.system_fingerprint = '"delta":{"content":"x"}'),
  (c) => (c.choices = []),
];
const chunk = fc
  .record({
    content: text,
    model: fc.constantFrom('gpt-4o-mini', 'upstream/model "x"'),
    changed: fc.array(fc.nat(changes.length - 1), { maxLength: 3 }),
  })
  .map(({ content, model, changed }) => {
    const c: Chunk = {
      id: 'chatcmpl-1',
      object: 'chat.completion.chunk',
      created: 1,
      model,
      choices: [{ index: 0, delta: { content }, finish_reason: null }],
    };
    // a change to choice 0 after `choices = []` has nothing to change
    for (const i of changed) {
      if (c.choices.length === 0) break;
      changes[i](c);
    }
    return c;
  });

describe('pass-through text chunks read without parsing', () => {
  it('reads the text the decoder reads, and only from chunks that say nothing else', () => {
    let fast = 0;
    fc.assert(
      fc.property(chunk, fc.boolean(), (c, spaced) => {
        const data = spaced ? JSON.stringify(c, null, 1).replace(/\n\s*/g, ' ') : JSON.stringify(c);
        const got = plainTextDelta(data);
        if (got === undefined) return;
        fast++;
        const d = decoded(data);
        assert.ok(!('error' in d), `a chunk that fails to decode was read as text: ${data}`);
        const texts = d.events.filter((e) => e.type === 'text');
        assert.deepEqual(d.events, got === '' ? [] : [{ type: 'text', text: got }], data);
        assert.equal(texts.length, got === '' ? 0 : 1);
        assert.equal(d.finished, false, data);
        assert.deepEqual(d.end, [{ type: 'finish', reason: 'stop' }], `no usage in ${data}`);
        const parsed = JSON.parse(data);
        assert.equal(parsed.provider, undefined);
        assert.equal(parsed.choices.length, 1);
      }),
      { numRuns: 20000 },
    );
    assert.ok(fast > 100, `some chunks took the fast path (${fast})`);
  });

  it('takes the usual text chunk, and leaves the rest to the parser', () => {
    const plain = (content: string, more = '') =>
      `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":${JSON.stringify(content)}},"finish_reason":null${more}}]}`;
    assert.equal(plainTextDelta(plain('Hello')), 'Hello');
    assert.equal(plainTextDelta(plain('say "hi"\\n\n')), 'say "hi"\\n\n');
    assert.equal(plainTextDelta(plain('x', ',"logprobs":null')), 'x');
    assert.equal(plainTextDelta(plain('x', ',"logprobs":{"content":[]}')), undefined);
    assert.equal(plainTextDelta(plain('x').replace('"finish_reason":null', '"finish_reason":"stop"')), undefined);
    assert.equal(plainTextDelta(plain('x').replace('"index":0', '"index":1')), undefined);
    assert.equal(plainTextDelta(plain('x').replace('"delta":{', '"delta":{"role":"assistant",')), undefined);
    assert.equal(plainTextDelta(`${plain('x').slice(0, -1)},"usage":{"total_tokens":1}}`), undefined);
    assert.equal(plainTextDelta(`${plain('x').slice(0, -1)},"usage":null}`), 'x');
    assert.equal(plainTextDelta(`${plain('x').slice(0, -1)},"error":{"message":"no"}}`), undefined);
    assert.equal(plainTextDelta(`${plain('x').slice(0, -1)},"provider":"p"}`), undefined);
    assert.equal(plainTextDelta(plain('x').slice(0, -1)), undefined, 'cut short');
    assert.equal(plainTextDelta('not json'), undefined);
  });

  it('relays an unparsed chunk exactly as a parsed one', () => {
    const meta = { model: 'openai/gpt-4o-mini', provider: 'openai' };
    fc.assert(
      fc.property(text, fc.constantFrom('gpt-4o-mini', 'openai/gpt-4o-mini', 'm "q"'), (content, model) => {
        const first = `{"id":"c","model":${JSON.stringify(model)},"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`;
        const data = `{"id":"c","model":${JSON.stringify(model)},"choices":[{"index":0,"delta":{"content":${JSON.stringify(content)}},"finish_reason":null}]}`;
        const parsedRelay = new ChatRelay(meta, false);
        const lazyRelay = new ChatRelay(meta, false);
        for (const r of [parsedRelay, lazyRelay]) r.chunk({ type: 'native', data: first, json: JSON.parse(first) });
        const expected = parsedRelay.chunk({ type: 'native', data, json: JSON.parse(data) });
        assert.equal(lazyRelay.chunk({ type: 'native', data }), expected);
        // the upstream's bytes, with only the model renamed and the provider beside it
        const renamedModel = `"model":${JSON.stringify(meta.model)},"provider":${JSON.stringify(meta.provider)}`;
        assert.equal(expected, data.replace(`"model":${JSON.stringify(model)}`, renamedModel));
      }),
      { numRuns: 2000 },
    );
  });

  it('reads the text of a message-style text delta as the decoder does, and nothing else', () => {
    let fast = 0;
    const frames = fc.oneof(
      fc.record({ index: fc.nat(3), text }).map(({ index, text }) => ({
        event: 'content_block_delta',
        data: JSON.stringify({ type: 'content_block_delta', index, delta: { type: 'text_delta', text } }),
      })),
      fc
        .record({
          event: fc.constantFrom('content_block_delta', 'message_delta', 'ping', 'error'),
          type: fc.constantFrom('content_block_delta', 'message_delta'),
          index: fc.oneof(fc.nat(3), fc.constant('0')),
          delta: fc.oneof(
            fc.record({ type: fc.constantFrom('text_delta', 'thinking_delta'), text }),
            fc.record({ type: fc.constant('text_delta'), text, citations: fc.constant([]) }),
            fc.record({ type: fc.constant('text_delta'), text, note: text }),
            fc.record({ type: fc.constant('input_json_delta'), partial_json: text }),
          ),
          more: fc.option(fc.constant({ usage: { output_tokens: 3 } })),
        })
        .map(({ event, type, index, delta, more }) => ({
          event,
          data: JSON.stringify({ type, index, delta, ...(more ?? {}) }),
        })),
    );
    fc.assert(
      fc.property(frames, (frame) => {
        const got = plainTextDeltaFrame(frame);
        if (got === undefined) return;
        fast++;
        const decoder = new MessageStreamDecoder({ body: {}, hideReasoning: false }, 'anthropic');
        const events = decoder.push(frame);
        assert.deepEqual(events, got === '' ? [] : [{ type: 'text', text: got }], frame.data);
        assert.equal(decoder.done, false);
        const parsed = JSON.parse(frame.data);
        assert.deepEqual(Object.keys(parsed), ['type', 'index', 'delta']);
        assert.deepEqual(Object.keys(parsed.delta), ['type', 'text']);
      }),
      { numRuns: 10000 },
    );
    assert.ok(fast > 100, `some frames took the fast path (${fast})`);
    const plain = '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi \\"x\\""}}';
    assert.equal(plainTextDeltaFrame({ event: 'content_block_delta', data: plain }), 'Hi "x"');
    assert.equal(plainTextDeltaFrame({ event: 'message_delta', data: plain }), undefined);
    assert.equal(plainTextDeltaFrame({ event: 'content_block_delta', data: plain.slice(0, -1) }), undefined);
  });
});
