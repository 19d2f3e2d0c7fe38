// Third-party JavaScript clients, unchanged but for their base URL, against the gateway: the
// Vercel AI SDK (its OpenAI-compatible, OpenAI and Anthropic providers), the npm `nanogpt` client,
// and the model routes the official SDKs call beyond chat (`models.retrieve`, Anthropic's model
// shape, Responses' input items). Text, embeddings and speech run on the built-in local models
// (offline); images on an OpenAI-protocol loopback upstream. Each test is a row of the README's
// compatibility table (test/support/compat.ts).
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import {
  embed,
  experimental_generateSpeech,
  experimental_transcribe,
  generateImage,
  generateText,
  streamText,
} from 'ai';
import { NanoGPT } from 'nanogpt';
import { choice, noul, score, TypeSafeClient } from '@typesafe-ai/sdk';
import { newAccount, startApi } from './support/api.js';
import { assertBooksBalance, settledBalances } from './support/books.js';
import { compat, saveCompatReport } from './support/compat.js';
import { useProviderEnv } from './support/providerEnv.js';
import { type OpenAIMediaUpstream, startOpenAIMediaUpstream } from './support/upstreams/openaiMedia.js';
import { toneWav } from './support/upstreams/transcription.js';
import { parseAmount } from '../activities/core/money.js';

const LOCAL = 'local/stories260k';
const MINILM = 'local/all-minilm-l6-v2';
const ESPEAK = 'local/espeak';
const IMAGE = 'openai/gpt-image-1';

