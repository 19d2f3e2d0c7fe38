// biome-ignore-all lint/suspicious/noExplicitAny: wire JSON, read field by field
// Video jobs (POST /api/generate-video → the `videoJob` workflow) when an activity attempt dies
// half-way: a submit to fal repeated because the attempt did not learn or keep the provider's
// request id, and a worker killed between the job record and the settlement (the next worker
// settles, once). The real API, the real Temporal dev server, worker processes of their own where
// a test kills or stops one (test/support/workerProcess.ts), database faults at an exact step
// (test/support/dbFaults.ts), and the loopback fal queue server, whose count of submits is the
// provider's own view.
//
// fal's queue has no idempotency key, so a submit that fal accepted but whose answer never
// reached the activity is submitted again by the retry. Where the gateway can narrow that, it
// does, and these tests hold it to it (a worker shutting down reads its submit to the end; an id
// it cannot store is cancelled at fal); where it cannot (the answer lost on the network, a worker
// killed before it stores the id), they pin down exactly what happens: two fal jobs, the first
// left running at our expense, the caller charged once. Expected charges are the catalog's list
// price worked out here, not with the production pricing code. The books balance after each test.
import assert from 'node:assert/strict';
import { startApi, newAccount } from './support/api.js';
import { MockActivityEnvironment } from '@temporalio/testing';
import { useTemporal } from './support/temporal.js';
import { startFalUpstream, type FalUpstream } from './support/upstreams/fal.js';
import { assertBooksBalance } from './support/books.js';
import { onOwnWorkers } from './support/ownWorkers.js';
import { failUpdateOnce, holdUpdates } from './support/dbFaults.js';
import { balances } from '../activities/ledger/ledger.js';
import { config } from '../activities/config.js';
import { finishVideoJob } from '../activities/video/finish.js';
import { pollVideoJob, submitVideoJob } from '../activities/video/run.js';
import { db } from '../activities/db.js';
import { useProviderEnv } from './support/providerEnv.js';
import { until } from './support/wait.js';

const ENV = [
  'FAL_API_KEY',
  'FAL_BASE_URL',
  'SWITCHYARD_FETCH_ALLOW_PRIVATE',
  'SWITCHYARD_VIDEO_POLL_MS',
  'SWITCHYARD_VIDEO_DEADLINE_SECONDS',
];
const T2V = 'kling-2.1-master';
/** Kling 2.1 Master: fal's $0.28 a second + 5% markup = $0.294 a second, in nano-USD. */
const T2V_PER_SECOND = 294_000_000n;
const TEN_USD = 10_000_000_000n;

