// Images through fal's protocol (a loopback speaking it, test/support/upstreams/fal.ts): a sync
// model (flux/schnell, one POST to the run host), queued models (flux/dev, hidream: submit, poll,
// result), an image-to-image model (flux/kontext-pro, its reference as a data URI) with the
// catalog's reference constraints; fal's NSFW flags (flagged images dropped and not billed, all
// flagged = content_policy_violation), its refusals and runner failures, never charged. Output
// images are downloaded from fal's storage (here the loopback, allowed by
// SWITCHYARD_FETCH_ALLOW_PRIVATE) and answered as b64 or hosted URLs.
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { newAccount, startApi, apiPost } from './support/api.js';
import { assertBooksBalance, settledBalances } from './support/books.js';
import { dataUrl, solidPng } from './support/png.js';
import { useProviderEnv } from './support/providerEnv.js';
import { type FalUpstream, falImage, startFalUpstream } from './support/upstreams/fal.js';
import { parseAmount } from '../activities/core/money.js';

// Customer prices (nano-USD per image), copied by hand from prisma/catalog.yaml plus the 5% markup.
const SCHNELL_SQUARE = 3_150_000n; // 0.003 + 5%
const SCHNELL_WIDE = 6_300_000n; // 0.006 + 5%
const DEV_SQUARE = 26_250_000n; // 0.025 + 5%
const HIDREAM_SQUARE = 10_500_000n; // 0.01 + 5%
const KONTEXT = 42_000_000n; // 0.04 + 5%