describe('third-party JavaScript clients, by base URL only', function () {
  this.timeout(120_000);
  let api: Awaited<ReturnType<typeof startApi>>;
  let up: OpenAIMediaUpstream;
  let restoreEnv: () => Promise<void>;
  let key: string;
  let accountId: string;

  before(async () => {
    up = await startOpenAIMediaUpstream();
    restoreEnv = await useProviderEnv({ OPENAI_API_KEY: up.apiKey, OPENAI_BASE_URL: up.url }, ['OPENROUTER_API_KEY']);
    api = await startApi();
    ({ key, accountId } = await newAccount('10'));
  });
  after(async () => {
    await api.close();
    await up.close();
    await restoreEnv();
    await saveCompatReport();
  });
  afterEach(() => assertBooksBalance());

  const spent = async () => parseAmount('10', 'USD') - (await settledBalances(accountId)).USD.amount;

  describe('Vercel AI SDK', () => {
    const compatible = () =>
      createOpenAICompatible({ name: 'switchyard', baseURL: `${api.base}/api/v1`, apiKey: key, includeUsage: true });
    const openai = () => createOpenAI({ baseURL: `${api.base}/api/v1`, apiKey: key });
    const anthropic = () => createAnthropic({ baseURL: `${api.base}/api/v1`, apiKey: key });

    compat('ai + @ai-sdk/openai-compatible', 'chat', async () => {
      const before = await spent();
      const r = await generateText({
        model: compatible().chatModel(LOCAL),
        prompt: 'Once upon a time',
        maxOutputTokens: 12,
      });
      assert.ok(r.text.length > 0);
      assert.ok((r.usage.outputTokens ?? 0) > 0 && (r.usage.outputTokens ?? 0) <= 12);
      assert.ok((await spent()) > before, 'charged');
    });

    compat('ai + @ai-sdk/openai-compatible', 'streaming', async () => {
      const r = streamText({ model: compatible().chatModel(LOCAL), prompt: 'Once upon a time', maxOutputTokens: 12 });
      let parts = 0;
      for await (const t of r.textStream) if (t) parts++;
      assert.ok(parts > 1, 'several text parts');
      assert.equal(await r.finishReason, 'length');
      assert.ok(((await r.usage).outputTokens ?? 0) > 0);
    });

    compat('ai + @ai-sdk/openai-compatible', 'embeddings', async () => {
      const a = await embed({ model: compatible().embeddingModel(MINILM), value: 'The cat sat on the mat.' });
      assert.equal(a.embedding.length, 384);
      assert.ok(a.usage.tokens > 0);
    });

    compat('ai + @ai-sdk/openai-compatible', 'images', async () => {
      const r = await generateImage({ model: compatible().imageModel(IMAGE), prompt: 'a red square', n: 1 });
      assert.equal(r.images.length, 1);
      assert.deepEqual(Buffer.from(r.images[0]!.uint8Array), up.images.imageFor('a red square', 0));
    });

    compat('ai + @ai-sdk/openai', 'chat (Responses API)', async () => {
      // the provider's default model is the Responses API
      const r = await generateText({ model: openai()(LOCAL), prompt: 'Once upon a time', maxOutputTokens: 12 });
      assert.ok(r.text.length > 0);
      assert.ok((r.usage.inputTokens ?? 0) > 0);
    });

    compat('ai + @ai-sdk/openai', 'streaming (Responses API)', async () => {
      const r = streamText({ model: openai()(LOCAL), prompt: 'Once upon a time', maxOutputTokens: 12 });
      let text = '';
      for await (const t of r.textStream) text += t;
      assert.ok(text.length > 0);
      assert.ok(((await r.usage).outputTokens ?? 0) > 0);
    });

    compat('ai + @ai-sdk/openai', 'chat (Chat Completions)', async () => {
      const r = await generateText({ model: openai().chat(LOCAL), prompt: 'Once upon a time', maxOutputTokens: 12 });
      assert.ok(r.text.length > 0);
    });

    compat('ai + @ai-sdk/openai', 'embeddings', async () => {
      const r = await embed({ model: openai().embeddingModel(MINILM), value: 'hello' });
      assert.equal(r.embedding.length, 384);
    });

    compat('ai + @ai-sdk/openai', 'speech', async () => {
      const r = await experimental_generateSpeech({
        model: openai().speech(ESPEAK),
        text: 'Hello there.',
        voice: 'alloy',
      });
      const mp3 = Buffer.from(r.audio.uint8Array);
      assert.ok(mp3.length > 500, 'audio');
      // an MP3 frame sync or an ID3 tag
      assert.ok(mp3.subarray(0, 3).toString('latin1') === 'ID3' || (mp3[0] === 0xff && (mp3[1]! & 0xe0) === 0xe0));
    });

    compat('ai + @ai-sdk/openai', 'images', async () => {
      // by the alias the SDK knows: it sends up to 10 images per call to gpt-image-1, one per call to ids it does not know
      const r = await generateImage({ model: openai().image('gpt-image-1'), prompt: 'a blue square', n: 2 });
      assert.equal(up.images.requests.at(-1)!.body.n, 2);
      assert.equal(r.images.length, 2);
      assert.deepEqual(Buffer.from(r.images[1]!.uint8Array), up.images.imageFor('a blue square', 1));
    });

    compat('ai + @ai-sdk/openai', 'transcription', async () => {
      up.transcription.script({ text: 'testing one two' });
      // by default the SDK asks for json: the text and the seconds billed (whole, as OpenAI reports them)
      const plain = await experimental_transcribe({ model: openai().transcription('whisper-1'), audio: toneWav(2.2) });
      assert.equal(plain.text, 'testing one two');
      assert.equal(plain.durationInSeconds, 3);
      // with provider options it asks for verbose_json: the measured length and the segments
      up.transcription.script({ text: 'testing one two' });
      const r = await experimental_transcribe({
        model: openai().transcription('whisper-1'),
        audio: toneWav(2.2),
        providerOptions: { openai: { timestampGranularities: ['segment'] } },
      });
      assert.equal(r.durationInSeconds, 2.2);
      assert.deepEqual(
        r.segments.map((s) => s.text.trim()),
        ['testing one', 'two'],
      );
    });

    compat('ai + @ai-sdk/anthropic', 'chat (Messages API)', async () => {
      const r = await generateText({ model: anthropic()(LOCAL), prompt: 'Once upon a time', maxOutputTokens: 12 });
      assert.ok(r.text.length > 0);
      assert.equal(r.finishReason, 'length');
    });

    compat('ai + @ai-sdk/anthropic', 'streaming (Messages API)', async () => {
      const r = streamText({ model: anthropic()(LOCAL), prompt: 'Once upon a time', maxOutputTokens: 12 });
      let text = '';
      for await (const t of r.textStream) text += t;
      assert.ok(text.length > 0);
      assert.ok(((await r.usage).outputTokens ?? 0) > 0);
    });
  });

  describe('TypeSafe decision SDK', () => {
    const client = () =>
      new TypeSafeClient({ apiKey: key, baseURL: `${api.base}/api`, defaultModel: 'decider-latest' });

    compat('@typesafe-ai/sdk', 'decisions', async () => {
      const before = await spent();
      const r = await client().systemOne({
        state: { document: 'I was charged twice. Please fix this.' },
        questions: {
          category: choice('What is this ticket about?', { billing: null, technical: null, other: null }),
          urgent: noul('Is it urgent?'),
          mood: score('How upset is the customer?', ['calm', 'annoyed', 'furious']),
        },
      });
      assert.equal(r.model, 'local/decider-260k');
      const probs = Object.values(r.answers.category.probabilities) as number[];
      assert.ok(Math.abs(probs.reduce((a, b) => a + b, 0) - 1) < 1e-9);
      assert.ok(['billing', 'technical', 'other'].includes(r.answers.category.choice));
      assert.ok(r.answers.urgent.noul >= 0 && r.answers.urgent.noul <= 1);
      assert.ok(r.answers.mood.score >= 0 && r.answers.mood.score <= 2);
      assert.ok(r.usage.input_tokens > 0);
      assert.ok((await spent()) > before, 'charged');
    });

    compat('@typesafe-ai/sdk', 'model discovery', async () => {
      const models = await client().models.list();
      assert.ok(models.some((m) => m.name === 'local/decider-260k'));
      for (const m of models) assert.match(m.release_date, /^\d{4}-\d{2}-\d{2}$/);
      // the OpenAI-style list on the same path is unchanged for everyone else
      const plain = (await (await fetch(`${api.base}/api/v1/models`)).json()) as any;
      assert.equal(plain.object, 'list');
    });
  });

  describe('npm nanogpt client', () => {
    // Its base URL is fixed in its code (https://nano-gpt.com/api/): pointing it here is what a
    // hosts-file entry or a proxy would do, so the test rewrites that origin in fetch.
    let realFetch: typeof fetch;
    before(() => {
      realFetch = globalThis.fetch;
      globalThis.fetch = ((input: string | URL | Request, init?: RequestInit) => {
        const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
        return realFetch(url.replace('https://nano-gpt.com/', `${api.base}/`), init);
      }) as typeof fetch;
    });
    after(() => {
      globalThis.fetch = realFetch;
    });
    const client = () => NanoGPT({ apiKey: key, defaultModel: LOCAL });

    compat('nanogpt (npm)', 'chat', async () => {
      const r = await client().chat({
        prompt: 'Once upon a time',
        context: [{ role: 'user', content: 'Tell a story.' }],
      });
      assert.ok(r.reply.length > 0);
      assert.equal(typeof r.metadata.cost, 'number');
      assert.ok(r.metadata.outputTokens > 0);
    });

    compat('nanogpt (npm)', 'images', async () => {
      const r = await client().image({ prompt: 'a green square', model: IMAGE, width: 1024, height: 1024 });
      assert.deepEqual(Buffer.from(r.base64, 'base64'), up.images.imageFor('a green square', 0));
      assert.equal(typeof r.metadata.cost, 'number');
    });

    compat('nanogpt (npm)', 'balance', async () => {
      const account = await client().account();
      assert.equal(parseAmount(account.usd_balance, 'USD'), parseAmount('10', 'USD') - (await spent()));
      // `balance` is the Nano balance, a decimal string (30 places do not fit a number)
      assert.equal(account.balance, '0');
      assert.equal(await client().balance(), '0');
    });

    compat('nanogpt (npm)', 'model discovery', async () => {
      const m = await client().models();
      assert.equal(m.models.text[LOCAL].model, LOCAL);
      assert.equal(m.models.embedding[MINILM].name, 'all-MiniLM-L6-v2 (local)');
    });
  });

  describe('official SDKs beyond chat', () => {
    const openaiSdk = () => new OpenAI({ apiKey: key, baseURL: `${api.base}/v1`, maxRetries: 0 });
    const anthropicSdk = () => new Anthropic({ apiKey: key, baseURL: `${api.base}/api`, maxRetries: 0 });

    compat('openai (JS)', 'model discovery', async () => {
      const m = await openaiSdk().models.retrieve(LOCAL);
      assert.deepEqual(Object.keys(m).sort(), ['created', 'id', 'object', 'owned_by']);
      assert.equal(m.id, LOCAL);
      // an alias names the same model
      assert.equal((await openaiSdk().models.retrieve('stories260k')).id, LOCAL);
      await assert.rejects(openaiSdk().models.retrieve('no/such-model'), (e: any) => e.status === 404);
    });

    compat('@anthropic-ai/sdk (JS)', 'model discovery', async () => {
      const first = await anthropicSdk().models.list({ limit: 2 });
      assert.equal(first.data.length, 2);
      for (const m of first.data) {
        assert.equal(m.type, 'model');
        assert.ok(!Number.isNaN(Date.parse(m.created_at)));
        assert.equal(typeof m.display_name, 'string');
      }
      // the SDK pages on with after_id until has_more is false: every model, once each
      const all: string[] = [];
      for await (const m of anthropicSdk().models.list({ limit: 3 })) all.push(m.id);
      const listed = ((await (await fetch(`${api.base}/api/v1/models`)).json()) as any).data.map((m: any) => m.id);
      assert.deepEqual(all, listed);
      const one = await anthropicSdk().models.retrieve(LOCAL);
      assert.equal(one.display_name, 'Stories 260K (local)');
      await assert.rejects(anthropicSdk().models.retrieve('no/such-model'), (e: any) => e.status === 404);
    });

    compat('openai (JS)', 'responses input items', async () => {
      const r = await openaiSdk().responses.create({
        model: LOCAL,
        input: [
          { role: 'user', content: 'Tell me a story.' },
          { role: 'assistant', content: 'Once upon a time' },
          { role: 'user', content: [{ type: 'input_text', text: 'Go on.' }] },
        ],
        max_output_tokens: 8,
      });
      const page = await openaiSdk().responses.inputItems.list(r.id, { order: 'asc', limit: 2 });
      assert.deepEqual(
        page.data.map((i: any) => [i.type, i.role, i.content[0].type, i.content[0].text]),
        [
          ['message', 'user', 'input_text', 'Tell me a story.'],
          ['message', 'assistant', 'output_text', 'Once upon a time'],
        ],
      );
      assert.equal(page.has_more, true);
      const all: any[] = [];
      for await (const i of openaiSdk().responses.inputItems.list(r.id, { limit: 1 })) all.push(i);
      // newest first by default
      assert.deepEqual(
        all.map((i) => i.content[0].text),
        ['Go on.', 'Once upon a time', 'Tell me a story.'],
      );
      await assert.rejects(openaiSdk().responses.inputItems.list('resp_nope'), (e: any) => e.status === 404);
    });

    compat('openai (JS)', 'chat n > 1', async () => {
      const before = await spent();
      const r = await openaiSdk().chat.completions.create({
        model: LOCAL,
        messages: [{ role: 'user', content: 'Once upon a time' }],
        max_tokens: 6,
        n: 3,
      });
      assert.deepEqual(
        r.choices.map((c) => c.index),
        [0, 1, 2],
      );
      for (const c of r.choices) assert.ok(c.message.content);
      // three calls, each charged once: the answer's cost is what the balance lost
      const cost = BigInt(Math.round((r as any).cost * 1e9));
      assert.equal((await spent()) - before, cost);
      const { rows } = await (await import('../activities/db.js'))
        .db()
        .pool.query(
          `SELECT count(*)::int AS n FROM ledger_entries WHERE account_id = $1 AND kind = 'charge' AND request_id LIKE $2`,
          [accountId, `${r.id.replace('chatcmpl-', 'req_')}%`],
        );
      assert.equal(rows[0].n, 3);
      assert.equal(r.usage!.completion_tokens, 18);
    });
  });
});