describe('video jobs when an attempt dies half-way (repeated submits, dead and stopping workers)', function () {
  this.timeout(180_000);
  let api: Awaited<ReturnType<typeof startApi>>;
  let fal: FalUpstream;
  let restoreEnv: () => Promise<void>;

  before(async () => {
    await useTemporal();
    fal = await startFalUpstream();
    restoreEnv = await useProviderEnv(
      {
        FAL_BASE_URL: fal.url,
        FAL_API_KEY: fal.apiKey,
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

  const call = async (key: string, method: string, path: string, body?: unknown) => {
    const res = await fetch(`${api.base}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    return { status: res.status, body: (await res.json()) as any };
  };
  const submit = async (key: string, prompt: string) => {
    const r = await call(key, 'POST', '/api/generate-video', { model: T2V, prompt, duration: '5' });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    return r.body.runId as string;
  };
  const status = async (key: string, id: string) =>
    (await call(key, 'GET', `/api/video/status?requestId=${id}`)).body.data;
  /** The job's record is terminal and its workflow closed (so its money has moved). */
  const ended = async (key: string, id: string, ms = 90_000) => {
    await until(
      () => status(key, id),
      (d) => ['completed', 'failed', 'cancelled'].includes(d?.status),
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
  const falJobs = (prompt: string) => fal.jobs.filter((j) => j.input.prompt === prompt);
  const submits = (prompt: string) =>
    fal.requests.filter((q) => q.method === 'POST' && q.body?.prompt === prompt).length;
  const chargesFor = async (id: string) =>
    (
      await db().pool.query(
        `SELECT e.amount FROM ledger_entries e JOIN balance_holds h ON h.id = e.hold_id WHERE h.request_id = $1 AND e.kind = 'charge'`,
        [id],
      )
    ).rows.map((r) => BigInt(r.amount));
  const usd = async (accountId: string) => (await balances(accountId))!.USD;

  /** A completed job charged once for `seconds`, made from fal job `from`, the account's only spending. */
  async function assertChargedOnce(key: string, accountId: string, id: string, from: { id: string }, seconds = 5) {
    const d = await ended(key, id);
    assert.equal(d.status, 'completed', JSON.stringify(d));
    const cost = BigInt(seconds) * T2V_PER_SECOND;
    assert.equal(d.cost, Number(cost) / 1e9);
    assert.equal(d.details.billedSeconds, seconds);
    assert.deepEqual(await chargesFor(id), [-cost]);
    assert.deepEqual(await usd(accountId), { amount: TEN_USD - cost, held: 0n, available: TEN_USD - cost });
    const video = Buffer.from(await (await fetch(d.videoUrl)).arrayBuffer());
    assert.deepEqual(video, fal.fileBytes(from.id, 0), 'the hosted video is the output of the fal job on record');
    const row = await db().prisma.mediaJob.findUnique({ where: { id } });
    assert.equal(row!.providerRequestId, from.id);
    assert.equal(row!.cost!.toString(), cost.toString());
  }

  it('the answer to an accepted submit is lost: the retry submits again (fal has no idempotency key); two fal jobs, the first left running, the caller charged once', async () => {
    const { key, accountId } = await newAccount('10');
    const prompt = 'a submit whose answer is lost';
    fal.script({ loseSubmitResponse: true, queuePolls: 0, progressPolls: 0 }, { queuePolls: 0, progressPolls: 0 });
    const id = await submit(key, prompt);
    const [first, second] = await until(
      async () => falJobs(prompt),
      (j) => j.length === 2,
      30_000,
      'the retry to submit again',
    );
    await assertChargedOnce(key, accountId, id, second);
    assert.equal(submits(prompt), 2, 'fal saw two submits');
    assert.equal(falJobs(prompt).length, 2);
    // the known, inherent risk: nobody knows the first job's id, so nobody polls or cancels it
    assert.equal(first.polls, 0);
    assert.equal(first.cancelled, false);
    assert.equal(first.resultFetches, 0);
  });

  it('a worker killed after fal accepted the submit, before the id is stored: the retry submits again; the caller is charged once', async () => {
    await onOwnWorkers('video-submit-kill', async (startWorker) => {
      const worker = await startWorker();
      const { key, accountId } = await newAccount('10');
      const prompt = 'a submit outlived by its worker';
      // fal accepts the job at once and answers 5 s later: the worker dies in between
      fal.script({ submitDelayMs: 5_000, queuePolls: 0, progressPolls: 0 }, { queuePolls: 0, progressPolls: 0 });
      const id = await submit(key, prompt);
      await until(
        async () => falJobs(prompt).length,
        (n) => n === 1,
        30_000,
        'fal to accept the submit',
      );
      await worker.kill();
      assert.equal((await db().prisma.mediaJob.findUnique({ where: { id } }))!.providerRequestId, null);
      await startWorker();
      // the attempt is given up after the submit's 30 s start-to-close timeout, then retried
      const [first, second] = await until(
        async () => falJobs(prompt),
        (j) => j.length === 2,
        60_000,
        'the retry to submit again',
      );
      await assertChargedOnce(key, accountId, id, second);
      assert.equal(submits(prompt), 2);
      assert.equal(first.polls, 0, 'the first fal job is left running: its id was never stored');
      assert.equal(first.cancelled, false);
    });
  });

  it('a worker killed while it watches the provider: another takes the watch over after the heartbeat timeout; one fal job, charged once', async () => {
    await onOwnWorkers('video-watch-kill', async (startWorker) => {
      const worker = await startWorker();
      const { key, accountId } = await newAccount('10');
      const prompt = 'a watch outlived by its worker';
      // in the queue for 40 checks (8 s at 200 ms): the worker dies a few checks in
      fal.script({ queuePolls: 40, progressPolls: 2 });
      const id = await submit(key, prompt);
      await until(
        async () => falJobs(prompt)[0]?.polls ?? 0,
        (n) => n >= 3,
        30_000,
        'the watch to check a few times',
      );
      await worker.kill();
      const polled = falJobs(prompt)[0].polls;
      await startWorker();
      // the watch's heartbeat timeout (30 s) passes, then its retry runs on the new worker
      await until(
        async () => falJobs(prompt)[0].polls,
        (n) => n > polled,
        60_000,
        'the new worker to resume the checks',
      );
      await assertChargedOnce(key, accountId, id, falJobs(prompt)[0]);
      assert.equal(submits(prompt), 1, 'the job was submitted once');
      const history = await (await useTemporal()).client.workflow.getHandle(id).fetchHistory();
      const watches = history.events!.filter(
        (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'watchVideoJob',
      );
      assert.equal(watches.length, 1, 'one watch activity, retried (not a new one per check)');
      const timedOut = history.events!.some((e) => e.activityTaskTimedOutEventAttributes);
      const retried = history.events!.some((e) => (e.activityTaskStartedEventAttributes?.attempt ?? 1) > 1);
      assert.ok(timedOut || retried, 'the dead attempt was timed out and retried');
    });
  });

  it('a worker stopped (SIGTERM) while its submit is in flight reads the answer and stores the id: one fal job', async () => {
    await onOwnWorkers('video-submit-stop', async (startWorker) => {
      const worker = await startWorker();
      const { key, accountId } = await newAccount('10');
      const prompt = 'a submit during a shutdown';
      fal.script({ submitDelayMs: 2_000, queuePolls: 0, progressPolls: 0 });
      const id = await submit(key, prompt);
      await until(
        async () => falJobs(prompt).length,
        (n) => n === 1,
        30_000,
        'fal to accept the submit',
      );
      // The worker drains: Temporal's SDK cancels the running activities at once. The submit is
      // read to its end anyway, so the id fal gave is on record before the process exits.
      await worker.stop();
      const [only] = falJobs(prompt);
      assert.equal((await db().prisma.mediaJob.findUnique({ where: { id } }))!.providerRequestId, only.id);
      await startWorker();
      await assertChargedOnce(key, accountId, id, only);
      assert.equal(submits(prompt), 1, 'submitted once');
    });
  });

  it('the request id cannot be stored (a database failure): the job fal accepted is cancelled there, the retry submits again, the caller is charged once', async () => {
    const { key, accountId } = await newAccount('10');
    const prompt = 'a submit whose id could not be stored';
    const removeFault = await failUpdateOnce(
      'media_jobs',
      `NEW.account_id = '${accountId}' AND NEW.provider_request_id IS NOT NULL AND OLD.provider_request_id IS NULL`,
      'the database went away',
    );
    try {
      fal.script({ queuePolls: 0, progressPolls: 0 }, { queuePolls: 0, progressPolls: 0 });
      const id = await submit(key, prompt);
      const [first, second] = await until(
        async () => falJobs(prompt),
        (j) => j.length === 2,
        30_000,
        'the retry to submit again',
      );
      await assertChargedOnce(key, accountId, id, second);
      assert.equal(submits(prompt), 2);
      assert.equal(first.cancelled, true, 'the job whose id was lost was cancelled at fal');
      assert.equal(second.cancelled, false);
    } finally {
      await removeFault();
    }
  });

  it('a worker killed between the job record and the settlement: the next worker settles it once; record completed with its cost, books balance', async () => {
    // finishVideoJob records the job completed (with the charge to come) and then settles; a
    // crash in between leaves the money held, and the retry, finding the record terminal, settles.
    await onOwnWorkers('video-kill-settling', async (startWorker) => {
      const worker = await startWorker();
      const { key, accountId } = await newAccount('10');
      const prompt = 'a video paid for after its worker died';
      const held = await holdUpdates(
        'balance_holds',
        `NEW.account_id = '${accountId}' AND NEW.status = 'settled' AND OLD.status = 'active'`,
      );
      try {
        fal.script({ queuePolls: 0, progressPolls: 0, duration: 4 });
        const id = await submit(key, prompt);
        await until(
          () => held.waiting(),
          (w) => w.length === 1,
          30_000,
          'the settlement',
        );
        const cost = 4n * T2V_PER_SECOND;
        const recorded = await db().prisma.mediaJob.findUnique({ where: { id } });
        assert.equal(recorded!.status, 'completed');
        assert.equal(recorded!.cost!.toString(), cost.toString());
        await worker.kill();
        await held.dropWaiting(); // the dead worker's settlement never commits
        await held.release();
        assert.deepEqual(await chargesFor(id), [], 'no money has moved yet');
        assert.equal((await usd(accountId)).held, 5n * T2V_PER_SECOND);

        await startWorker();
        // finishVideoJob is tried again once its heartbeat timeout (30 s) has passed
        await until(
          () => chargesFor(id),
          (c) => c.length > 0,
          90_000,
          'the next worker to settle',
        );
        await assertChargedOnce(key, accountId, id, falJobs(prompt)[0], 4);
        assert.equal(submits(prompt), 1);
        await assertBooksBalance(accountId);
      } finally {
        await held.release();
      }
    });
  });

  it('finishVideoJob heartbeats while a slow download runs: a long download is not taken for a dead worker', async () => {
    // The activity run directly (as the worker runs it) against a job no worker polls, with a
    // download that takes longer than the 5 s between heartbeats.
    const { key } = await newAccount('10');
    const prompt = 'a video slow to download';
    const mainQueue = config.taskQueue;
    config.taskQueue = `video-nobody-${process.pid}`;
    let id: string;
    try {
      id = await submit(key, prompt);
    } finally {
      config.taskQueue = mainQueue;
    }
    fal.script({ queuePolls: 0, progressPolls: 0, fileDelayMs: 7_000 });
    const run = <A extends unknown[]>(fn: (...a: A) => Promise<string>, ...args: A) =>
      new MockActivityEnvironment().run(fn as any, ...args) as Promise<string>;
    assert.equal(await run(submitVideoJob, id), 'queued');
    assert.equal(await run(pollVideoJob, id), 'completed');
    const finishing = new MockActivityEnvironment();
    const beats: number[] = [];
    finishing.on('heartbeat', () => beats.push(Date.now()));
    const started = Date.now();
    assert.equal(await finishing.run(finishVideoJob, id), 'completed');
    const took = Date.now() - started;
    assert.ok(took >= 7_000, `the download took ${took} ms`);
    assert.ok(beats.length >= 1, `heartbeats during a ${took} ms finish: ${beats.length}`);
    assert.ok(
      beats.every((b, i) => b - (beats[i - 1] ?? started) <= 6_000),
      'never more than about 5 s without one',
    );
    await (await useTemporal()).client.workflow.getHandle(id).terminate('driven by the test');
  });
});