describe('images (fal protocol)', function () {
  this.timeout(60_000);
  let api: Awaited<ReturnType<typeof startApi>>;
  let fal: FalUpstream;
  let restoreEnv: () => Promise<void>;

  before(async () => {
    fal = await startFalUpstream('fal-images-key', { syncModels: ['fal-ai/flux/schnell'] });
    restoreEnv = await useProviderEnv({
      FAL_API_KEY: fal.apiKey,
      FAL_BASE_URL: fal.url,
      SWITCHYARD_FETCH_ALLOW_PRIVATE: '1',
    });
    api = await startApi();
  });
  after(async () => {
    await api.close();
    await fal.close();
    await restoreEnv();
  });
  afterEach(async () => {
    fal.setDefault({});
    await assertBooksBalance();
  });

  const post = (key: string, body: unknown, path = '/api/v1/images') => apiPost(api.base, path, body, { key });
  const spent = async (accountId: string) => parseAmount('10', 'USD') - (await settledBalances(accountId)).USD.amount;
  const lastJob = () => fal.jobs.at(-1)!;

  it('a sync model (flux/schnell): one POST to the run host, fal field names, b64 PNGs, billed per image and size', async () => {
    const { key, accountId } = await newAccount();
    fal.script({ images: 2 });
    const res = await post(key, {
      model: 'flux-schnell',
      prompt: 'a kite',
      nImages: 2,
      resolution: '1536x1024',
      seed: 5,
    });
    const body = (await res.json()) as any;
    assert.equal(res.status, 200, JSON.stringify(body));
    const job = lastJob();
    assert.equal(job.model, 'fal-ai/flux/schnell');
    assert.deepEqual(job.input, {
      prompt: 'a kite',
      num_images: 2,
      image_size: { width: 1536, height: 1024 },
      seed: 5,
    });
    assert.ok(!fal.requests.some((r) => r.path.includes(`/requests/${job.id}`)), 'no queue polling for a sync model');
    assert.equal(
      fal.requests.find((r) => r.method === 'POST' && r.path === '/fal-ai/flux/schnell')?.auth,
      'Key fal-images-key',
    );
    assert.deepEqual(
      body.data.map((d: any) => Buffer.from(d.b64_json, 'base64')),
      [falImage(job.id, 0), falImage(job.id, 1)],
    );
    assert.equal(await spent(accountId), 2n * SCHNELL_WIDE);
  });

  it('queued models (flux/dev, the default hidream) poll the queue; the openai SDK with response_format url', async () => {
    const { key, accountId } = await newAccount();
    fal.script({ images: 1, queuePolls: 1, progressPolls: 1 });
    const client = new OpenAI({ apiKey: key, baseURL: `${api.base}/v1`, maxRetries: 0 });
    const r = await client.images.generate({
      model: 'flux/dev',
      prompt: 'a barn',
      response_format: 'url',
      size: '1024x1024',
    });
    const job = lastJob();
    assert.equal(job.model, 'fal-ai/flux/dev');
    assert.ok(job.polls >= 3, `polled ${job.polls} times`);
    const img = await fetch(r.data![0].url!);
    assert.deepEqual(Buffer.from(await img.arrayBuffer()), falImage(job.id, 0));
    assert.equal(await spent(accountId), DEV_SQUARE);
    // no model: the spec's default, hidream
    fal.script({ images: 1, queuePolls: 0, progressPolls: 0 });
    const d = await client.images.generate({ prompt: 'default model' });
    assert.equal(d.data?.length, 1);
    assert.equal(lastJob().model, 'fal-ai/hidream-i1-fast');
    assert.equal(await spent(accountId), DEV_SQUARE + HIDREAM_SQUARE);
  });

  it('NSFW flags: flagged images are dropped and not billed; all flagged is content_policy_violation, free', async () => {
    const { key, accountId } = await newAccount();
    fal.script({ images: 3, nsfwFlags: [false, true, false] });
    const res = await post(key, { model: 'flux/schnell', prompt: 'p', nImages: 3 });
    const body = (await res.json()) as any;
    assert.equal(body.data.length, 2);
    assert.equal(await spent(accountId), 2n * SCHNELL_SQUARE);
    fal.script({ images: 2, nsfwFlags: [true, true] });
    const flagged = await post(key, { model: 'flux/schnell', prompt: 'p', nImages: 2 });
    const err = (await flagged.json()) as any;
    assert.equal(flagged.status, 400, JSON.stringify(err));
    assert.equal(err.code, 'content_policy_violation');
    assert.equal(await spent(accountId), 2n * SCHNELL_SQUARE);
  });

  it("fal's refusal (422 content policy), a runner crash, a 5xx submit: none charged", async () => {
    const { key, accountId } = await newAccount();
    fal.script({ images: 1, outcome: 'nsfw', queuePolls: 0, progressPolls: 0 });
    const refused = await post(key, { model: 'flux/dev', prompt: 'p' });
    assert.equal(refused.status, 400);
    assert.equal(((await refused.json()) as any).code, 'content_policy_violation');
    fal.script({ images: 1, outcome: 'failed', queuePolls: 0, progressPolls: 0 });
    const crashed = await post(key, { model: 'flux/dev', prompt: 'p' });
    assert.equal(crashed.status, 502, await crashed.clone().text());
    fal.script({ images: 1, submitErrors: [{ status: 503 }] });
    const down = await post(key, { model: 'flux/dev', prompt: 'p' });
    assert.equal(down.status, 502);
    assert.equal(await spent(accountId), 0n);
  });

  it('an image-to-image model: its reference goes as a data URI; the catalog constraints are enforced', async () => {
    const { key, accountId } = await newAccount();
    const src = solidPng(300, 300, [9, 9, 9]);
    fal.script({ images: 1, queuePolls: 0, progressPolls: 0 });
    const res = await post(key, {
      model: 'flux/kontext-pro',
      prompt: 'make it night',
      input_references: [{ type: 'image_url', image_url: { url: dataUrl(src) } }],
      aspect_ratio: '16:9',
    });
    assert.equal(res.status, 200, await res.clone().text());
    const job = lastJob();
    assert.equal(job.input.image_url, dataUrl(src));
    assert.equal(job.input.aspect_ratio, '16:9');
    assert.equal(await spent(accountId), KONTEXT);
    const before = fal.jobs.length;
    const expect = async (body: unknown, code: string) => {
      const r = await post(key, { model: 'flux/kontext-pro', prompt: 'x', ...(body as object) });
      const j = (await r.json()) as any;
      assert.equal(r.status, 400, JSON.stringify(j));
      assert.equal(j.code, code, JSON.stringify(j));
      return j;
    };
    await expect({}, 'invalid_input_references'); // it needs one
    await expect({ input_references: [dataUrl(src), dataUrl(src)] }, 'invalid_input_references'); // at most 1
    const small = await expect({ input_references: [dataUrl(solidPng(100, 100))] }, 'invalid_input_references');
    assert.match(small.error.message, /100x100.*256x256/);
    await expect({ input_references: [dataUrl(src)], aspect_ratio: '5:1' }, 'invalid_parameter_value');
    await expect({ input_references: [dataUrl(src)], nImages: 5 }, 'invalid_parameter_value');
    // a model without image input
    const noRefs = await post(key, { model: 'flux/dev', prompt: 'x', input_references: [dataUrl(src)] });
    assert.equal(((await noRefs.json()) as any).code, 'image_input_not_supported');
    assert.equal(fal.jobs.length, before);
    assert.equal(await spent(accountId), KONTEXT);
  });

  it('discovery lists the fal models with per-size prices and the reference constraints', async () => {
    const ep = (await (await fetch(`${api.base}/api/v1/images/models/flux%2Fschnell/endpoints`)).json()) as any;
    assert.deepEqual(
      ep.endpoints[0].pricing.find((p: any) => p.resolution === '1536x1024'),
      { billable: 'output_image', unit: 'image', cost_usd: 0.0063, resolution: '1536x1024' },
    );
    assert.equal(ep.endpoints[0].provider_slug, 'fal');
    const k = (await (await fetch(`${api.base}/api/v1/images/models/flux/kontext-pro/endpoints`)).json()) as any;
    assert.deepEqual(k.endpoints[0].input_reference_constraints, {
      max_items: 1,
      route: {
        min_width: 256,
        min_height: 256,
        max_bytes: 4194304,
        formats: ['png', 'jpeg', 'webp'],
        source: ['url', 'data_url'],
      },
    });
  });
});
