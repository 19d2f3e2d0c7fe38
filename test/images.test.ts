// Images: discovery without a key; POST /v1/images/generations and /v1/images/edits through the
// official `openai` SDK unchanged (generate, edit with multipart uploads) against a loopback
// speaking OpenAI's Images API, including its failures (400 content policy, 429, 500); POST
// /api/v1/images with its own codes and rules; hosted `url` results; billing exactly once per
// image actually returned and never for a failure (books balanced after each test, a race of many
// requests on a small balance).
import assert from 'node:assert/strict';
import OpenAI, { toFile } from 'openai';
import { newAccount, startApi, apiPost } from './support/api.js';
import { assertBooksBalance, settledBalances } from './support/books.js';
import { dataUrl, solidPng } from './support/png.js';
import { useProviderEnv } from './support/providerEnv.js';
import { until } from './support/wait.js';
import { type ImagesUpstream, startImagesUpstream } from './support/upstreams/images.js';
import { parseAmount } from '../activities/core/money.js';

// Customer prices (nano-USD per image), copied by hand from prisma/catalog.yaml plus the 5% markup.
const GPT_IMAGE_MEDIUM_SQUARE = 44_100_000n; // 0.042 + 5%
const GPT_IMAGE_LOW_SQUARE = 11_550_000n; // 0.011 + 5%
const GPT_IMAGE_HIGH_WIDE = 262_500_000n; // 0.25 + 5%
const DALLE3_STANDARD_SQUARE = 42_000_000n; // 0.04 + 5%
const DALLE3_HD_WIDE = 126_000_000n; // 0.12 + 5%

