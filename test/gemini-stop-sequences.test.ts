// Stop sequences on Gemini routes, end to end: Gemini's API says only STOP, never which sequence
// (or whether one) ended an answer, so the gateway enforces them itself on a streamed upstream
// call (activities/providers/gemini/stream.ts). Messages report `stop_reason: "stop_sequence"` with
// the sequence, chat `finish_reason: "stop"`; nothing past the stop reaches the caller, and the
// charge is Gemini's running usage as of the frame that held the stop, exactly.
import assert from 'node:assert/strict';
import { startApi, newAccount, apiPost } from './support/api.js';
import { readSse } from './support/chatEnv.js';
import { startGeminiUpstream, type GeminiUpstream } from './support/upstreams/gemini.js';
import { textCost, textPrices } from './support/prices.js';
import { assertBooksBalance, settledBalances } from './support/books.js';
import { useProviderEnv } from './support/providerEnv.js';

const ENV = ['GEMINI_API_KEY', 'GEMINI_BASE_URL'];
const MODEL = 'gemini-2.0-flash';
const PRICES = textPrices('google/gemini-2.0-flash');
// The stop 'END' is split over two frames ('E' | 'ND'); Gemini's running total at the frame that
// completes it is 'one two three END four' = 5 words (the loopback counts one token a word), the
// final total would be 7.
const SCRIPT = { text: 'one two three END four five six', textChunks: ['one two three E', 'ND four', ' five six'] };
const OUTPUT_AT_STOP = 5;

describe('stop sequences on Gemini routes', function () {
  this.timeout(60_000);
  let api: Awaited<ReturnType<typeof startApi>>;
  let gemini: GeminiUpstream;
  let key: string;
  let accountId: string;
  let restoreEnv: () => Promise<void>;

  before(async () => {
    gemini = await startGeminiUpstream();
    restoreEnv = await useProviderEnv({ GEMINI_API_KEY: gemini.apiKey, GEMINI_BASE_URL: gemini.url }, ENV);
    api = await startApi();
    ({ key, accountId } = await newAccount('5'));
  });
  after(async () => {
    await api.close();
    await gemini.close();
    await restoreEnv();
  });
  beforeEach(() => gemini.reset());
  afterEach(() => assertBooksBalance());

  const usd = async () => (await settledBalances(accountId)).USD.amount;
  const post = (path: string, body: object) => apiPost(api.base, `/api/v1/${path}`, body, { key });
  const message = (extra: object) =>
    post('messages', { model: MODEL, max_tokens: 64, messages: [{ role: 'user', content: 'Count' }], ...extra });

  it('messages: stop_reason stop_sequence with the sequence, cut before it, billed at the usage of the cut', async () => {
    gemini.script(SCRIPT);
    const before = await usd();
    const res = await message({ stop_sequences: ['nope', 'END'] });
    const msg = await res.json();
    assert.equal(res.status, 200, JSON.stringify(msg));
    assert.deepEqual(msg.content, [{ type: 'text', text: 'one two three ' }]);
    assert.equal(msg.stop_reason, 'stop_sequence');
    assert.equal(msg.stop_sequence, 'END');
    assert.equal(msg.usage.output_tokens, OUTPUT_AT_STOP);
    const rec = gemini.lastRequest()!;
    assert.equal(rec.action, 'streamGenerateContent');
    assert.equal(rec.body.generationConfig?.stopSequences, undefined);
    const cost = textCost(PRICES, { input: msg.usage.input_tokens, output: OUTPUT_AT_STOP });
    assert.equal(before - (await usd()), cost);
  });

  it('messages, streamed: no text past the stop, the sequence in message_delta, billed exactly', async () => {
    gemini.script(SCRIPT);
    const before = await usd();
    const frames = await readSse(await message({ stream: true, stop_sequences: ['END'] }));
    const text = frames
      .filter((f) => f.type === 'content_block_delta')
      .map((f) => f.delta.text)
      .join('');
    assert.equal(text, 'one two three ');
    const delta = frames.find((f) => f.type === 'message_delta');
    assert.equal(delta.delta.stop_reason, 'stop_sequence');
    assert.equal(delta.delta.stop_sequence, 'END');
    assert.equal(delta.usage.output_tokens, OUTPUT_AT_STOP);
    assert.equal(frames.at(-1).type, 'message_stop');
    const input = delta.usage.input_tokens; // message_start's is the gateway's estimate
    assert.equal(before - (await usd()), textCost(PRICES, { input, output: OUTPUT_AT_STOP }));
  });

  it('messages without a match end as end_turn, with the whole text and the final usage', async () => {
    gemini.script(SCRIPT);
    const msg = await (await message({ stop_sequences: ['STOP'] })).json();
    assert.equal(msg.content[0].text, SCRIPT.text);
    assert.equal(msg.stop_reason, 'end_turn');
    assert.equal(msg.stop_sequence, null);
    assert.equal(msg.usage.output_tokens, 7);
  });

  it('chat: `stop` cuts the answer with finish_reason stop, streamed or not', async () => {
    gemini.script(SCRIPT);
    const before = await usd();
    const res = await post('chat/completions', {
      model: MODEL,
      messages: [{ role: 'user', content: 'Count' }],
      stop: 'END',
    });
    const body = await res.json();
    assert.equal(res.status, 200, JSON.stringify(body));
    assert.equal(body.choices[0].message.content, 'one two three ');
    assert.equal(body.choices[0].finish_reason, 'stop');
    assert.equal(body.usage.completion_tokens, OUTPUT_AT_STOP);
    assert.equal(before - (await usd()), textCost(PRICES, { input: body.usage.prompt_tokens, output: OUTPUT_AT_STOP }));

    gemini.script(SCRIPT);
    const frames = await readSse(
      await post('chat/completions', {
        model: MODEL,
        messages: [{ role: 'user', content: 'Count' }],
        stop: ['END'],
        stream: true,
        stream_options: { include_usage: true },
      }),
    );
    const chunks = frames.slice(0, -1);
    assert.equal(chunks.map((c) => c.choices[0]?.delta?.content ?? '').join(''), 'one two three ');
    assert.equal(chunks.find((c) => c.choices[0]?.finish_reason)?.choices[0].finish_reason, 'stop');
    assert.equal(chunks.at(-1).usage.completion_tokens, OUTPUT_AT_STOP);
  });

  it('charges each of several concurrent cut answers once, exactly', async () => {
    const n = 4;
    for (let i = 0; i < n; i++) gemini.script(SCRIPT);
    const before = await usd();
    const answers = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        message(i % 2 ? { stop_sequences: ['END'] } : { stop_sequences: ['END'], stream: true }).then((r) =>
          i % 2 ? r.json() : readSse(r),
        ),
      ),
    );
    let expected = 0n;
    for (const a of answers) {
      const input = Array.isArray(a)
        ? a.find((f) => f.type === 'message_delta').usage.input_tokens
        : a.usage.input_tokens;
      expected += textCost(PRICES, { input, output: OUTPUT_AT_STOP });
    }
    assert.equal(before - (await usd()), expected);
  });
});
