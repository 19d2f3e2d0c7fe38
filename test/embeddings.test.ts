// Embeddings (POST /api/v1/embeddings, /v1/embeddings): the official `openai` SDK unchanged
// (base64, which it asks for by default, and floats) against an OpenAI-protocol loopback upstream
// and against the built-in all-MiniLM-L6-v2 (real vectors, offline); dimensions; token arrays; ZDR
// routing; every error code; billing exactly once by input tokens, nothing for failures, books
// balanced after each test, and a race of many requests against a small balance.
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { newAccount, startApi, apiPost } from './support/api.js';
import { assertBooksBalance, settledBalances } from './support/books.js';
import { EMBEDDING_PER_MILLION_TOKENS, perMillion } from './support/prices.js';
import { useProviderEnv } from './support/providerEnv.js';
import {
  type EmbeddingsUpstream,
  fakeTokens,
  fakeVector,
  startEmbeddingsUpstream,
} from './support/upstreams/embeddings.js';
import { parseAmount } from '../activities/core/money.js';

const SMALL = 'openai/text-embedding-3-small';
const MINILM = 'local/all-minilm-l6-v2';
const cost = (model: keyof typeof EMBEDDING_PER_MILLION_TOKENS, tokens: number) =>
  perMillion(tokens, EMBEDDING_PER_MILLION_TOKENS[model]);
const cosine = (a: number[], b: number[]) => {
  let d = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    d += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return d / Math.sqrt(na * nb);
};

