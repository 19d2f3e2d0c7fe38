// The built-in local provider against a real model: stories260K (a tiny Llama trained on
// TinyStories) run in-process by llama.cpp. Nothing is mocked: texts, token counts and
// probabilities are the model's own.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { InferenceRequest, Message, StreamEvent } from '../../activities/core/types.js';
import { localModel } from '../../activities/providers/local/engine.js';
import { countPromptTokens, countTokens, localChat } from '../../activities/providers/local/index.js';
import { findLocalModel } from '../../activities/providers/local/modelFiles.js';
import type { ProviderTarget } from '../../activities/providers/types.js';
import { RequestError } from '../../activities/core/errors.js';
import { waitFor } from '../support/wait.js';

const MODEL = 'stories260K.gguf';
const SHA256 = '270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d';

const user = (text: string): Message => ({ role: 'user', content: [{ type: 'text', text }] });
const system = (text: string): Message => ({ role: 'system', content: [{ type: 'text', text }] });
const assistant = (text: string): Message => ({ role: 'assistant', content: [{ type: 'text', text }] });

const request = (over: Partial<InferenceRequest> = {}): InferenceRequest => ({
  model: MODEL,
  messages: [user('Once upon a time')],
  maxTokens: 40,
  sampling: { temperature: 0 },
  ...over,
});

const target: ProviderTarget = { providerId: 'local', baseUrl: '', options: { sha256: SHA256 } };
const signal = () => new AbortController().signal;

async function collect(events: AsyncIterable<StreamEvent>): Promise<StreamEvent[]> {
  const out: StreamEvent[] = [];
  for await (const e of events) out.push(e);
  return out;
}

const textOf = (events: StreamEvent[]) => events.map((e) => (e.type === 'text' ? e.text : '')).join('');

async function rejectsUpstream(p: Promise<unknown>, check: (e: RequestError) => void): Promise<void> {
  await assert.rejects(p, (e: unknown) => {
    assert.ok(e instanceof RequestError, `expected RequestError, got ${String(e)}`);
    check(e);
    return true;
  });
}

/** logit_bias that bans the end-of-text token, so a story runs to maxTokens */
const noEnd = () => ({ '2': -100 });

/** The first next() of a stream, where the adapter contract puts any failure to start. */
const firstEvent = (req: InferenceRequest, t = target) =>
  localChat.stream(req, t, signal())[Symbol.asyncIterator]().next();

