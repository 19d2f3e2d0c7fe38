// biome-ignore-all lint/suspicious/noExplicitAny: wire JSON, read field by field
// Video generation as durable Temporal workflows, end to end: the real API, the real Temporal dev
// server and worker, and a loopback fal queue server (test/support/upstreams/fal.ts). Every
// terminal state (completed with the duration settled down, failed, NSFW, cancelled, deadline),
// ownership, validation, a race for a small balance, Midjourney-style variants and extend, a
// worker SIGKILLed mid-job and restarted (recorded histories are replayed in replay.test.ts). The
// books balance after each test.
import { startWorkerProcess } from './support/workerProcess.js';
import assert from 'node:assert/strict';
import http from 'node:http';
import { dataUrlOf, mp4 } from './support/mp4.js';
import type { AddressInfo } from 'node:net';
import { MockActivityEnvironment } from '@temporalio/testing';
import { closeVideoJob, finishVideoJob } from '../activities/video/finish.js';
import { pollVideoJob, submitVideoJob } from '../activities/video/run.js';
import { startApi, newAccount } from './support/api.js';
import { useTemporal } from './support/temporal.js';
import { startFalUpstream, type FalUpstream } from './support/upstreams/fal.js';
import { assertBooksBalance } from './support/books.js';
import { catalog } from '../activities/catalog/catalog.js';
import { balances } from '../activities/ledger/ledger.js';
import { parseAmount } from '../activities/core/money.js';
import { VIDEO_PER_SECOND } from './support/prices.js';
import { config } from '../activities/config.js';
import { db } from '../activities/db.js';
import { useProviderEnv } from './support/providerEnv.js';
import { until } from './support/wait.js';
import { freePort } from './support/ports.js';
import { closeTemporalClient } from '../activities/temporalClient.js';
import { endedAnswers } from './support/jobEnded.js';

const ENV = [
  'FAL_API_KEY',
  'FAL_BASE_URL',
  'MIDJOURNEY_BASE_URL',
  'MIDJOURNEY_API_KEY',
  'SWITCHYARD_FETCH_ALLOW_PRIVATE',
  'SWITCHYARD_VIDEO_POLL_MS',
  'SWITCHYARD_VIDEO_DEADLINE_SECONDS',
];
const T2V = 'kling/v2.1-master-text-to-video';
/** The spec's normalized video states: all the status routes ever show. */
const NORMALIZED = ['queued', 'processing', 'completed', 'failed', 'cancelled', 'unknown'];
const I2V = 'kling/v2.5-turbo-standard-image-to-video';
const MJ = 'midjourney/video';

/** Customer price of `seconds` of `model` (list price + markup, copied by hand in test/support/prices.ts), nano-USD. */
const EXTEND = 'pixverse/extend';

function price(model: keyof typeof VIDEO_PER_SECOND, seconds: number): bigint {
  return VIDEO_PER_SECOND[model] * BigInt(seconds);
}

async function chargesFor(jobId: string): Promise<bigint[]> {
  const { rows } = await db().pool.query(
    `SELECT e.amount FROM ledger_entries e JOIN balance_holds h ON h.id = e.hold_id WHERE h.request_id = $1 AND e.kind = 'charge'`,
    [jobId],
  );
  return rows.map((r) => BigInt(r.amount));
}

