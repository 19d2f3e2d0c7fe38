// The text surfaces' codecs (activities/surfaces/codecs/), without a provider: what each refuses
// of its own, what it tells `prepare`, and how it renders a whole answer and a stream.
import assert from 'node:assert/strict';
import type { Route } from '../../activities/catalog/catalog.js';
import { RequestError } from '../../activities/core/errors.js';
import type { Completed } from '../../activities/inference/answer.js';
import type { TextCodec } from '../../activities/inference/codec.js';
import { chatCodec } from '../../activities/surfaces/codecs/chat.js';
import { completionsCodec } from '../../activities/surfaces/codecs/completions.js';
import { messagesCodec } from '../../activities/surfaces/codecs/messages.js';
import { responsesCodec } from '../../activities/surfaces/codecs/responses.js';
import { talkToGptCodec } from '../../activities/surfaces/codecs/talkToGpt.js';
import { FakeExchange, FakeSink, fakeCall, model, result, textRun } from './fakes.js';

const route = { provider: { id: 'openai' }, upstreamModel: 'gpt-test' } as unknown as Route;
const done = (content = 'hello'): Completed =>
  ({
    result: result({ content }),
    route,
    usage: { promptTokens: 3, cachedTokens: 0, cacheWriteTokens: 0, completionTokens: 2, reasoningTokens: 0 },
    bill: { amount: 0.5, currency: 'USD', cost: 0.5, paymentSource: 'USD', remainingBalance: 9.5 },
  }) as unknown as Completed;

const runOf = (c: TextCodec, body: Record<string, unknown> = { model: 'openai/gpt-test' }) =>
  textRun({ codec: c as TextCodec, body });

describe('text codecs (unit)', () => {
  it('every surface names its envelope and schema; the add-ons each offers', () => {
    const offers = (c: TextCodec) =>
      ['redaction', 'moderation', 'webSearch', 'x402', 'advisor'].filter((k) => c[k as keyof TextCodec] === true);
    assert.deepEqual(offers(chatCodec as TextCodec), ['redaction', 'moderation', 'webSearch', 'x402', 'advisor']);
    assert.deepEqual(offers(completionsCodec as TextCodec), ['redaction', 'x402']);
    assert.deepEqual(offers(messagesCodec as TextCodec), ['redaction']);
    assert.deepEqual(offers(responsesCodec as TextCodec), ['redaction', 'webSearch']);
    assert.deepEqual(offers(talkToGptCodec as TextCodec), ['redaction', 'webSearch']);
    assert.equal(messagesCodec.envelope, 'message');
    assert.equal(talkToGptCodec.envelope, 'legacy');
  });

  it("chat: the questions format is refused beside 'advisor'", () => {
    const body = { response_format: { type: 'questions', questions: { a: {} } }, advisor: { model: 'x' } };
    assert.throws(
      () => chatCodec.questions!.find(body),
      (e: RequestError) => e.opts?.param === 'response_format',
    );
    assert.deepEqual(chatCodec.questions!.find({ response_format: { type: 'questions', questions: { a: {} } } }), {
      a: {},
    });
    assert.equal(chatCodec.questions!.find({}), undefined);
  });

  it('completions: a billing mode in the body pays as you go', () => {
    const { run } = runOf(completionsCodec as TextCodec, { model: 'm', billing_mode: 'paygo' });
    assert.deepEqual(completionsCodec.prepareExtra!(run as never), { forcePaygo: true });
    const plain = runOf(completionsCodec as TextCodec).run;
    assert.deepEqual(completionsCodec.prepareExtra!(plain as never), { forcePaygo: false });
    assert.equal(completionsCodec.answered!(result({ content: '', reasoning: 'r' })), false);
  });

  it('talk-to-gpt: the reply as text, then what it cost in the tag', () => {
    const { run } = runOf(talkToGptCodec as TextCodec);
    const text = talkToGptCodec.whole(run as never, fakeCall(result()).call, done('the reply')) as string;
    assert.equal(talkToGptCodec.contentType, 'text/plain; charset=utf-8');
    assert.ok(text.startsWith('the reply'), text);
    assert.match(text, /<NanoGPT>.*"cost".*<\/NanoGPT>/s);
  });

  it('messages: a TEE model is not streamed here; the beta header goes to the upstreams that read it', () => {
    const { run } = runOf(messagesCodec as TextCodec, { model: 'TEE/x', stream: true });
    // a TEE model: one served by a provider that attests
    run.model = {
      ...model('TEE/x'),
      routes: [{ available: true, provider: { id: 'tee', protocol: 'openai-tee' } }],
    } as never;
    assert.throws(
      () => messagesCodec.answerOther!(run as never),
      (e: RequestError) => e.opts?.param === 'stream',
    );
    const extra = messagesCodec.prepareExtra!(runOf(messagesCodec as TextCodec, { model: 'm' }).run as never);
    assert.equal(extra.passHeaders, undefined);
    const told = new FakeExchange();
    told.headers['anthropic-beta'] = 'tools-2024';
    const withBeta = textRun({ codec: messagesCodec as TextCodec, ex: told, body: { model: 'm', messages: [] } });
    assert.deepEqual(messagesCodec.prepareExtra!(withBeta.run as never).passHeaders, {
      'anthropic-beta': 'tools-2024',
    });
  });

  it('responses: a masked request is not answered in the background', () => {
    const { run } = runOf(responsesCodec as TextCodec, { model: 'm', background: true });
    run.redaction = {} as never;
    assert.throws(
      () => responsesCodec.answerOther!(run as never),
      (e: RequestError) => e.opts?.param === 'background',
    );
    assert.equal(responsesCodec.answerOther!(runOf(responsesCodec as TextCodec).run as never), undefined);
  });

  it('chat: a whole answer is a chat.completion with the bill; a stream is chunks, then [DONE]', async () => {
    const { run } = runOf(chatCodec as TextCodec);
    const { call } = fakeCall(result());
    const whole = (await chatCodec.whole(run as never, call, done('hi'))) as Record<string, any>;
    assert.equal(whole.object, 'chat.completion');
    assert.equal(whole.id, 'chatcmpl-0123456789abcdef');
    assert.equal(whole.choices[0].message.content, 'hi');
    const sink = new FakeSink();
    const surface = chatCodec.stream!(run as never, call, sink, route);
    await surface.start?.();
    await surface.event({ type: 'text', text: 'hi' });
    await surface.end({ finish: 'stop', usage: done().usage, bill: done().bill });
    const frames = sink.frames.map((f) => f.data);
    assert.equal(frames.at(-1), '[DONE]');
    assert.ok(frames.length >= 3);
  });

  it('chat: a relayed stream that broke ends with an error frame, the bill, then [DONE]', async () => {
    const { run } = runOf(chatCodec as TextCodec);
    const sink = new FakeSink();
    const surface = chatCodec.relay!(run as never, fakeCall(result()).call, sink, route);
    const failure = new RequestError(502, 'upstream_stream_cut', 'cut');
    await surface.end({ finish: 'stop', usage: done().usage, bill: done().bill, failure });
    const frames = sink.frames.map((f) => f.data) as Array<Record<string, any> | string>;
    assert.equal((frames[0] as Record<string, any>).error.code, 'upstream_stream_cut');
    assert.equal(frames.at(-1), '[DONE]');
  });
});