describe('local provider (llama.cpp in-process, stories260K)', function () {
  this.timeout(30_000);

  before(() => {
    if (!findLocalModel(MODEL))
      throw new Error(`${MODEL} is not on the model search path (LOCAL_MODELS_DIR or ../shared/models)`);
  });

  describe('completion', () => {
    it('continues "Once upon a time" with a real story', async () => {
      const r = await localChat.complete(request(), target, signal());
      assert.match(r.content, /there was a little/);
      assert.equal(r.finishReason, 'length');
      assert.deepEqual(r.toolCalls, []);
      assert.equal(r.logprobs, undefined);
    });

    it("reports the tokenizer's real counts", async () => {
      const r = await localChat.complete(
        request({ maxTokens: 30, sampling: { temperature: 0, logprobs: true } }),
        target,
        signal(),
      );
      const promptText = await countTokens(MODEL, 'Once upon a time');
      assert.equal(promptText, 4);
      assert.equal(r.usage!.promptTokens, promptText + 1, 'the prompt plus the start token');
      assert.equal(r.usage!.promptTokens, await countPromptTokens(MODEL, request()));
      assert.equal(r.usage!.completionTokens, 30);
      assert.equal(r.logprobs!.length, 30, 'one logprob per generated token');
      // the greedy answer is the tokenizer's own segmentation of its text
      assert.equal(await countTokens(MODEL, `Once upon a time${r.content}`), promptText + r.usage!.completionTokens);
      assert.equal(r.usage!.reasoningTokens, 0);
      assert.ok(r.usage!.cachedTokens <= r.usage!.promptTokens);
    });

    it('stops at maxTokens with finish "length"', async () => {
      const r = await localChat.complete(request({ maxTokens: 5 }), target, signal());
      assert.equal(r.finishReason, 'length');
      assert.equal(r.usage!.completionTokens, 5);
      assert.equal(await countTokens(MODEL, `Once upon a time${r.content}`), 4 + 5);
    });

    it('stops at a stop sequence, which is not part of the output', async () => {
      const full = await localChat.complete(request({ maxTokens: 60 }), target, signal());
      const at = full.content.indexOf('Lily');
      assert.ok(at > 0, `the greedy story names Lily: ${full.content}`);
      const r = await localChat.complete(
        request({ maxTokens: 60, sampling: { temperature: 0, stop: ['Lily', 'never seen'] } }),
        target,
        signal(),
      );
      assert.equal(r.finishReason, 'stop');
      assert.equal(r.content, full.content.slice(0, at));
      assert.ok(r.usage!.completionTokens < 60);
    });

    it('uses a legacy prompt verbatim', async () => {
      const viaPrompt = await localChat.complete(
        request({ messages: [], prompt: 'Once upon a time' }),
        target,
        signal(),
      );
      const viaMessage = await localChat.complete(request(), target, signal());
      assert.equal(viaPrompt.content, viaMessage.content);
      assert.equal(viaPrompt.usage!.promptTokens, 5);
    });

    it('answers a chat-style request (system + user) from the plain-text rendering', async () => {
      const req = request({ messages: [system('Tom had a red ball.'), user('One day, Tom')], maxTokens: 30 });
      const r = await localChat.complete(req, target, signal());
      assert.match(r.content, /[a-z]{3,}/);
      assert.equal(r.usage!.promptTokens, (await countTokens(MODEL, 'Tom had a red ball.\n\nOne day, Tom')) + 1);
      assert.equal(await countPromptTokens(MODEL, req), r.usage!.promptTokens);
      // an assistant turn at the end is continued, not answered
      const prefill = await localChat.complete(
        request({ messages: [user('Once upon a time'), assistant('there was a')] }),
        target,
        signal(),
      );
      assert.equal(prefill.usage!.promptTokens, (await countTokens(MODEL, 'Once upon a time\n\nthere was a')) + 1);
    });

    it('samples reproducibly from a seed, and differently without one', async () => {
      const seeded = request({ maxTokens: 40, sampling: { temperature: 1, seed: 7 } });
      const a = await localChat.complete(seeded, target, signal());
      const b = await localChat.complete(seeded, target, signal());
      assert.equal(a.content, b.content);
      const unseeded = await Promise.all(
        [1, 2, 3].map(() =>
          localChat.complete(request({ maxTokens: 40, sampling: { temperature: 1.5 } }), target, signal()),
        ),
      );
      assert.ok(new Set(unseeded.map((r) => r.content)).size > 1, 'unseeded samples differ');
    });
  });

  describe('logprobs', () => {
    it("are the model's next-token probabilities, with sorted alternatives", async () => {
      const r = await localChat.complete(
        request({ maxTokens: 12, sampling: { temperature: 0, logprobs: true, topLogprobs: 3 } }),
        target,
        signal(),
      );
      assert.equal(r.logprobs!.length, 12);
      assert.equal(r.logprobs!.map((l) => l.token).join(''), r.content, 'token texts keep their leading spaces');
      for (const l of r.logprobs!) {
        assert.ok(l.logprob <= 0 && Number.isFinite(l.logprob));
        assert.equal(l.topLogprobs!.length, 3);
        const tops = l.topLogprobs!.map((t) => t.logprob);
        assert.deepEqual(
          tops,
          [...tops].sort((x, y) => y - x),
          'most likely first',
        );
        // greedy: the chosen token is the most likely one
        assert.equal(l.topLogprobs![0].token, l.token);
        assert.equal(l.topLogprobs![0].logprob, l.logprob);
        assert.deepEqual(l.bytes, [...Buffer.from(l.token)]);
      }
      // ", there was a little girl" is what the model strongly expects after "Once upon a time"
      assert.equal(r.logprobs![0].token, ',');
      assert.ok(r.logprobs![0].logprob > Math.log(0.5));
      const probabilityMass = r.logprobs![0].topLogprobs!.reduce((s, t) => s + Math.exp(t.logprob), 0);
      assert.ok(probabilityMass > 0.9 && probabilityMass <= 1.0001);
    });

    it('give no alternatives when topLogprobs is not asked for', async () => {
      const r = await localChat.complete(
        request({ maxTokens: 4, sampling: { temperature: 0, logprobs: true } }),
        target,
        signal(),
      );
      assert.equal(r.logprobs!.length, 4);
      assert.ok(r.logprobs!.every((l) => l.topLogprobs === undefined && l.logprob <= 0));
    });
  });

  describe('streaming', () => {
    it('streams the same text as the non-streamed run, then finish and usage', async () => {
      for (const sampling of [{ temperature: 0 }, { temperature: 0.9, seed: 42 }]) {
        const req = request({ maxTokens: 50, sampling });
        const whole = await localChat.complete(req, target, signal());
        const events = await collect(localChat.stream(req, target, signal()));
        const texts = events.filter((e) => e.type === 'text');
        assert.ok(texts.length >= 10, `several text events, got ${texts.length}`);
        assert.equal(textOf(events), whole.content);
        assert.deepEqual(
          events.slice(-2).map((e) => e.type),
          ['finish', 'usage'],
        );
        assert.deepEqual(events.at(-2), { type: 'finish', reason: 'length' });
        const usage = events.at(-1) as Extract<StreamEvent, { type: 'usage' }>;
        assert.equal(usage.usage.promptTokens, 5);
        assert.equal(usage.usage.completionTokens, 50);
      }
    });

    it('attaches logprobs to the text events', async () => {
      const events = await collect(
        localChat.stream(
          request({ maxTokens: 20, sampling: { temperature: 0, logprobs: true, topLogprobs: 2 } }),
          target,
          signal(),
        ),
      );
      const lps = events.flatMap((e) => (e.type === 'text' ? (e.logprobs ?? []) : []));
      assert.equal(lps.length, 20);
      assert.equal(lps.map((l) => l.token).join(''), textOf(events));
      assert.ok(lps.every((l) => l.logprob <= 0 && l.topLogprobs!.length === 2));
    });

    it('holds back text that may begin a stop sequence, and never streams the stop sequence', async () => {
      const req = request({ maxTokens: 60, sampling: { temperature: 0, stop: ['girl named Lily'] } });
      const events = await collect(localChat.stream(req, target, signal()));
      const text = textOf(events);
      assert.equal(text, (await localChat.complete(req, target, signal())).content);
      assert.ok(text.endsWith('a little '), text);
      // the finish names the request's stop sequence that ended the answer
      assert.deepEqual(events.at(-2), { type: 'finish', reason: 'stop', stopSequence: 'girl named Lily' });
      assert.equal((await localChat.complete(req, target, signal())).stopSequence, 'girl named Lily');
    });

    it('stops promptly when aborted mid-stream and frees the model for the next request', async () => {
      const lm = await localModel(MODEL);
      const ac = new AbortController();
      // as long a story as the context allows, the end token banned: seconds of work
      const req = request({
        maxTokens: lm.contextSize - 5,
        sampling: { temperature: 0.8, seed: 1, logitBias: noEnd() },
      });
      const it = localChat.stream(req, target, ac.signal)[Symbol.asyncIterator]();
      for (let i = 0; i < 3; i++) assert.equal((await it.next()).value?.type, 'text');
      const t0 = Date.now();
      ac.abort();
      await rejectsUpstream(it.next(), (e) => {
        assert.equal(e.status, 499);
        assert.equal(e.code, 'aborted');
        assert.equal(e.retryable, false);
      });
      assert.ok(Date.now() - t0 < 200, 'the reader hears of the abort at once');
      // the sequence goes back as soon as the token being computed is done, long before the story would end
      while (lm.pool.available < lm.context.totalSequences) {
        assert.ok(Date.now() - t0 < 300, 'the sequence came back');
        await new Promise((r) => setTimeout(r, 5));
      }
      const after = await localChat.complete(request(), target, signal());
      assert.match(after.content, /there was a little/);
    });

    it('an abort while waiting for a busy model leaves the queue', async () => {
      const lm = await localModel(MODEL);
      const total = lm.context.totalSequences;
      const busy = Array.from({ length: total }, () =>
        localChat.complete(
          request({ maxTokens: 300, sampling: { temperature: 0, logitBias: noEnd() } }),
          target,
          signal(),
        ),
      );
      const ac = new AbortController();
      const waiting = localChat.complete(request(), target, ac.signal);
      await waitFor(() => lm.pool.queued > 0, 5_000, 'the request to wait for a sequence');
      ac.abort();
      await rejectsUpstream(waiting, (e) => assert.equal(e.status, 499));
      assert.equal(lm.pool.queued, 0);
      await Promise.all(busy);
    });

    it('a timeout (AbortSignal.timeout) is a retryable 504', async () => {
      const events = localChat.stream(
        request({ maxTokens: 1500, sampling: { temperature: 0, logitBias: noEnd() } }),
        target,
        AbortSignal.timeout(50),
      );
      await rejectsUpstream(collect(events), (e) => {
        assert.equal(e.status, 504);
        assert.equal(e.retryable, true);
        assert.equal(e.code, 'upstream_timeout');
      });
    });
  });

  describe('concurrency', () => {
    it('serves concurrent requests without mixing them up', async () => {
      const prompts = [
        'Once upon a time',
        'The little dog',
        'Tom and Sue went to the park',
        'One day, a girl named Mia',
      ];
      const alone: string[] = [];
      for (const p of prompts)
        alone.push((await localChat.complete(request({ messages: [user(p)] }), target, signal())).content);
      const together = await Promise.all(
        prompts.map((p) => localChat.complete(request({ messages: [user(p)] }), target, signal())),
      );
      assert.deepEqual(
        together.map((r) => r.content),
        alone,
      );
      assert.ok(together.every((r) => r.usage!.completionTokens === 40));
    });
  });

  describe('what it refuses', () => {
    const refusals: Array<[string, Partial<InferenceRequest>]> = [
      ['tools', { tools: [{ name: 'get_weather', parameters: { type: 'object' } }] }],
      [
        'images',
        {
          messages: [
            {
              role: 'user',
              content: [
                { type: 'text', text: 'What is this?' },
                { type: 'image', url: 'https://example.com/cat.png' },
              ],
            },
          ],
        },
      ],
      ['json_schema', { responseFormat: { type: 'json_schema', name: 'story', schema: { type: 'object' } } }],
      [
        'tool results',
        { messages: [user('hi'), { role: 'tool', toolCallId: 'call_1', content: [{ type: 'text', text: '42' }] }] },
      ],
    ];
    for (const [what, over] of refusals) {
      it(`refuses ${what} with a 400, also from a stream's first next()`, async () => {
        const check = (e: RequestError) => {
          assert.equal(e.status, 400);
          assert.equal(e.retryable, false);
          assert.equal(e.code, 'unsupported_by_model');
          assert.match(e.message, /local model cannot/);
        };
        await rejectsUpstream(localChat.complete(request(over), target, signal()), check);
        await rejectsUpstream(firstEvent(request(over)), check);
      });
    }

    it('refuses a request larger than the context, with the numbers', async () => {
      const lm = await localModel(MODEL);
      await rejectsUpstream(localChat.complete(request({ maxTokens: lm.contextSize }), target, signal()), (e) => {
        assert.equal(e.status, 400);
        assert.equal(e.code, 'context_length_exceeded');
        assert.match(
          e.message,
          new RegExp(
            `${lm.contextSize + 5} tokens \\(5 in the prompt \\+ ${lm.contextSize} max output\\).*context of ${lm.contextSize}`,
          ),
        );
      });
    });

    it('a missing model file is a 503 naming the searched directories to the operator only', async () => {
      const check = (e: RequestError) => {
        assert.equal(e.status, 503);
        assert.equal(e.retryable, false);
        assert.equal(e.code, 'local_model_missing');
        assert.match(e.opts.detail ?? '', /no-such-model\.gguf was not found; looked in .*shared[/\\]models/);
        assert.doesNotMatch(e.message, /shared|gguf/, 'no file system paths for the caller');
      };
      await rejectsUpstream(localChat.complete(request({ model: 'no-such-model.gguf' }), target, signal()), check);
      await rejectsUpstream(firstEvent(request({ model: 'no-such-model.gguf' })), check);
    });

    it('a file that does not match its sha256 is refused', async () => {
      const wrong = { ...target, options: { sha256: '0'.repeat(64) } };
      await rejectsUpstream(localChat.complete(request(), wrong, signal()), (e) => {
        assert.equal(e.status, 503);
        assert.equal(e.code, 'local_model_corrupt');
      });
    });
  });

  describe('a model with a chat template', () => {
    let templated: string;

    before(() => {
      // stories260K plus a ChatML template in its metadata: the template path on a real model
      templated = path.join(os.tmpdir(), `stories260K-chatml-${process.pid}.gguf`);
      writeFileSync(
        templated,
        withMetadataString(readFileSync(findLocalModel(MODEL)!), 'tokenizer.chat_template', CHATML),
      );
    });

    it('renders messages with the template', async () => {
      const req = request({
        model: templated,
        messages: [system('You tell stories.'), user('Once upon a time')],
        maxTokens: 20,
      });
      const r = await localChat.complete(req, { ...target, options: {} }, signal());
      const plain = (await countTokens(MODEL, 'You tell stories.\n\nOnce upon a time')) + 1;
      assert.equal(r.usage!.promptTokens, await countPromptTokens(templated, req));
      // the role markers and turn separators of ChatML are in the prompt
      assert.ok(
        r.usage!.promptTokens > plain + 10,
        `templated prompt ${r.usage!.promptTokens} tokens vs plain ${plain}`,
      );
      assert.ok(r.usage!.completionTokens > 0);
      assert.ok(['stop', 'length'].includes(r.finishReason));
      // a legacy prompt stays verbatim even on a chat model
      const raw = await localChat.complete(
        request({ model: templated, messages: [], prompt: 'Once upon a time' }),
        { ...target, options: {} },
        signal(),
      );
      assert.equal(raw.usage!.promptTokens, 5);
    });
  });
});