describe('video generation (Temporal workflows, fal queue protocol)', function () {
  this.timeout(180_000);
  let api: Awaited<ReturnType<typeof startApi>>;
  let fal: FalUpstream;
  let restoreEnv: () => Promise<void>;

  const call = async (key: string, method: string, path: string, body?: unknown) => {
    const res = await fetch(`${api.base}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const type = res.headers.get('content-type') ?? '';
    return {
      status: res.status,
      headers: res.headers,
      body: type.includes('json') ? await res.json() : Buffer.from(await res.arrayBuffer()),
    } as { status: number; headers: Headers; body: any };
  };
  const submit = (key: string, body: Record<string, unknown>) => call(key, 'POST', '/api/generate-video', body);
  const status = (key: string, id: string) => call(key, 'GET', `/api/video/status?requestId=${id}`);
  /** The job's record is terminal and its workflow closed (so its money has moved). */
  const settled = async (key: string, id: string, ms = 30_000) => {
    await until(
      () => status(key, id),
      (r) => ['completed', 'failed', 'cancelled'].includes(r.body?.data?.status),
      ms,
      `job ${id} to end`,
    );
    const handle = (await useTemporal()).client.workflow.getHandle(id);
    await until(
      () => handle.describe(),
      (x) => x.status.name !== 'RUNNING',
      15_000,
      `workflow ${id} to close`,
    );
    return status(key, id);
  };
  const usd = async (accountId: string) => (await balances(accountId))!.USD;

  before(async () => {
    await useTemporal();
    fal = await startFalUpstream();
    restoreEnv = await useProviderEnv(
      {
        FAL_BASE_URL: fal.url,
        FAL_API_KEY: fal.apiKey,
        MIDJOURNEY_BASE_URL: fal.url,
        MIDJOURNEY_API_KEY: fal.apiKey,
        SWITCHYARD_FETCH_ALLOW_PRIVATE: '1', // the loopback "CDN" serving the outputs
        SWITCHYARD_VIDEO_POLL_MS: '200',
      },
      ENV,
    );
    api = await startApi();
  });
  after(async () => {
    await api?.close();
    await fal?.close();
    await restoreEnv?.();
  });
  afterEach(() => assertBooksBalance());

  it('completes: 202 with the pre-charge at once, progress while it runs, the video hosted, the real duration settled', async () => {
    const { key, accountId } = await newAccount('10');
    fal.script({ queuePolls: 2, progressPolls: 3, duration: 6.04 });
    const r = await submit(key, {
      model: 'kling-2.1-master',
      prompt: 'A lighthouse in a storm',
      duration: '10',
      aspect_ratio: '9:16',
      negative_prompt: 'blur',
      unknownKey: 1,
    });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    const hold = price(T2V, 10);
    assert.match(r.body.runId, /^vid_[0-9a-f]{24}$/);
    assert.equal(r.body.id, r.body.runId);
    assert.equal(r.body.status, 'pending');
    assert.equal(r.body.model, T2V);
    assert.equal(r.body.cost, Number(hold) / 1e9);
    assert.equal(r.body.paymentSource, 'USD');
    assert.equal(r.body.prechargeLabel, 'Pre-charged for 10 s');
    assert.equal(r.body.remainingBalance, Number(parseAmount('10', 'USD') - hold) / 1e9);
    assert.equal((await usd(accountId)).held, hold);

    // the provider got fal's input names, with our key
    const job = await until(
      async () => fal.jobs.find((j) => j.input.prompt === 'A lighthouse in a storm'),
      Boolean,
      10_000,
      'the submit',
    );
    assert.equal(job!.model, 'fal-ai/kling-video/v2.1/master/text-to-video');
    assert.deepEqual(job!.input, {
      prompt: 'A lighthouse in a storm',
      duration: '10',
      aspect_ratio: '9:16',
      negative_prompt: 'blur',
    });

    const seen = new Set<string>();
    let progress = -1;
    await until(
      () => status(key, r.body.runId),
      (s) => {
        seen.add(s.body.data.status);
        if (s.body.data.status === 'processing') progress = Math.max(progress, s.body.data.progress);
        return s.body.data.status === 'completed';
      },
      30_000,
      'completion',
    );
    const done = await settled(key, r.body.runId);
    assert.ok(seen.has('queued') || seen.has('processing'), `saw ${[...seen]}`);
    for (const state of seen) assert.ok(NORMALIZED.includes(state), `'${state}' is not a normalized state`);
    // the runner's "NN%" logs became the record's progress while it ran
    if (seen.has('processing')) assert.ok(progress > 0 && progress < 100, `progress ${progress}`);
    const d = done.body.data;
    assert.equal(done.body.requestId, r.body.runId);
    assert.equal(done.body.model, T2V);
    assert.equal(d.requestId, r.body.runId);
    assert.equal(d.progress, 100);
    assert.equal(d.error, null);
    assert.ok(d.completedAt && d.createdAt);
    assert.equal(d.output.video.url, d.videoUrl);
    // 6.04 s of video: 7 s billed of the 10 held, the rest released
    const charge = price(T2V, 7);
    assert.equal(d.cost, Number(charge) / 1e9);
    assert.equal(d.details.billedSeconds, 7);
    assert.deepEqual(await usd(accountId), {
      amount: parseAmount('10', 'USD') - charge,
      held: 0n,
      available: parseAmount('10', 'USD') - charge,
    });
    assert.deepEqual(await chargesFor(r.body.runId), [-charge]);

    // the signed URL serves the provider's bytes
    const file = await fetch(d.videoUrl);
    assert.equal(file.status, 200);
    assert.equal(file.headers.get('content-type'), 'video/mp4');
    const bytes = Buffer.from(await file.arrayBuffer());
    assert.deepEqual(bytes, fal.fileBytes(job!.id, 0));
    assert.equal(bytes.subarray(4, 8).toString('latin1'), 'ftyp');
    // the content route serves the job's bytes for its model, by id or alias (catalog-driven):
    // a model not served here, or another model than the job's, is refused naming the parameter
    const content = (model: string, variant = 'video') =>
      fetch(`${api.base}/api/generate-video/content?runId=${r.body.runId}&model=${model}&variant=${variant}`, {
        headers: { authorization: `Bearer ${key}` },
      });
    for (const model of [T2V, 'kling-2.1-master']) {
      const served = await content(model);
      assert.equal(served.status, 200, `${model}: answered ${served.status}`);
      assert.equal(served.headers.get('content-type'), 'video/mp4');
      assert.deepEqual(Buffer.from(await served.arrayBuffer()), bytes);
    }
    for (const [model, message] of [
      ['sora-2', /must be a video model served here/],
      ['kling/v2.1-master-image-to-video', /was made by/],
    ] as const) {
      const refused = await call(key, 'GET', `/api/generate-video/content?runId=${r.body.runId}&model=${model}`);
      assert.equal(refused.status, 400, `${model}: answered ${refused.status}`);
      assert.equal(refused.body.code, 'invalid_parameter_value');
      assert.match(refused.body.message, message);
      assert.match(refused.body.message, new RegExp(T2V.replace(/[./]/g, '\\$&')));
    }
    const thumbnail = await content(T2V, 'thumbnail');
    assert.equal(thumbnail.status, 404);

    // deprecated legacy status: provider labels and a Deprecation header; runId alias
    const legacy = await call(key, 'GET', `/api/generate-video/status?runId=${r.body.runId}`);
    assert.equal(legacy.status, 200);
    assert.equal(legacy.headers.get('deprecation'), 'true');
    assert.equal(legacy.body.status, 'COMPLETED');
    assert.equal(legacy.body.data.normalizedStatus, 'completed');

    // the workflow: found by id and by the owner's search attribute
    const t = await useTemporal();
    const handle = t.client.workflow.getHandle(r.body.runId);
    const desc = await until(
      () => handle.describe(),
      (x) => x.status.name !== 'RUNNING',
      10_000,
      'the workflow to close',
    );
    assert.equal(desc.type, 'videoJob');
    assert.equal(desc.status.name, 'COMPLETED');
    assert.deepEqual(desc.searchAttributes.SwitchyardAccountId, [accountId]);
    // The wait for the provider is one heartbeating activity however many status checks it made,
    // so a job's history (and the engine's work) does not grow with the checks.
    const history = await handle.fetchHistory();
    const activities = history.events!.flatMap((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? []);
    assert.deepEqual(activities, ['submitVideoJob', 'watchVideoJob', 'finishVideoJob']);
    assert.equal(history.events!.filter((e) => e.timerStartedEventAttributes).length, 0);
    const checks = fal.jobs.find((j) => j.input.prompt === 'A lighthouse in a storm')!.polls;
    assert.ok(checks >= 5, `the provider was asked ${checks} times`);

    // recover lists it
    const rec = await call(key, 'GET', `/api/generate-video/recover?model=${T2V}&limit=5`);
    assert.equal(rec.status, 200);
    assert.equal(rec.body.data[0].runId, r.body.runId);
    assert.equal(rec.body.data[0].status, 'completed');
    assert.equal(rec.body.data[0].prompt, 'A lighthouse in a storm');
  });

  it('fails: the pre-charge is released and the failure recorded (runner error, FAILED label, submit refusal)', async () => {
    const { key, accountId } = await newAccount('10');
    const before = await usd(accountId);
    fal.script(
      { outcome: 'failed' },
      { outcome: 'failed_label' },
      {
        submitErrors: [
          {
            status: 422,
            detail: [{ loc: ['body', 'duration'], msg: 'duration must be 5 or 10', type: 'value_error' }],
          },
        ],
      },
    );
    const ids = [];
    for (let i = 0; i < 3; i++) {
      const r = await submit(key, { model: T2V, prompt: `fails ${i}` });
      assert.equal(r.status, 202);
      ids.push(r.body.runId);
      await settled(key, r.body.runId);
    }
    for (const id of ids) {
      const d = (await status(key, id)).body.data;
      assert.equal(d.status, 'failed');
      assert.equal(d.isNSFWError, false);
      assert.ok(d.error);
      assert.match(d.userFriendlyError, /Nothing was charged/);
      assert.equal(d.videoUrl, null);
      assert.equal(d.cost, 0);
      assert.deepEqual(await chargesFor(id), []);
    }
    assert.match((await status(key, ids[0])).body.data.error, /Runner crashed/);
    assert.match((await status(key, ids[2])).body.data.error, /duration must be 5 or 10/);
    assert.deepEqual(await usd(accountId), before);
  });

  it('NSFW: a content-policy refusal or an NSFW flag fails with isNSFWError and a friendly message, not charged', async () => {
    const { key, accountId } = await newAccount('10');
    const before = await usd(accountId);
    fal.script({ outcome: 'nsfw' }, { outcome: 'nsfw_flag' });
    for (let i = 0; i < 2; i++) {
      const r = await submit(key, { model: T2V, prompt: `something unfit ${i}` });
      const d = (await settled(key, r.body.runId)).body.data;
      assert.equal(d.status, 'failed');
      assert.equal(d.isNSFWError, true);
      assert.match(d.userFriendlyError, /content filter/);
      assert.deepEqual(await chargesFor(r.body.runId), []);
    }
    assert.deepEqual(await usd(accountId), before);
  });

  it('cancels through the workflow: the provider is told to stop, nothing is charged', async () => {
    const { key, accountId } = await newAccount('10');
    const before = await usd(accountId);
    fal.script({ outcome: 'hang' });
    const r = await submit(key, { model: T2V, prompt: 'never ends' });
    await until(
      () => status(key, r.body.runId),
      (s) => s.body.data.status === 'processing',
      15_000,
      'processing',
    );
    const c = await call(key, 'POST', '/api/generate-video/cancel', { runId: r.body.runId });
    assert.equal(c.status, 200, JSON.stringify(c.body));
    assert.equal(c.body.data.status, 'cancelled');
    assert.equal(c.body.data.isNSFWError, false);
    const job = fal.jobs.find((j) => j.input.prompt === 'never ends')!;
    assert.equal(job.cancelled, true, 'the provider got PUT .../cancel');
    assert.deepEqual(await usd(accountId), before);
    const desc = await (await useTemporal()).client.workflow.getHandle(r.body.runId).describe();
    assert.equal(desc.status.name, 'CANCELLED');
    // the route heard the end from the workflow (its `ended` update), not by reading the row again and again
    assert.deepEqual(await endedAnswers(r.body.runId), ['cancelled']);
    // a second cancel is harmless; cancelling a finished job is a 409
    assert.equal((await call(key, 'POST', '/api/generate-video/cancel', { runId: r.body.runId })).status, 200);
    fal.script({ queuePolls: 0, progressPolls: 0 });
    const quick = await submit(key, { model: T2V, prompt: 'quick one', duration: '5' });
    await settled(key, quick.body.runId);
    const late = await call(key, 'POST', '/api/generate-video/cancel', { runId: quick.body.runId });
    assert.equal(late.status, 409);
    assert.equal(late.body.code, 'job_not_cancellable');
  });

  it('a cancel while the workflow engine is unreachable: 503 video_unavailable, the job runs on, cancellable later', async () => {
    const { key, accountId } = await newAccount('10');
    const before = await usd(accountId);
    fal.script({ outcome: 'hang' });
    const r = await submit(key, { model: T2V, prompt: 'outlives an outage' });
    await until(
      () => status(key, r.body.runId),
      (s) => s.body.data.status === 'processing',
      15_000,
      'processing',
    );
    const address = config.temporalAddress;
    await closeTemporalClient();
    config.temporalAddress = `127.0.0.1:${await freePort()}`; // nothing listens there
    try {
      const c = await call(key, 'POST', '/api/generate-video/cancel', { runId: r.body.runId });
      assert.equal(c.status, 503, JSON.stringify(c.body));
      assert.equal(c.body.code, 'video_unavailable');
      assert.match(c.body.message, /Nothing changed/);
    } finally {
      await closeTemporalClient();
      config.temporalAddress = address;
    }
    assert.equal((await status(key, r.body.runId)).body.data.status, 'processing');
    assert.equal(fal.jobs.find((j) => j.input.prompt === 'outlives an outage')!.cancelled, false);
    const c = await call(key, 'POST', '/api/generate-video/cancel', { runId: r.body.runId });
    assert.equal(c.status, 200, JSON.stringify(c.body));
    assert.equal(c.body.data.status, 'cancelled');
    assert.deepEqual(await usd(accountId), before);
  });

  it('gives up at the deadline: the provider is told to stop, released, failed', async () => {
    const { key, accountId } = await newAccount('10');
    const before = await usd(accountId);
    fal.script({ outcome: 'hang' });
    process.env.SWITCHYARD_VIDEO_DEADLINE_SECONDS = '2';
    let r: Awaited<ReturnType<typeof submit>>;
    try {
      r = await submit(key, { model: T2V, prompt: 'hangs forever' });
    } finally {
      delete process.env.SWITCHYARD_VIDEO_DEADLINE_SECONDS;
    }
    const d = (await settled(key, r.body.runId, 20_000)).body.data;
    assert.equal(d.status, 'failed');
    assert.match(d.error, /did not finish within 2 s/);
    assert.match(d.userFriendlyError, /took too long/);
    assert.equal(fal.jobs.find((j) => j.input.prompt === 'hangs forever')!.cancelled, true);
    assert.deepEqual(await usd(accountId), before);
  });

  it("another account's job answers as an unknown id (404, same message) on every route; 400 without an id", async () => {
    const owner = await newAccount('10');
    const other = await newAccount('10');
    fal.script({ queuePolls: 0, progressPolls: 0 });
    const r = await submit(owner.key, { model: T2V, prompt: 'mine', duration: 5 });
    await settled(owner.key, r.body.runId);
    const id = r.body.runId;
    for (const [method, path, body] of [
      ['GET', `/api/video/status?requestId=${id}`],
      ['GET', `/api/generate-video/status?requestId=${id}`],
      ['GET', `/api/generate-video/content?runId=${id}&model=${T2V}`],
      ['POST', '/api/generate-video/cancel', { runId: id }],
      ['POST', '/api/generate-video/extend', { runId: id, index: 0 }],
    ] as Array<[string, string, unknown?]>) {
      const res = await call(other.key, method, path, body);
      const unknownId = 'vid_000000000000000000000000';
      const unknown = await call(other.key, method, path.replace(id, unknownId), body && { ...body, runId: unknownId });
      assert.equal(res.status, 404, `${method} ${path}`);
      assert.equal(res.body.code, 'not_found');
      assert.equal(res.body.message, unknown.body.message.replace(unknownId, id), `${method} ${path}`);
      assert.equal(unknown.status, 404);
    }
    const missing = await call(owner.key, 'GET', '/api/video/status');
    assert.equal(missing.status, 400);
    assert.equal(missing.body.code, 'missing_required_parameter');
    assert.equal(
      (await call('sk-nanogpt-00000000-0000-0000-0000-000000000000', 'GET', `/api/video/status?requestId=${id}`))
        .status,
      401,
    );
  });

  it('validates against the model before anything is reserved', async () => {
    const { key, accountId } = await newAccount('10');
    const before = await usd(accountId);
    const jobsBefore = await db().prisma.mediaJob.count({ where: { accountId } });
    const cases: Array<[Record<string, unknown>, number, string, string?]> = [
      [{ model: 'no-such-video-model', prompt: 'x' }, 404, 'model_not_found'],
      [{ prompt: 'x' }, 400, 'missing_required_parameter', 'model'],
      [{ model: T2V }, 400, 'missing_required_parameter', 'prompt'],
      [{ model: T2V, prompt: '   ' }, 400, 'missing_required_parameter', 'prompt'],
      [{ model: T2V, prompt: 'x', duration: '7' }, 400, 'invalid_parameter_value', 'duration'],
      [{ model: T2V, prompt: 'x', seconds: 'ten' }, 400, 'invalid_parameter_value', 'seconds'],
      [{ model: T2V, prompt: 'x', aspect_ratio: '21:9' }, 400, 'invalid_parameter_value', 'aspect_ratio'],
      [
        { model: T2V, prompt: 'x', imageUrl: 'https://example.com/a.png' },
        400,
        'unsupported_input_modality',
        'imageUrl',
      ],
      [
        { model: T2V, prompt: 'x', videoUrl: 'https://example.com/a.mp4' },
        400,
        'unsupported_input_modality',
        'videoUrl',
      ],
      [{ model: I2V, prompt: 'x' }, 400, 'missing_required_parameter', 'imageUrl'],
      [{ model: I2V, prompt: 'x', imageUrl: 'ftp://example.com/a.png' }, 400, 'invalid_parameter_value', 'imageUrl'],
      [{ model: I2V, prompt: 'x', imageAttachmentId: 'att_1' }, 400, 'invalid_parameter_value', 'imageAttachmentId'],
      [
        { model: I2V, prompt: 'x', imageDataUrl: 'data:text/plain;base64,aGk=' },
        400,
        'invalid_parameter_value',
        'imageDataUrl',
      ],
      [
        { model: I2V, prompt: 'x', imageDataUrl: `data:image/png;base64,${'A'.repeat(4 * 1024 * 1024)}` },
        413,
        'payload_too_large',
        'imageDataUrl',
      ],
      [{ model: T2V, prompt: 'x', seed: -1 }, 400, 'invalid_parameter_value', 'seed'],
      [{ model: T2V, prompt: 7 }, 400, 'invalid_parameter_value', 'prompt'],
      [{ model: 'openai/tts-1', prompt: 'x' }, 400, 'invalid_parameter_value', 'model'],
    ];
    for (const [body, code, errCode, param] of cases) {
      const r = await submit(key, body);
      assert.equal(r.status, code, `${JSON.stringify(body).slice(0, 120)} → ${JSON.stringify(r.body)}`);
      assert.equal(r.body.code, errCode, JSON.stringify(r.body));
      assert.equal(r.body.status, code);
      assert.ok(typeof r.body.message === 'string' && r.body.message.length > 10);
      if (param) assert.match(r.body.message, new RegExp(param), r.body.message);
    }
    const notJson = await fetch(`${api.base}/api/generate-video`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: '{"model":',
    });
    assert.equal(notJson.status, 400);
    // an image-to-video model takes its image (URL passed on as fal's image_url)
    fal.script({ queuePolls: 0, progressPolls: 0 });
    const ok = await submit(key, {
      model: I2V,
      prompt: 'animate',
      imageUrl: 'https://example.com/cat.png',
      seconds: '10',
      cfg_scale: 0.4,
      generateAudio: true,
    });
    assert.equal(ok.status, 202);
    await settled(key, ok.body.runId);
    const sent = fal.jobs.find((j) => j.input.prompt === 'animate')!;
    assert.deepEqual(sent.input, {
      prompt: 'animate',
      duration: '10',
      cfg_scale: 0.4,
      image_url: 'https://example.com/cat.png',
    });
    assert.equal(await db().prisma.mediaJob.count({ where: { accountId } }), jobsBefore + 1);
    assert.equal((await usd(accountId)).amount, before.amount - price(I2V, 10));
    // 402 when the pre-charge is not covered: nothing held, nothing stored
    const poor = await newAccount('0.5');
    const r402 = await submit(poor.key, { model: T2V, prompt: 'too dear', duration: '5' });
    assert.equal(r402.status, 402);
    assert.equal(r402.body.code, 'insufficient_balance');
    assert.ok(r402.body.requiredBalance > 0.5);
    assert.equal(await db().prisma.mediaJob.count({ where: { accountId: poor.accountId } }), 0);
    assert.equal((await usd(poor.accountId)).held, 0n);
  });

  it('extends a source video of at most 120 s, read from the file itself; a longer or unreadable one is refused', async () => {
    const { key, accountId } = await newAccount('10');
    // a loopback host for sources by URL (SWITCHYARD_FETCH_ALLOW_PRIVATE is on for the fal CDN)
    const sources = new Map<string, Buffer>();
    const host = http.createServer((req, res) => {
      const data = sources.get(req.url ?? '');
      res.writeHead(data ? 200 : 404, { 'content-type': 'video/mp4' });
      res.end(data);
    });
    await new Promise<void>((r) => host.listen(0, '127.0.0.1', r));
    const at = (name: string, data: Buffer) => {
      sources.set(`/${name}`, data);
      return `http://127.0.0.1:${(host.address() as AddressInfo).port}/${name}`;
    };
    try {
      const before = await usd(accountId);
      const jobsBefore = fal.jobs.length;
      const refuse = async (body: Record<string, unknown>, param: string, message: RegExp) => {
        const r = await submit(key, { model: EXTEND, prompt: 'carry on', ...body });
        assert.equal(r.status, 400, JSON.stringify(r.body));
        assert.equal(r.body.code, 'invalid_parameter_value');
        assert.match(r.body.message, new RegExp(`'${param}'`));
        assert.match(r.body.message, message);
      };
      await refuse({ videoUrl: at('long.mp4', mp4(121)) }, 'videoUrl', /121 s long.*at most 120 s/);
      // a 64-bit header (version 1), moov after the media: 150 s is still too long
      await refuse({ videoDataUrl: dataUrlOf(mp4(150, { version: 1, moovLast: true })) }, 'videoDataUrl', /150 s/);
      await refuse({ videoUrl: at('noise.mp4', Buffer.from('not a video at all')) }, 'videoUrl', /cannot be read/);
      await refuse(
        { videoUrl: at('gone.mp4', mp4(10)).replace('gone', 'missing') },
        'videoUrl',
        /could not be fetched/,
      );
      const missing = await submit(key, { model: EXTEND, prompt: 'carry on' });
      assert.equal(missing.status, 400);
      assert.equal(missing.body.code, 'missing_required_parameter');
      assert.equal(fal.jobs.length, jobsBefore, 'nothing was submitted');
      assert.deepEqual(await usd(accountId), before, 'nothing was held or charged');

      // exactly 120 s by URL, and 30 s inline: accepted, the source passed on as fal's video_url
      fal.script({ queuePolls: 0, progressPolls: 0 }, { queuePolls: 0, progressPolls: 0 });
      const url = at('limit.mp4', mp4(120));
      const inline = dataUrlOf(mp4(30, { moovLast: true }));
      for (const [prompt, field, value] of [
        ['extend by url', 'videoUrl', url],
        ['extend inline', 'videoDataUrl', inline],
      ]) {
        const r = await submit(key, { model: EXTEND, prompt, [field]: value, duration: '5' });
        assert.equal(r.status, 202, JSON.stringify(r.body));
        assert.equal(r.body.cost, Number(price(EXTEND, 5)) / 1e9);
        await settled(key, r.body.runId);
        const sent = fal.jobs.find((j) => j.input.prompt === prompt)!;
        assert.equal(sent.input.video_url, value);
      }
    } finally {
      await new Promise((r) => host.close(r));
    }
  });

  it('a job not picked up yet shows as queued (a normalized state), not pending', async () => {
    const { key, accountId } = await newAccount('10');
    // a job as it is stored before its workflow has submitted it
    const id = `vid_${'a'.repeat(8)}${Date.now().toString(16).padStart(16, '0')}`;
    await db().prisma.mediaJob.create({
      data: {
        id,
        kind: 'video',
        accountId,
        model: T2V,
        providerId: 'fal',
        upstreamModel: 'fal-ai/kling-video/v2.1/master/text-to-video',
        status: 'pending',
        request: { prompt: 'waiting in line', prechargeLabel: 'Pre-charged for 5 s' },
      },
    });
    try {
      const s = await status(key, id);
      assert.equal(s.status, 200, JSON.stringify(s.body));
      assert.equal(s.body.data.status, 'queued');
      const legacy = await call(key, 'GET', `/api/generate-video/status?runId=${id}`);
      assert.equal(legacy.body.data.normalizedStatus, 'queued');
      const rec = await call(key, 'GET', `/api/generate-video/recover?model=${T2V}`);
      assert.equal(rec.body.data.find((j: { runId: string }) => j.runId === id).status, 'queued');
      const extend = await call(key, 'POST', '/api/generate-video/extend', { runId: id, index: 0 });
      assert.doesNotMatch(JSON.stringify(extend.body), /pending/);
    } finally {
      await db().prisma.mediaJob.delete({ where: { id } });
    }
  });

  it('model_not_available names the setting that would enable the model (FAL_API_KEY, MIDJOURNEY_BASE_URL)', async () => {
    const { key } = await newAccount('10');
    const restore = await useProviderEnv({ FAL_API_KEY: undefined, MIDJOURNEY_BASE_URL: undefined });
    try {
      for (const [model, setting] of [
        [T2V, 'FAL_API_KEY'],
        [MJ, 'MIDJOURNEY_BASE_URL'],
      ]) {
        const r = await submit(key, { model, prompt: 'x', duration: '5' });
        assert.equal(r.status, 503, JSON.stringify(r.body));
        assert.equal(r.body.code, 'model_not_available');
        assert.match(r.body.message, new RegExp(`Set ${setting} to enable it\\.`), r.body.message);
      }
    } finally {
      await restore();
    }
  });

  it('the workflow engine unreachable: 503 video_unavailable, the job row forgotten, the pre-charge released', async () => {
    const { key, accountId } = await newAccount('10');
    const address = config.temporalAddress;
    await closeTemporalClient();
    config.temporalAddress = `127.0.0.1:${await freePort()}`; // nothing listens there
    try {
      const r = await submit(key, { model: T2V, prompt: 'no engine today', duration: '5' });
      assert.equal(r.status, 503, JSON.stringify(r.body));
      assert.equal(r.body.code, 'video_unavailable');
      assert.deepEqual(await db().prisma.mediaJob.findMany({ where: { accountId } }), []);
      const { rows } = await db().pool.query('SELECT status FROM balance_holds WHERE account_id = $1', [accountId]);
      assert.deepEqual(
        rows.map((h) => h.status),
        ['released'],
      );
      const bal = await usd(accountId);
      assert.equal(bal.held, 0n);
      assert.equal(bal.amount, parseAmount('10', 'USD'));
    } finally {
      await closeTemporalClient();
      config.temporalAddress = address;
    }
  });

  it('a race for a small balance: concurrent submissions never overspend, and each job is charged once', async () => {
    const { key, accountId } = await newAccount('3');
    const each = price(T2V, 5); // $1.47: two fit in $3, not three
    fal.setDefault({ queuePolls: 0, progressPolls: 1 });
    try {
      const results = await Promise.all(
        Array.from({ length: 12 }, (_, i) => submit(key, { model: T2V, prompt: `race ${i}`, duration: '5' })),
      );
      const accepted = results.filter((r) => r.status === 202);
      assert.equal(accepted.length, Number(parseAmount('3', 'USD') / each), results.map((r) => r.status).join(','));
      assert.ok(results.every((r) => r.status === 202 || (r.status === 402 && r.body.code === 'insufficient_balance')));
      for (const r of accepted) assert.equal((await settled(key, r.body.runId)).body.data.status, 'completed');
      for (const r of accepted) assert.deepEqual(await chargesFor(r.body.runId), [-each]);
      const bal = await usd(accountId);
      assert.equal(bal.held, 0n);
      assert.equal(bal.amount, parseAmount('3', 'USD') - each * BigInt(accepted.length));
    } finally {
      fal.setDefault({});
    }
  });

  it('a finish racing a close (deadline, cancel) settles or releases, never both, and charges at most once', async () => {
    // The workflow never runs these at once; the activities must still be safe if they do.
    const t = await useTemporal();
    const { key, accountId } = await newAccount('10');
    const start = await usd(accountId);
    const run = <A extends unknown[], R>(fn: (...a: A) => Promise<R>, ...args: A) =>
      new MockActivityEnvironment().run(fn as any, ...args) as Promise<R>;
    for (let i = 0; i < 6; i++) {
      const mainQueue = config.taskQueue;
      config.taskQueue = `video-nobody-${process.pid}`; // no worker polls it: the activities are driven here
      let r: Awaited<ReturnType<typeof submit>>;
      try {
        r = await submit(key, { model: T2V, prompt: `race close ${i}`, duration: '5' });
      } finally {
        config.taskQueue = mainQueue;
      }
      const id = r.body.runId;
      fal.script({ queuePolls: 0, progressPolls: 0, duration: 3 });
      assert.equal(await run(submitVideoJob, id), 'queued');
      assert.equal(await run(pollVideoJob, id), 'completed');
      const results = await Promise.all([
        run(finishVideoJob, id),
        run(closeVideoJob, id, 'cancelled' as const),
        run(finishVideoJob, id),
        run(closeVideoJob, id, 'timeout' as const, 'deadline'),
      ]);
      const d = (await status(key, id)).body.data;
      assert.ok(
        results.every((x) => x === d.status),
        `${results} vs ${d.status}`,
      );
      const charges = await chargesFor(id);
      if (d.status === 'completed') assert.deepEqual(charges, [-price(T2V, 3)]);
      else assert.deepEqual(charges, []);
      // a late retry of either changes nothing
      await run(finishVideoJob, id);
      await run(closeVideoJob, id, 'failed' as const);
      assert.deepEqual(await chargesFor(id), charges);
      await t.client.workflow.getHandle(id).terminate('driven by the test');
    }
    const bal = await usd(accountId);
    assert.equal(bal.held, 0n);
    const { rows } = await db().pool.query(
      `SELECT COALESCE(SUM(cost), 0) AS spent FROM media_jobs WHERE account_id = $1`,
      [accountId],
    );
    assert.equal(bal.amount, start.amount - BigInt(rows[0].spent));
  });

  it('retries a provider that stumbles on submit (5xx) and submits the job exactly once', async () => {
    const { key, accountId } = await newAccount('10');
    fal.script({ submitErrors: [{ status: 503 }, { status: 500 }], queuePolls: 0, progressPolls: 0 });
    const r = await submit(key, { model: T2V, prompt: 'second time lucky', duration: '5' });
    const d = (await settled(key, r.body.runId)).body.data;
    assert.equal(d.status, 'completed');
    assert.equal(fal.jobs.filter((j) => j.input.prompt === 'second time lucky').length, 1);
    assert.equal(fal.requests.filter((q) => q.method === 'POST' && q.body?.prompt === 'second time lucky').length, 3);
    assert.equal((await usd(accountId)).amount, parseAmount('10', 'USD') - price(T2V, 5));
  });

  it('Midjourney-style: 4 variants per job, each extendable by index; extend checks its input', async () => {
    const { key, accountId } = await newAccount('10');
    fal.script({ queuePolls: 0, progressPolls: 1, videos: 4 }, { queuePolls: 0, progressPolls: 0, videos: 4 });
    const r = await submit(key, {
      model: MJ,
      prompt: 'a fox in snow',
      imageUrl: 'https://example.com/fox.png',
      motion: 'low',
    });
    assert.equal(r.status, 202);
    assert.equal(r.body.prechargeLabel, 'Pre-charged for 4 × 5 s');
    const d = (await settled(key, r.body.runId)).body.data;
    assert.equal(d.status, 'completed');
    assert.equal(d.output.videos.length, 4);
    assert.deepEqual(
      d.output.videos.map((v: any) => v.index),
      [0, 1, 2, 3],
    );
    const third = Buffer.from(await (await fetch(d.output.videos[2].url)).arrayBuffer());
    const source = fal.jobs.find((j) => j.input.prompt === 'a fox in snow')!;
    assert.deepEqual(third, fal.fileBytes(source.id, 2));

    const bad = [
      [{ runId: r.body.runId, index: 4 }, 400],
      [{ runId: r.body.runId, index: 1, videoUrl: 'https://example.com/v.mp4' }, 400],
      [{ index: 1 }, 400],
      [{ taskId: 'vid_000000000000000000000000', index: 1 }, 404],
    ] as const;
    for (const [body, code] of bad)
      assert.equal((await call(key, 'POST', '/api/generate-video/extend', body)).status, code, JSON.stringify(body));

    const ext = await call(key, 'POST', '/api/generate-video/extend', {
      taskId: r.body.runId,
      index: 2,
      prompt: 'the fox runs',
    });
    assert.equal(ext.status, 202, JSON.stringify(ext.body));
    assert.deepEqual(ext.body.extendedFrom, { runId: r.body.runId, index: 2 });
    const e = (await settled(key, ext.body.runId)).body.data;
    assert.equal(e.status, 'completed');
    const extJob = fal.jobs.find((j) => j.model === 'midjourney/video/extend')!;
    assert.deepEqual(extJob.input, { task_id: source.id, index: 2, prompt: 'the fox runs' });
    assert.equal((await usd(accountId)).amount, parseAmount('10', 'USD') - price(MJ, 20) - price(MJ, 16));

    // a job of a model that cannot be extended
    fal.script({ queuePolls: 0, progressPolls: 0 });
    const kling = await submit(key, { model: T2V, prompt: 'plain', duration: '5' });
    await settled(key, kling.body.runId);
    assert.equal(
      (await call(key, 'POST', '/api/generate-video/extend', { runId: kling.body.runId, index: 0 })).status,
      400,
    );
  });

  it('recover is limited to 20 requests per minute per key and to limit <= 50', async () => {
    const { key } = await newAccount('1');
    assert.equal((await call(key, 'GET', '/api/generate-video/recover?limit=51')).status, 400);
    for (let i = 0; i < 19; i++) assert.equal((await call(key, 'GET', '/api/generate-video/recover')).status, 200);
    const limited = await call(key, 'GET', '/api/generate-video/recover');
    assert.equal(limited.status, 429);
    assert.equal(limited.body.code, 'rate_limit_exceeded');
    assert.ok(Number(limited.headers.get('retry-after')) > 0);
  });

  it('survives its worker being SIGKILLed mid-job: a new worker finishes it, charged exactly once', async function () {
    this.timeout(150_000);
    const t = await useTemporal();
    const queue = `video-kill-${process.pid}`;
    const startWorker = () =>
      startWorkerProcess({
        TEMPORAL_ADDRESS: t.address,
        TEMPORAL_TASK_QUEUE: queue,
        DATABASE_URL: config.databaseUrl!,
      });

    const { key, accountId } = await newAccount('10');
    fal.script({ queuePolls: 1, progressPolls: 1, gate: true, duration: 4 });
    let first = await startWorker();
    const mainQueue = config.taskQueue;
    config.taskQueue = queue; // this job's workflow and activities run only on the child workers
    let r: Awaited<ReturnType<typeof submit>>;
    try {
      r = await submit(key, { model: T2V, prompt: 'survive the crash', duration: '5' });
    } finally {
      config.taskQueue = mainQueue;
    }
    assert.equal(r.status, 202);
    const job = await until(
      async () => fal.jobs.find((j) => j.input.prompt === 'survive the crash'),
      Boolean,
      20_000,
      'submit',
    );
    await until(
      async () => job!.polls,
      (p) => p >= 3,
      20_000,
      'polling in progress',
    );
    await first.kill();
    fal.release(job!.id); // the provider finishes while no worker is running
    const pollsAtKill = job!.polls;
    await new Promise((res) => setTimeout(res, 1000)); // a fixed time on purpose: no poll may come within it
    assert.equal(job!.polls, pollsAtKill, 'nobody polls while the worker is dead');
    assert.notEqual((await status(key, r.body.runId)).body.data.status, 'completed');

    first = await startWorker();
    try {
      const d = (await settled(key, r.body.runId, 90_000)).body.data;
      assert.equal(d.status, 'completed');
      assert.equal(fal.jobs.filter((j) => j.input.prompt === 'survive the crash').length, 1, 'submitted once');
      const charge = price(T2V, 4);
      assert.deepEqual(await chargesFor(r.body.runId), [-charge]);
      assert.deepEqual(await usd(accountId), {
        amount: parseAmount('10', 'USD') - charge,
        held: 0n,
        available: parseAmount('10', 'USD') - charge,
      });
      const desc = await until(
        () => t.client.workflow.getHandle(r.body.runId).describe(),
        (x) => x.status.name !== 'RUNNING',
        10_000,
        'the workflow to close',
      );
      assert.equal(desc.status.name, 'COMPLETED');
      assert.equal(desc.taskQueue, queue);
    } finally {
      await first.kill();
    }
  });

  it('catalog: video routes are priced per second with the markup', () => {
    const r = catalog().model(T2V)!.routes[0];
    assert.equal(r.upstreamPrice.input, 280_000_000n);
    assert.equal(r.price.input, VIDEO_PER_SECOND[T2V], '0.28 USD a second + 5%');
  });
});