describe('embeddings (POST /api/v1/embeddings)', function () {
  this.timeout(60_000);
  let api: Awaited<ReturnType<typeof startApi>>;
  let up: EmbeddingsUpstream;
  let restoreEnv: () => Promise<void>;

  before(async () => {
    up = await startEmbeddingsUpstream();
    restoreEnv = await useProviderEnv({ OPENAI_API_KEY: up.apiKey, OPENAI_BASE_URL: up.url }, ['OPENROUTER_API_KEY']);
    api = await startApi();
  });
  after(async () => {
    await api.close();
    await up.close();
    await restoreEnv();
  });
  afterEach(async () => {
    up.script();
    await assertBooksBalance();
  });

  const client = (key: string) => new OpenAI({ apiKey: key, baseURL: `${api.base}/v1`, maxRetries: 0 });
  const post = (key: string | null, body: unknown, path = '/api/v1/embeddings') =>
    apiPost(api.base, path, body, { key });
  const spent = async (accountId: string, start = '10') =>
    parseAmount(start, 'USD') - (await settledBalances(accountId)).USD.amount;

  async function expectError(res: Response, status: number, code: string, param?: string) {
    const text = await res.text();
    assert.equal(res.status, status, text);
    const j = JSON.parse(text) as { error: { code: string; message: string; param: string | null } };
    assert.equal(j.error.code, code, text);
    if (param !== undefined) assert.equal(j.error.param, param);
    return j.error;
  }

  describe('through an OpenAI-protocol upstream', () => {
    it('the SDK (base64 by default) gets the upstream vectors back exactly; billed once by input tokens', async () => {
      const { key, accountId } = await newAccount();
      const input = ['the quick brown fox', 'jumps over'];
      const r = await client(key).embeddings.create({ model: 'text-embedding-3-small', input });
      assert.equal(r.object, 'list');
      assert.equal(r.model, SMALL);
      assert.equal(r.data.length, 2);
      r.data.forEach((d, i) => {
        assert.equal(d.index, i);
        assert.deepEqual(d.embedding, fakeVector(input[i], 1536));
      });
      const tokens = fakeTokens(input[0]) + fakeTokens(input[1]);
      assert.deepEqual(r.usage, { prompt_tokens: tokens, total_tokens: tokens });
      // the SDK asked us for base64; the upstream was asked for floats, with the upstream model name
      assert.equal(up.requests.at(-1)!.body.encoding_format, 'float');
      assert.equal(up.requests.at(-1)!.body.model, 'text-embedding-3-small');
      assert.equal(await spent(accountId), cost(SMALL, tokens));
      const raw = r as unknown as { cost: number; paymentSource: string };
      assert.equal(raw.paymentSource, 'USD');
      assert.equal(raw.cost, Number(cost(SMALL, tokens)) / 1e9);
    });

    it('floats on request, on /v1/embeddings too; base64 over the wire is little-endian float32', async () => {
      const { key } = await newAccount();
      const r = await client(key).embeddings.create({
        model: SMALL,
        input: 'hello world',
        encoding_format: 'float',
        user: 'user-42',
      });
      assert.deepEqual(r.data[0].embedding, fakeVector('hello world', 1536));
      assert.equal(up.requests.at(-1)!.body.user, 'user-42');
      const res = await post(key, { model: SMALL, input: 'hello world', encoding_format: 'base64' }, '/v1/embeddings');
      assert.equal(res.status, 200);
      const b64 = ((await res.json()) as { data: Array<{ embedding: string }> }).data[0].embedding;
      const bytes = Buffer.from(b64, 'base64');
      assert.equal(bytes.length, 1536 * 4);
      const back = Array.from({ length: 1536 }, (_, i) => bytes.readFloatLE(i * 4));
      assert.deepEqual(back, fakeVector('hello world', 1536));
    });

    it('dimensions go to a model that can reduce them; above its size is a 400 and nothing is sent', async () => {
      const { key, accountId } = await newAccount();
      const r = await client(key).embeddings.create({ model: SMALL, input: 'short', dimensions: 256 });
      assert.equal(r.data[0].embedding.length, 256);
      assert.equal(up.requests.at(-1)!.body.dimensions, 256);
      const before = up.requests.length;
      await expectError(
        await post(key, { model: SMALL, input: 'x', dimensions: 1537 }),
        400,
        'invalid_parameter_value',
        'dimensions',
      );
      await expectError(
        await post(key, { model: SMALL, input: 'x', dimensions: 0 }),
        400,
        'invalid_parameter_value',
        'dimensions',
      );
      assert.equal(up.requests.length, before);
      assert.equal(await spent(accountId), cost(SMALL, 1));
    });

    it('token arrays pass through to a model that takes them', async () => {
      const { key, accountId } = await newAccount();
      const r = await client(key).embeddings.create({
        model: SMALL,
        input: [
          [1, 2, 3],
          [4, 5],
        ],
      });
      assert.equal(r.data.length, 2);
      assert.deepEqual(up.requests.at(-1)!.body.input, [
        [1, 2, 3],
        [4, 5],
      ]);
      const single = await post(key, { model: SMALL, input: [7, 8, 9], encoding_format: 'float' });
      assert.equal(single.status, 200);
      assert.deepEqual(
        ((await single.json()) as { data: Array<{ embedding: number[] }> }).data[0].embedding,
        fakeVector([7, 8, 9], 1536),
      );
      assert.equal(await spent(accountId), cost(SMALL, 5) + cost(SMALL, 3));
    });

    it('an upstream that counts nothing is billed our estimate (4 bytes a token, at least 1 an input)', async () => {
      const { key, accountId } = await newAccount();
      up.script({ noUsage: true });
      const r = await post(key, { model: SMALL, input: ['abcdefghij', 'a'] });
      assert.equal(r.status, 200);
      assert.equal(((await r.json()) as { usage: { prompt_tokens: number } }).usage.prompt_tokens, 3 + 1);
      assert.equal(await spent(accountId), cost(SMALL, 4));
    });

    it('upstream failures are answered in our envelope and cost nothing', async () => {
      const { key, accountId } = await newAccount();
      up.script({ status: 500 });
      await expectError(await post(key, { model: SMALL, input: 'x' }), 502, 'upstream_error');
      up.script({ status: 429 });
      await expectError(await post(key, { model: SMALL, input: 'x' }), 429, 'rate_limit_exceeded');
      up.script({ status: 400, message: 'This model does not support specifying dimensions.' });
      await expectError(await post(key, { model: SMALL, input: 'x' }), 400, 'upstream_rejected_request');
      up.script({ missingOne: true });
      await expectError(await post(key, { model: SMALL, input: ['a', 'b'] }), 502, 'upstream_bad_response');
      up.script({ drop: true });
      await expectError(await post(key, { model: SMALL, input: 'x' }), 502, 'upstream_unreachable');
      assert.equal(await spent(accountId), 0n);
    });

    it('a wrong upstream key is the gateway operator’s problem (502), not the caller’s (401)', async () => {
      const { key, accountId } = await newAccount();
      const restore = await useProviderEnv({ OPENAI_API_KEY: 'sk-wrong' });
      try {
        const res = await post(key, { model: SMALL, input: 'x' });
        assert.equal(res.status, 502, await res.clone().text());
      } finally {
        await restore();
      }
      assert.equal(await spent(accountId), 0n);
    });
  });

  describe('the built-in all-MiniLM-L6-v2 (offline)', () => {
    it('similar sentences land closer than unrelated ones; unit vectors of 384; SDK base64', async () => {
      const { key, accountId } = await newAccount();
      const input = [
        'The cat sat on the mat.',
        'A cat was sitting on a mat.',
        'Quarterly revenue grew by eight percent.',
      ];
      const r = await client(key).embeddings.create({ model: 'all-minilm-l6-v2', input });
      assert.equal(r.model, MINILM);
      const [a, b, c] = r.data.map((d) => d.embedding);
      for (const v of [a, b, c]) {
        assert.equal(v.length, 384);
        assert.ok(Math.abs(Math.hypot(...v) - 1) < 1e-5, 'normalised as sentence-transformers does');
      }
      // the reference values of the original model (../shared/models/README.md): 0.94 and -0.06
      assert.ok(Math.abs(cosine(a, b) - 0.94) < 0.01, `similar: ${cosine(a, b)}`);
      assert.ok(Math.abs(cosine(a, c) + 0.06) < 0.01, `unrelated: ${cosine(a, c)}`);
      // WordPiece tokens plus [CLS] and [SEP]: 9 + 10 + 9
      assert.equal(r.usage.prompt_tokens, 28);
      assert.equal(await spent(accountId), cost(MINILM, 28));
    });

    it('the same text gives the same vector alone and in a batch; long input is cut at 256 tokens', async () => {
      const { key, accountId } = await newAccount();
      const alone = await client(key).embeddings.create({
        model: MINILM,
        input: 'hello there',
        encoding_format: 'float',
      });
      const batch = await client(key).embeddings.create({
        model: MINILM,
        input: ['other', 'hello there'],
        encoding_format: 'float',
      });
      const d = alone.data[0].embedding.map((x, i) => Math.abs(x - batch.data[1].embedding[i]));
      assert.ok(Math.max(...d) < 1e-6);
      const long = await client(key).embeddings.create({ model: MINILM, input: 'word '.repeat(1000) });
      assert.equal(long.usage.prompt_tokens, 256);
      const used = alone.usage.prompt_tokens + batch.usage.prompt_tokens + 256;
      assert.equal(await spent(accountId), cost(MINILM, used));
    });

    it('no dimension reduction (400), no token arrays (400); its own size is accepted', async () => {
      const { key, accountId } = await newAccount();
      await expectError(
        await post(key, { model: MINILM, input: 'x', dimensions: 128 }),
        400,
        'invalid_parameter_value',
        'dimensions',
      );
      await expectError(await post(key, { model: MINILM, input: [1, 2, 3] }), 400, 'invalid_parameter_value', 'input');
      const ok = await post(key, { model: MINILM, input: 'x', dimensions: 384 });
      assert.equal(ok.status, 200);
      assert.equal(await spent(accountId), cost(MINILM, 3));
    });
  });

  describe('zero data retention', () => {
    it('a ZDR-only key gets 400 zero_data_retention for a model without a ZDR provider, and the local model', async () => {
      const { key } = await newAccount('10', { zdrOnly: true });
      await expectError(await post(key, { model: SMALL, input: 'x' }), 400, 'zero_data_retention', 'model');
      assert.equal((await post(key, { model: MINILM, input: 'x' })).status, 200);
    });

    it('provider.zdr and provider.data_collection "deny" ask for it per request', async () => {
      const { key, accountId } = await newAccount();
      const before = up.requests.length;
      await expectError(
        await post(key, { model: SMALL, input: 'x', provider: { zdr: true } }),
        400,
        'zero_data_retention',
      );
      await expectError(
        await post(key, { model: SMALL, input: 'x', provider: { data_collection: 'deny' } }),
        400,
        'zero_data_retention',
      );
      assert.equal(up.requests.length, before);
      assert.equal(await spent(accountId), 0n);
    });

    it('the embedding-models list reports zero_data_retention and prices from the catalog', async () => {
      const res = await fetch(`${api.base}/api/v1/embedding-models`);
      const list = ((await res.json()) as { data: Array<Record<string, unknown>> }).data;
      const local = list.find((m) => m.id === MINILM)!;
      assert.equal(local.zero_data_retention, true);
      assert.equal(local.dimensions, 384);
      assert.deepEqual(local.pricing, { prompt: 0.005, currency: 'USD', unit: 'per_million_tokens' });
      const small = list.find((m) => m.id === SMALL)!;
      assert.equal(small.zero_data_retention, false);
      assert.equal(small.supports_dimension_reduction, true);
    });
  });

  describe('bad requests', () => {
    it('each refusal has its code, and costs nothing', async () => {
      const { key, accountId } = await newAccount();
      await expectError(await post(null, { model: SMALL, input: 'x' }), 401, 'missing_api_key');
      await expectError(await post(key, { input: 'x' }), 400, 'missing_required_parameter', 'model');
      await expectError(await post(key, { model: SMALL }), 400, 'missing_required_parameter', 'input');
      await expectError(await post(key, { model: SMALL, input: '' }), 400, 'invalid_parameter_value', 'input');
      await expectError(await post(key, { model: SMALL, input: [] }), 400, 'invalid_parameter_value', 'input');
      await expectError(await post(key, { model: SMALL, input: ['a', ''] }), 400, 'invalid_parameter_value', 'input');
      await expectError(await post(key, { model: SMALL, input: ['a', 1] }), 400, 'invalid_parameter_value', 'input');
      await expectError(
        await post(key, { model: SMALL, input: { text: 'a' } }),
        400,
        'invalid_parameter_value',
        'input',
      );
      const tooMany = await expectError(
        await post(key, { model: SMALL, input: Array.from({ length: 2049 }, () => 'a') }),
        400,
        'invalid_parameter_value',
        'input',
      );
      assert.match(tooMany.message, /2048/);
      await expectError(
        await post(key, { model: SMALL, input: 'x', encoding_format: 'int8' }),
        400,
        'invalid_parameter_value',
        'encoding_format',
      );
      await expectError(await post(key, { model: 'nope/none', input: 'x' }), 404, 'model_not_found', 'model');
      await expectError(await post(key, { model: 'gpt-4o-mini', input: 'x' }), 400, 'invalid_parameter_value', 'model');
      // the text models' suffixes: refused, not ignored (an ignored redaction would send the data unmasked)
      for (const suffix of [':redaction', ':piiredacted', ':memory', ':online/linkup', ':cheap']) {
        const refused = await expectError(
          await post(key, { model: `${SMALL}${suffix}`, input: 'x' }),
          400,
          'invalid_parameter_value',
          'model',
        );
        assert.match(refused.message, /apply to text models, and '.+' is not one \(its category: embedding\)/);
      }
      await expectError(
        await post(key, { model: SMALL, input: 'x', provider: 'nobody' }),
        400,
        'provider_unknown_provider',
      );
      await expectError(
        await post(key, { model: SMALL, input: 'x', provider: { sort: 'price' } }),
        400,
        'invalid_parameter_value',
      );
      const poor = await newAccount('0');
      await expectError(await post(poor.key, { model: SMALL, input: 'x' }), 402, 'insufficient_balance');
      assert.equal(await spent(accountId), 0n);
      // 2048 inputs are fine
      const full = await post(key, { model: SMALL, input: Array.from({ length: 2048 }, (_, i) => `t${i}`) });
      assert.equal(full.status, 200);
      assert.equal(await spent(accountId), cost(SMALL, 2048));
    });
  });

  it('a race: many requests against a small balance never overspend, and each success is charged once', async () => {
    // each request: 'one two three' = 3 upstream tokens; worst case 13 bytes + 2 = 15 tokens. The
    // balance covers a few requests even one at a time (each reserves 15 tokens' worth, is charged
    // 3), so however the 24 interleave, some succeed and some are refused.
    const { key, accountId } = await newAccount('0.0000008');
    const n = 24;
    const results = await Promise.all(
      Array.from({ length: n }, () => post(key, { model: SMALL, input: 'one two three' }).then((r) => r.status)),
    );
    const ok = results.filter((s) => s === 200).length;
    assert.equal(ok + results.filter((s) => s === 402).length, n, results.join(','));
    assert.ok(ok > 0 && ok < n, `successes: ${ok}`);
    assert.equal(await spent(accountId, '0.0000008'), BigInt(ok) * cost(SMALL, 3));
    await assertBooksBalance(accountId);
  });
});