const CHATML =
  "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}" +
  "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

/**
 * A copy of a GGUF file with one more string metadata entry. The layout: header (magic, version,
 * tensor count, metadata count), metadata entries, tensor infos, padding to the alignment, tensor
 * data; tensor offsets are relative to the data, so only the padding has to be recomputed.
 */
function withMetadataString(file: Buffer, key: string, value: string): Buffer {
  let at = 4 + 4;
  const tensorCount = Number(file.readBigUInt64LE(at));
  const kvCount = Number(file.readBigUInt64LE(at + 8));
  at += 16;
  const readString = () => {
    const n = Number(file.readBigUInt64LE(at));
    const s = file.toString('utf8', at + 8, at + 8 + n);
    at += 8 + n;
    return s;
  };
  const sizes: Record<number, number> = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };
  const skipValue = (type: number): number | undefined => {
    if (type === 8) return void readString();
    if (type === 9) {
      const itemType = file.readUInt32LE(at);
      const n = Number(file.readBigUInt64LE(at + 4));
      at += 12;
      for (let i = 0; i < n; i++) skipValue(itemType);
      return;
    }
    const value = type === 4 ? file.readUInt32LE(at) : undefined;
    at += sizes[type];
    return value;
  };
  let alignment = 32;
  for (let i = 0; i < kvCount; i++) {
    const k = readString();
    const type = file.readUInt32LE(at);
    at += 4;
    const v = skipValue(type);
    if (k === 'general.alignment' && v !== undefined) alignment = v;
  }
  const metadataEnd = at;
  for (let i = 0; i < tensorCount; i++) {
    readString();
    const dims = file.readUInt32LE(at);
    at += 4 + dims * 8 + 4 + 8;
  }
  const infoEnd = at;
  const dataStart = Math.ceil(infoEnd / alignment) * alignment;

  const keyBytes = Buffer.from(key, 'utf8');
  const valueBytes = Buffer.from(value, 'utf8');
  const entry = Buffer.alloc(8 + keyBytes.length + 4 + 8 + valueBytes.length);
  entry.writeBigUInt64LE(BigInt(keyBytes.length), 0);
  keyBytes.copy(entry, 8);
  entry.writeUInt32LE(8, 8 + keyBytes.length);
  entry.writeBigUInt64LE(BigInt(valueBytes.length), 12 + keyBytes.length);
  valueBytes.copy(entry, 20 + keyBytes.length);

  const header = Buffer.from(file.subarray(0, 24));
  header.writeBigUInt64LE(BigInt(kvCount + 1), 16);
  const info = Buffer.concat([header, file.subarray(24, metadataEnd), entry, file.subarray(metadataEnd, infoEnd)]);
  const padding = Buffer.alloc((alignment - (info.length % alignment)) % alignment);
  return Buffer.concat([info, padding, file.subarray(dataStart)]);
}