describe('images (OpenAI protocol)', function () {
  this.timeout(60_000);
  let api: Awaited<ReturnType<typeof startApi>>;
  let up: ImagesUpstream;
  let restoreEnv: () => Promise<void>;

  before(async () => {
    up = await startImagesUpstream();
    restoreEnv = await useProviderEnv(
      { OPENAI_API_KEY: up.apiKey, OPENAI_BASE_URL: up.url, SWITCHYARD_FETCH_ALLOW_PRIVATE: '1' },
      ['OPENROUTER_API_KEY'],
    );
    api = await startApi();
  });
  after(async () => {
    await api.close();
    await up.close();
    await restoreEnv();
  });
  afterEach(async () => {
    await assertBooksBalance();
  });

  const client = (key: string) => new OpenAI({ apiKey: key, baseURL: `${api.base}/v1`, maxRetries: 0 });
  const post = (key: string | null, body: unknown, path = '/api/v1/images', type = 'application/json') =>
    apiPost(api.base, path, body, { key, contentType: type });
  const spent = async (accountId: string, start = '10') =>
    parseAmount(start, 'USD') - (await settledBalances(accountId)).USD.amount;

  async function expectError(res: Response, status: number, code: string, param?: string) {
    const text = await res.text();
    assert.equal(res.status, status, text);
    const j = JSON.parse(text) as { code?: string; error: { code: string; param: string | null; parameter?: string } };
    assert.equal(j.error.code, code, text);
    if (param !== undefined) {
      assert.equal(j.error.param, param, text);
      assert.equal(j.error.parameter, param, text);
    }
    return j;
  }

  describe('discovery (no key)', () => {
    it('lists image models with the spec record, endpoints with per-image pricing, legacy list with resolutions', async () => {
      const list = (await (await fetch(`${api.base}/api/v1/images/models`)).json()) as any;
      assert.equal(list.object, 'list');
      assert.equal(list.meta.count, list.data.length);
      const gpt = list.data.find((m: any) => m.id === 'openai/gpt-image-1');
      assert.ok(gpt, JSON.stringify(list.data.map((m: any) => m.id)));
      assert.equal(gpt.category, 'image');
      assert.equal(gpt.supports_streaming, false);
      assert.deepEqual(gpt.capabilities, {
        image_generation: true,
        image_to_image: true,
        inpainting: true,
        nsfw: false,
      });
      assert.deepEqual(gpt.supported_parameters.resolution, {
        type: 'enum',
        values: ['1024x1024', '1024x1536', '1536x1024'],
        default: '1024x1024',
      });
      assert.deepEqual(gpt.supported_parameters.n, { type: 'range', min: 1, max: 10, default: 1 });
      // fal models are not listed: no FAL key here
      assert.ok(!list.data.some((m: any) => m.id.startsWith('flux/')));

      const ep = (await (await fetch(gpt.endpoints)).json()) as any;
      assert.equal(ep.id, 'openai/gpt-image-1');
      assert.equal(ep.endpoints.length, 1);
      const e = ep.endpoints[0];
      assert.equal(e.provider_slug, 'openai');
      assert.equal(e.provider_tag, null);
      assert.deepEqual(e.allowed_passthrough_parameters, []);
      assert.equal(e.pricing.length, 9);
      assert.deepEqual(
        e.pricing.find((p: any) => p.quality === 'high' && p.resolution === '1536x1024'),
        { billable: 'output_image', unit: 'image', cost_usd: 0.2625, resolution: '1536x1024', quality: 'high' },
      );
      assert.equal(e.input_reference_constraints.max_items, 16);
      assert.deepEqual(e.input_reference_constraints.route.formats, ['png', 'jpeg', 'webp']);
      // slashes unencoded work too; dall-e-3 takes no references
      const dalle = (await (await fetch(`${api.base}/api/v1/images/models/openai/dall-e-3/endpoints`)).json()) as any;
      assert.equal(dalle.endpoints[0].input_reference_constraints, undefined);
      const missing = await fetch(`${api.base}/api/v1/images/models/nope%2Fnope/endpoints`);
      assert.equal(missing.status, 404);
      assert.equal(((await missing.json()) as any).code, 'model_not_found');

      const legacy = (await (await fetch(`${api.base}/api/v1/image-models?detailed=true`)).json()) as any;
      const d3 = legacy.data.find((m: any) => m.id === 'openai/dall-e-3');
      assert.deepEqual(d3.supported_parameters.resolutions, ['1024x1024', '1792x1024', '1024x1792']);
      const plain = (await (await fetch(`${api.base}/api/v1/image-models`)).json()) as any;
      assert.equal(plain.data[0].supported_parameters, undefined);
    });
  });

  describe('POST /v1/images/generations', () => {
    it('the SDK images.generate gets real PNGs (b64_json); billed once per image at the size and quality', async () => {
      const { key, accountId } = await newAccount();
      const r = await client(key).images.generate({ model: 'gpt-image-1', prompt: 'a red fox', n: 2, quality: 'low' });
      assert.equal(r.data?.length, 2);
      assert.deepEqual(Buffer.from(r.data![0].b64_json!, 'base64'), up.imageFor('a red fox', 0));
      assert.deepEqual(Buffer.from(r.data![1].b64_json!, 'base64'), up.imageFor('a red fox', 1));
      const sent = up.requests.at(-1)!;
      assert.equal(sent.path, '/images/generations');
      assert.equal(sent.body.model, 'gpt-image-1');
      assert.equal(sent.body.quality, 'low');
      assert.equal(sent.body.size, '1024x1024');
      assert.equal(sent.body.response_format, undefined, 'gpt-image refuses response_format');
      assert.equal(await spent(accountId), 2n * GPT_IMAGE_LOW_SQUARE);
      const raw = r as unknown as { cost: number; paymentSource: string; remainingBalance: number };
      assert.equal(raw.cost, Number(2n * GPT_IMAGE_LOW_SQUARE) / 1e9);
      assert.equal(raw.paymentSource, 'USD');
      assert.equal(raw.remainingBalance, 10 - raw.cost);
    });

    it('dall-e-3 by size and quality; url results are signed hosted files that download', async () => {
      const { key, accountId } = await newAccount();
      const r = await client(key).images.generate({
        model: 'dall-e-3',
        prompt: 'a lighthouse',
        size: '1792x1024',
        quality: 'hd',
        response_format: 'url',
      });
      assert.equal(up.requests.at(-1)!.body.response_format, 'b64_json');
      const url = r.data![0].url!;
      assert.match(url, /\/api\/media\/file_[0-9a-f]+\?expires=\d+&signature=/);
      const expires = Number(new URL(url).searchParams.get('expires'));
      assert.ok(expires - Date.now() / 1000 <= 3600 && expires - Date.now() / 1000 > 3500);
      const img = await fetch(url);
      assert.equal(img.status, 200);
      assert.equal(img.headers.get('content-type'), 'image/png');
      assert.deepEqual(Buffer.from(await img.arrayBuffer()), up.imageFor('a lighthouse', 0));
      assert.equal(await spent(accountId), DALLE3_HD_WIDE);
      // /api/v1/images/generations too, plain JSON, default size and quality
      const res = await post(key, { model: 'openai/dall-e-3', prompt: 'x' }, '/api/v1/images/generations');
      assert.equal(res.status, 200);
      assert.equal(await spent(accountId), DALLE3_HD_WIDE + DALLE3_STANDARD_SQUARE);
    });

    it('an upstream that answers URLs anyway: the gateway downloads the images and answers them as asked', async () => {
      const { key, accountId } = await newAccount();
      up.script({ forceUrl: true });
      const r = await client(key).images.generate({ model: 'dall-e-3', prompt: 'url anyway' });
      assert.deepEqual(Buffer.from(r.data![0].b64_json!, 'base64'), up.imageFor('url anyway', 0));
      assert.equal(await spent(accountId), DALLE3_STANDARD_SQUARE);
    });

    it('fewer images than asked are billed as fewer; none at all is empty_response, free', async () => {
      const { key, accountId } = await newAccount();
      up.script({ count: 1 });
      const r = await client(key).images.generate({ model: 'gpt-image-1', prompt: 'two cats', n: 3 });
      assert.equal(r.data?.length, 1);
      assert.equal(await spent(accountId), GPT_IMAGE_MEDIUM_SQUARE);
      up.script({ count: 0 });
      await assert.rejects(client(key).images.generate({ model: 'gpt-image-1', prompt: 'nothing' }), (e: any) => {
        assert.equal(e.status, 502);
        assert.equal(e.code, 'empty_response');
        return true;
      });
      assert.equal(await spent(accountId), GPT_IMAGE_MEDIUM_SQUARE);
    });

    it("the upstream's failures: 400 content policy, 429 with Retry-After, 500; none charged", async () => {
      const { key, accountId } = await newAccount();
      up.script({ status: 400 });
      await assert.rejects(client(key).images.generate({ model: 'gpt-image-1', prompt: 'bad' }), (e: any) => {
        assert.equal(e.status, 400);
        assert.equal(e.code, 'content_policy_violation');
        assert.match(e.message, /safety system/);
        return true;
      });
      up.script({ status: 429 });
      const limited = await post(key, { model: 'gpt-image-1', prompt: 'x' }, '/v1/images/generations');
      await expectError(limited, 429, 'rate_limit_exceeded');
      assert.equal(limited.headers.get('retry-after'), '7');
      up.script({ status: 500 });
      await assert.rejects(client(key).images.generate({ model: 'gpt-image-1', prompt: 'x' }), (e: any) => {
        assert.equal(e.status, 502);
        return true;
      });
      assert.equal(await spent(accountId), 0n);
    });

    it('bad input is a 400 before anything is sent or held', async () => {
      const { key, accountId } = await newAccount();
      const before = up.requests.length;
      const g = '/v1/images/generations';
      await expectError(await post(key, { model: 'gpt-image-1' }, g), 400, 'missing_required_parameter', 'prompt');
      await expectError(
        await post(key, { model: 'gpt-image-1', prompt: 'x', size: '999x999' }, g),
        400,
        'invalid_parameter_value',
        'size',
      );
      await expectError(
        await post(key, { model: 'dall-e-3', prompt: 'x', n: 2 }, g),
        400,
        'invalid_parameter_value',
        'n',
      );
      await expectError(
        await post(key, { model: 'dall-e-3', prompt: 'x', quality: 'ultra' }, g),
        400,
        'invalid_parameter_value',
        'quality',
      );
      await expectError(
        await post(key, { model: 'dall-e-3', prompt: 'x', imageDataUrl: dataUrl(solidPng(64, 64)) }, g),
        400,
        'image_input_not_supported',
      );
      await expectError(
        await post(key, { model: 'gpt-image-1', prompt: 'x', imageDataUrl: 'https://example.com/a.png' }, g),
        400,
        'invalid_input_references',
      );
      await expectError(await post(key, { model: 'nope/nope', prompt: 'x' }, g), 404, 'model_not_found', 'model');
      await expectError(
        await post(key, { model: 'gpt-4o-mini', prompt: 'x' }, g),
        400,
        'invalid_parameter_value',
        'model',
      );
      await expectError(await post(null, { model: 'gpt-image-1', prompt: 'x' }, g), 401, 'missing_api_key');
      assert.equal(up.requests.length, before);
      assert.equal(await spent(accountId), 0n);
    });
  });

  describe('POST /api/v1/images', () => {
    it('nImages wins over n; input_references in its three forms reach the upstream as an edit', async () => {
      const { key, accountId } = await newAccount();
      const res = await post(key, {
        model: 'gpt-image-1',
        prompt: 'a boat',
        n: 1,
        nImages: 2,
        quality: 'high',
        resolution: '1536x1024',
      });
      const body = (await res.json()) as any;
      assert.equal(res.status, 200, JSON.stringify(body));
      assert.equal(body.data.length, 2);
      assert.ok(body.created > 0 && body.cost > 0 && body.paymentSource === 'USD' && body.remainingBalance > 0);
      assert.equal(await spent(accountId), 2n * GPT_IMAGE_HIGH_WIDE);

      const a = solidPng(64, 64, [1, 2, 3]);
      const b = solidPng(80, 80, [4, 5, 6]);
      const c = solidPng(96, 96, [7, 8, 9]);
      const ok = await post(key, {
        model: 'gpt-image-1',
        prompt: 'merge them',
        input_references: [
          dataUrl(a),
          { type: 'image_url', image_url: { url: dataUrl(b) } },
          `${up.url}/files/none.png`,
        ],
      });
      // the http reference 404s at the loopback: refused with the reference named, nothing held
      await expectError(ok, 400, 'invalid_input_references', 'input_references');
      const good = await post(key, {
        model: 'gpt-image-1',
        prompt: 'merge them',
        input_references: [dataUrl(a), { type: 'image_url', image_url: { url: dataUrl(b) } }, dataUrl(c)],
      });
      assert.equal(good.status, 200, await good.clone().text());
      const sent = up.requests.at(-1)!;
      assert.equal(sent.path, '/images/edits');
      assert.deepEqual(
        sent.files.map((f) => [f.field, f.bytes.length]),
        [
          ['image[]', a.length],
          ['image[]', b.length],
          ['image[]', c.length],
        ],
      );
      assert.deepEqual(sent.files[1].bytes, b);
      assert.equal(await spent(accountId), 2n * GPT_IMAGE_HIGH_WIDE + GPT_IMAGE_MEDIUM_SQUARE);
      // the /v1 alias is the same route, billed the same
      const alias = await post(key, { model: 'gpt-image-1', prompt: 'a boat', quality: 'medium' }, '/v1/images');
      assert.equal(alias.status, 200, await alias.clone().text());
      assert.equal(await spent(accountId), 2n * GPT_IMAGE_HIGH_WIDE + 2n * GPT_IMAGE_MEDIUM_SQUARE);
    });

    it("every refusal has the spec's code, in the image envelope (top-level code, parameter)", async () => {
      const { key, accountId } = await newAccount();
      const before = up.requests.length;
      const png = dataUrl(solidPng(64, 64));
      let j = await expectError(await post(key, { prompt: 'x' }), 400, 'missing_model', 'model');
      assert.equal(j.code, 'missing_model');
      await expectError(
        await post(key, { model: 'gpt-image-1', prompt: 'x', stream: true }),
        400,
        'unsupported_stream',
        'stream',
      );
      await expectError(
        await post(key, { model: 'gpt-image-1', prompt: 'x', provider: { order: ['openai'] } }),
        400,
        'unsupported_provider_options',
        'provider',
      );
      // an empty provider is ignored
      const emptyProvider = await post(key, { model: 'gpt-image-1', prompt: 'x', provider: {} });
      assert.equal(emptyProvider.status, 200);
      for (const other of ['imageDataUrl', 'image_url']) {
        j = await expectError(
          await post(key, { model: 'gpt-image-1', prompt: 'x', input_references: [png], [other]: png }),
          400,
          'conflicting_image_inputs',
        );
        assert.equal(j.code, 'conflicting_image_inputs');
      }
      await expectError(
        await post(key, { model: 'gpt-image-1', prompt: 'x', input_references: [png], images: [png] }),
        400,
        'conflicting_image_inputs',
      );
      await expectError(
        await post(key, { model: 'gpt-image-1', prompt: 'x', input_references: [{ url: png }] }),
        400,
        'invalid_input_references',
      );
      await expectError(
        await post(key, { model: 'gpt-image-1', prompt: 'x', input_references: [dataUrl(solidPng(16, 16))] }),
        400,
        'invalid_input_references',
      );
      await expectError(
        await post(key, { model: 'gpt-image-1', prompt: 'x', input_references: ['data:image/png;base64,aGVsbG8='] }),
        400,
        'invalid_input_references',
      );
      await expectError(
        await post(key, { model: 'gpt-image-1', prompt: 'x', input_references: Array(17).fill(png) }),
        400,
        'invalid_input_references',
      );
      // a GIF (a real one's header): gpt-image-1 takes png, jpeg, webp
      const gif = Buffer.concat([
        Buffer.from('GIF89a', 'latin1'),
        Buffer.from([64, 0, 64, 0, 0, 0, 0]),
        Buffer.alloc(20),
      ]);
      const gifError = await expectError(
        await post(key, {
          model: 'gpt-image-1',
          prompt: 'x',
          input_references: [`data:image/gif;base64,${gif.toString('base64')}`],
        }),
        400,
        'invalid_input_references',
      );
      assert.match(JSON.stringify(gifError), /GIF; this model takes png, jpeg, webp/);
      await expectError(
        await post(key, 'prompt=x', '/api/v1/images', 'application/x-www-form-urlencoded'),
        400,
        'invalid_content_type',
      );
      await expectError(await post(key, '{"model":', '/api/v1/images'), 400, 'invalid_json');
      assert.equal(up.requests.length, before + 1);
      assert.equal(await spent(accountId), GPT_IMAGE_MEDIUM_SQUARE);
    });

    it('a reference over 4 MB is refused; an http reference to a private address is refused by the SSRF guard', async () => {
      const { key } = await newAccount();
      const big = `data:image/png;base64,${Buffer.alloc(4 * 1024 * 1024 + 10).toString('base64')}`;
      await expectError(
        await post(key, { model: 'gpt-image-1', prompt: 'x', input_references: [big] }),
        400,
        'invalid_input_references',
      );
      const restore = await useProviderEnv({ SWITCHYARD_FETCH_ALLOW_PRIVATE: undefined });
      try {
        const j = await expectError(
          await post(key, { model: 'gpt-image-1', prompt: 'x', input_references: ['http://127.0.0.1:9/a.png'] }),
          400,
          'invalid_input_references',
        );
        assert.doesNotMatch(JSON.stringify(j), /ECONNREFUSED/);
      } finally {
        await restore();
      }
    });
  });

  describe('POST /v1/images/edits', () => {
    it('the SDK images.edit (multipart: one image, several, a mask) unchanged; /edit and JSON too', async () => {
      const { key, accountId } = await newAccount();
      const src = solidPng(64, 64, [10, 20, 30]);
      const r = await client(key).images.edit({
        model: 'gpt-image-1',
        prompt: 'add a hat',
        image: await toFile(src, 'cat.png', { type: 'image/png' }),
        mask: await toFile(solidPng(64, 64, [255, 255, 255]), 'mask.png', { type: 'image/png' }),
        quality: 'low',
      });
      assert.deepEqual(Buffer.from(r.data![0].b64_json!, 'base64'), up.imageFor('add a hat', 0));
      let sent = up.requests.at(-1)!;
      assert.equal(sent.path, '/images/edits');
      assert.equal(sent.body.model, 'gpt-image-1');
      assert.equal(sent.body.quality, 'low');
      assert.deepEqual(
        sent.files.map((f) => f.field),
        ['image', 'mask'],
      );
      assert.deepEqual(sent.files[0].bytes, src);
      assert.equal(await spent(accountId), GPT_IMAGE_LOW_SQUARE);

      await client(key).images.edit({
        model: 'gpt-image-1',
        prompt: 'two',
        image: [await toFile(src, 'a.png', { type: 'image/png' }), await toFile(src, 'b.png', { type: 'image/png' })],
        n: 2,
      });
      sent = up.requests.at(-1)!;
      assert.deepEqual(
        sent.files.map((f) => f.field),
        ['image[]', 'image[]'],
      );
      assert.equal(await spent(accountId), GPT_IMAGE_LOW_SQUARE + 2n * GPT_IMAGE_MEDIUM_SQUARE);

      const json = await post(
        key,
        { model: 'gpt-image-1', prompt: 'json', image: dataUrl(src) },
        '/api/v1/images/edit',
      );
      assert.equal(json.status, 200, await json.clone().text());
      assert.equal(await spent(accountId), GPT_IMAGE_LOW_SQUARE + 3n * GPT_IMAGE_MEDIUM_SQUARE);
    });

    it('edit refusals: no image, a text image field, over 4 MB (413), a model without edits; nothing charged', async () => {
      const { key, accountId } = await newAccount();
      const form = (parts: Array<[string, Blob | string, string?]>) => {
        const f = new FormData();
        for (const [k, v, name] of parts) typeof v === 'string' ? f.append(k, v) : f.append(k, v, name);
        return fetch(`${api.base}/v1/images/edits`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}` },
          body: f,
        });
      };
      const png = new Blob([new Uint8Array(solidPng(64, 64))], { type: 'image/png' });
      await expectError(
        await form([
          ['model', 'gpt-image-1'],
          ['prompt', 'x'],
        ]),
        400,
        'missing_required_parameter',
        'image',
      );
      await expectError(
        await form([
          ['model', 'gpt-image-1'],
          ['prompt', 'x'],
          ['image', 'not a file'],
        ]),
        400,
        'invalid_parameter_value',
        'image',
      );
      const huge = new Blob([new Uint8Array(4 * 1024 * 1024 + 100)], { type: 'image/png' });
      await expectError(
        await form([
          ['model', 'gpt-image-1'],
          ['prompt', 'x'],
          ['image', huge, 'big.png'],
        ]),
        413,
        'request_too_large',
        'image',
      );
      await expectError(
        await form([
          ['model', 'dall-e-3'],
          ['prompt', 'x'],
          ['image', png, 'a.png'],
        ]),
        400,
        'image_input_not_supported',
      );
      await expectError(
        await form([
          ['model', 'gpt-image-1'],
          ['image', png, 'a.png'],
        ]),
        400,
        'missing_required_parameter',
        'prompt',
      );
      await expectError(
        await form([
          ['model', 'gpt-image-1'],
          ['prompt', 'x'],
          ['n', '0'],
          ['image', png, 'a.png'],
        ]),
        400,
        'invalid_parameter_value',
        'n',
      );
      assert.equal(await spent(accountId), 0n);
    });
  });

  describe('money', () => {
    it('a race of requests on a balance that pays for 3 images: exactly 3 succeed, 3 charges, the rest 402', async () => {
      // 3 medium images cost 0.1323; the balance is 0.15
      const { key, accountId } = await newAccount('0.15');
      const results = await Promise.all(
        Array.from({ length: 8 }, () => post(key, { model: 'gpt-image-1', prompt: 'race' }, '/v1/images/generations')),
      );
      const statuses = results.map((r) => r.status).sort();
      assert.deepEqual(statuses, [200, 200, 200, 402, 402, 402, 402, 402]);
      const refused = results.find((r) => r.status === 402)!;
      await expectError(refused, 402, 'insufficient_balance');
      assert.equal(await spent(accountId, '0.15'), 3n * GPT_IMAGE_MEDIUM_SQUARE);
    });

    it('the worst case, n images at the size and quality asked, is held first: a balance short of it is a 402', async () => {
      // 2 medium square images may cost 0.0882; the balance is 0.05 (enough for one)
      const { key, accountId } = await newAccount('0.05');
      const before = up.requests.length;
      const res = await post(key, { model: 'gpt-image-1', prompt: 'two', n: 2 }, '/v1/images/generations');
      const j = await expectError(res, 402, 'insufficient_balance');
      assert.match(JSON.stringify(j), /0\.0882/);
      assert.equal(up.requests.length, before);
      const one = await post(key, { model: 'gpt-image-1', prompt: 'one', n: 1 }, '/v1/images/generations');
      assert.equal(one.status, 200);
      assert.equal(await spent(accountId, '0.05'), GPT_IMAGE_MEDIUM_SQUARE);
    });

    it('a caller who leaves mid-generation: the upstream call is aborted, the hold released, nothing charged', async () => {
      const { key, accountId } = await newAccount();
      up.script({ delayMs: 3000 });
      const ac = new AbortController();
      const pending = fetch(`${api.base}/v1/images/generations`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({ model: 'gpt-image-1', prompt: 'slow' }),
        signal: ac.signal,
      }).catch(() => undefined);
      await until(
        async () => up.requests.at(-1)?.body.prompt,
        (p) => p === 'slow',
        10_000,
        'the upstream call',
      );
      ac.abort();
      await pending;
      await until(
        async () => up.requests.at(-1)?.aborted,
        (a) => a === true,
        10_000,
        'the upstream call aborted',
      );
      const b = await until(
        () => settledBalances(accountId),
        (x) => x.USD.held === 0n,
        10_000,
        'the hold released',
      );
      assert.equal(b.USD.amount, parseAmount('10', 'USD'));
    });

    it('the legacy POST /api/generate-image (x-api-key) answers b64 images and bills once', async () => {
      const { key, accountId } = await newAccount();
      const res = await fetch(`${api.base}/api/generate-image`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': key },
        body: JSON.stringify({ model: 'dall-e-3', prompt: 'legacy', width: 1024, height: 1024 }),
      });
      const body = (await res.json()) as any;
      assert.equal(res.status, 200, JSON.stringify(body));
      assert.deepEqual(Buffer.from(body.data[0].b64_json, 'base64'), up.imageFor('legacy', 0));
      assert.equal(body.paymentSource, 'USD');
      assert.equal(await spent(accountId), DALLE3_STANDARD_SQUARE);
      const bad = await fetch(`${api.base}/api/generate-image`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': key },
        body: JSON.stringify({ model: 'dall-e-3', prompt: 'legacy', width: 640, height: 480 }),
      });
      const err = (await bad.json()) as any;
      assert.equal(bad.status, 400);
      assert.equal(err.code, 'invalid_parameter_value');
      assert.equal(err.status, 400);
    });
  });
});
