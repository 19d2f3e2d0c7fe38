// biome-ignore-all lint/suspicious/noExplicitAny: wire JSON, read field by field
// Asynchronous speech jobs (POST /api/tts → the `speechJob` workflow) when the worker running
// them goes wrong, against the real Temporal dev server, worker processes of their own
// (test/support/workerProcess.ts) and the loopback ElevenLabs server:
// - a worker that stops heartbeating mid-synthesis (frozen with SIGSTOP: alive, connections
//   open, silent) loses the attempt to Temporal's heartbeat timeout and another worker finishes
//   the job, charged once; thawed, the old attempt learns it is no longer its own and changes
//   nothing;
// - a synthesis slower than the heartbeat timeout is not mistaken for a dead one;
// - when every attempt stops heartbeating, the job ends `error` and its reservation is released;
// The books balance after every test. Expected charges are worked out here from the catalog's
// list price, not with the production pricing code.
import assert from 'node:assert/strict';
import protos from '@temporalio/proto';
import { startApi, newAccount, apiPost } from './support/api.js';
import {
  startOpenAISpeechUpstream,
  startElevenLabsUpstream,
  speechEnv,
  type SpeechUpstream,
} from './support/upstreams/speech.js';
import { useTemporal } from './support/temporal.js';
import { onOwnWorkers } from './support/ownWorkers.js';
import { holdUpdates } from './support/dbFaults.js';
import { assertBooksBalance } from './support/books.js';
import { balances } from '../activities/ledger/ledger.js';
import { db } from '../activities/db.js';
import { useProviderEnv } from './support/providerEnv.js';
import { until } from './support/wait.js';

const MUSIC = 'elevenlabs/music_v1';
/** Eleven Music: $0.80 a minute upstream + 5% markup = $0.84 a minute = $0.014 a second, in nano-USD. */
const MUSIC_PER_SECOND = 14_000_000n;
const ONE_USD = 1_000_000_000n;
const HEARTBEAT_TIMEOUT = protos.temporal.api.enums.v1.TimeoutType.TIMEOUT_TYPE_HEARTBEAT;

describe('speech jobs when their worker fails (heartbeats, retries, money)', function () {
  this.timeout(180_000);
  let api: Awaited<ReturnType<typeof startApi>>;
  let openai: SpeechUpstream;
  let eleven: SpeechUpstream;
  let restoreEnv: () => Promise<void>;

  before(async () => {
    await useTemporal();
    openai = await startOpenAISpeechUpstream();
    eleven = await startElevenLabsUpstream();
    restoreEnv = await useProviderEnv(speechEnv(openai, eleven));
    api = await startApi();
  });
  after(async () => {
    await api?.close();
    await openai?.close();
    await eleven?.close();
    await restoreEnv?.();
  });
  afterEach(async () => {
    eleven.script();
    await assertBooksBalance();
  });

  const tts = async (key: string, body: unknown) => {
    const res = await apiPost(api.base, '/api/tts', body, { headers: { 'x-api-key': key } });
    assert.equal(res.status, 202, await res.clone().text());
    return ((await res.json()) as any).runId as string;
  };
  const status = async (key: string, runId: string) =>
    (await (
      await fetch(`${api.base}/api/tts/status?runId=${encodeURIComponent(runId)}`, { headers: { 'x-api-key': key } })
    ).json()) as any;
  const finished = (key: string, runId: string, ms = 90_000) =>
    until(
      () => status(key, runId),
      (j) => j.status !== 'pending',
      ms,
      `job ${runId} to finish`,
    );
  const usd = async (accountId: string) => (await balances(accountId))!.USD;
  const charges = async (accountId: string) =>
    (
      await db().pool.query(`SELECT amount FROM ledger_entries WHERE account_id = $1 AND kind = 'charge'`, [accountId])
    ).rows.map((r) => BigInt(r.amount));
  const upstreamCalls = (since: number) => eleven.requests.slice(since);

  /** The attempts of `activity` the workflow's history records (Temporal writes each when it ends). */
  /**
   * The attempts of `activity` that started, from the workflow's history. A retried activity's
   * ActivityTaskStarted is written only when the attempt ends, which can be a moment after the job's
   * row says it is done: wait until the history has one.
   */
  async function attemptsOf(runId: string, activity: string) {
    const handle = (await useTemporal()).client.workflow.getHandle(runId);
    const read = async () => {
      const history = await handle.fetchHistory();
      const scheduled = new Map<string, string>();
      const attempts: Array<{ attempt: number; lastFailure: any }> = [];
      for (const e of history.events ?? []) {
        const s = e.activityTaskScheduledEventAttributes;
        if (s) scheduled.set(String(e.eventId), s.activityType?.name ?? '');
        const st = e.activityTaskStartedEventAttributes;
        if (st && scheduled.get(String(st.scheduledEventId)) === activity)
          attempts.push({ attempt: st.attempt ?? 0, lastFailure: st.lastFailure ?? null });
      }
      return attempts;
    };
    return until(read, (a) => a.length > 0, 30_000, `an attempt of ${activity} in the history of ${runId}`);
  }

  /** The activity the workflow is waiting on now, as `describe` shows it (undefined when none). */
  async function pending(runId: string, activity: string) {
    const desc = await (await useTemporal()).client.workflow.getHandle(runId).describe();
    return desc.raw.pendingActivities?.find((a) => a.activityType?.name === activity);
  }

  it('a worker that stops heartbeating mid-synthesis (frozen): the heartbeat timeout gives the job to another worker, charged once; thawed, the old attempt changes nothing', async () => {
    await onOwnWorkers('tts-frozen', async (startWorker) => {
      // One activity at a time: while its one slot is taken by the frozen attempt it keeps no poll
      // open at the server, so the retry goes to the healthy worker. (A frozen worker with free
      // slots has polls open, and a retry handed to one of them times out again: the next test.)
      const first = await startWorker({ TEMPORAL_MAX_CONCURRENT_ACTIVITIES: '1' });
      const { key, accountId } = await newAccount('1');
      const before = eleven.requests.length;
      eleven.script({ hang: true }, {}); // the first attempt's synthesis never ends; the second's does
      const runId = await tts(key, { text: 'a song for a frozen worker', model: MUSIC, duration: 30 });
      const cost = 30n * MUSIC_PER_SECOND;
      await until(
        async () => upstreamCalls(before).length,
        (n) => n === 1,
        30_000,
        'the first attempt to call ElevenLabs',
      );
      assert.equal((await usd(accountId)).held, cost);
      const frozenAt = Date.now();
      first.freeze();

      // no heartbeat for 10 s: Temporal times the attempt out and schedules the next one
      const retry = await until(
        () => pending(runId, 'runSpeechJob'),
        (a) => (a?.attempt ?? 0) >= 2,
        30_000,
        'the heartbeat timeout to schedule attempt 2',
      );
      assert.equal(retry!.lastFailure?.timeoutFailureInfo?.timeoutType, HEARTBEAT_TIMEOUT, JSON.stringify(retry));
      assert.ok(Date.now() - frozenAt < 25_000, 'noticed within the heartbeat timeout, not the 15-minute one');
      assert.equal((await status(key, runId)).status, 'pending');

      await startWorker();
      const done = await finished(key, runId);
      assert.equal(done.status, 'completed', JSON.stringify(done));
      assert.equal(done.seconds, 30);
      assert.equal(done.cost, 0.42);
      assert.equal(upstreamCalls(before).length, 2);
      const attempts = await attemptsOf(runId, 'runSpeechJob');
      assert.deepEqual(
        attempts.map((a) => a.attempt),
        [2],
        'the attempt that completed is the second',
      );
      assert.equal(attempts[0].lastFailure?.timeoutFailureInfo?.timeoutType, HEARTBEAT_TIMEOUT);
      assert.deepEqual(await charges(accountId), [-cost]);
      assert.deepEqual(await usd(accountId), { amount: ONE_USD - cost, held: 0n, available: ONE_USD - cost });
      const row = await db().prisma.mediaJob.findUnique({ where: { id: runId } });
      assert.equal(row!.status, 'completed');
      assert.equal(row!.cost!.toString(), cost.toString());

      // Thawed, the first worker heartbeats again, hears that the attempt is no longer its own,
      // and abandons its synthesis: no second charge, no second release, the job record unchanged.
      first.thaw();
      await until(
        async () => upstreamCalls(before)[0].aborted,
        Boolean,
        20_000,
        "the thawed worker's synthesis to be abandoned",
      );
      await new Promise((r) => setTimeout(r, 1000)); // a fixed time on purpose: no second charge may come within it
      assert.deepEqual(await charges(accountId), [-cost]);
      assert.deepEqual(await usd(accountId), { amount: ONE_USD - cost, held: 0n, available: ONE_USD - cost });
      const after = await db().prisma.mediaJob.findUnique({ where: { id: runId } });
      assert.deepEqual(
        { status: after!.status, cost: after!.cost?.toString(), file: after!.outputFileId, error: after!.error },
        { status: 'completed', cost: cost.toString(), file: row!.outputFileId, error: null },
      );
    });
  });

  it('a synthesis slower than the heartbeat timeout keeps its attempt: the activity heartbeats while it waits', async () => {
    const { key, accountId } = await newAccount('1');
    const before = eleven.requests.length;
    eleven.script({ delayMs: 13_000 }); // 13 s before the first byte: longer than the 10 s heartbeat timeout
    const runId = await tts(key, { text: 'a slow song', model: MUSIC, duration: 10 });
    const done = await finished(key, runId, 60_000);
    assert.equal(done.status, 'completed', JSON.stringify(done));
    assert.equal(upstreamCalls(before).length, 1, 'one attempt, never timed out');
    assert.deepEqual(
      (await attemptsOf(runId, 'runSpeechJob')).map((a) => a.attempt),
      [1],
    );
    assert.deepEqual(await charges(accountId), [-10n * MUSIC_PER_SECOND]);
  });

  it('a local engine that hangs (no audio for LOCAL_SPEECH_STALL_SECONDS) is stopped, the job retried, then an error, released', async () => {
    // A hung engine runs in its own thread, so the activity's heartbeat (which only proves the
    // worker alive) would go on forever; the engine's own bound stops it instead. Here the bound
    // is 1 s against a 10,000-character text whose first piece takes seconds: every attempt stalls.
    const saved = process.env.LOCAL_SPEECH_STALL_SECONDS;
    process.env.LOCAL_SPEECH_STALL_SECONDS = '1';
    const { key, accountId } = await newAccount('1');
    let runId: string;
    try {
      const text = 'The quick brown fox jumps over the lazy dog. '.repeat(250).slice(0, 10_000);
      runId = await tts(key, { text, model: 'local/espeak', voice: 'alloy' });
      // $0.50 per million characters, no markup
      assert.equal((await usd(accountId)).held, 5_000_000n);
      const done = await finished(key, runId, 60_000);
      assert.equal(done.status, 'error', JSON.stringify(done));
      // the caller reads the gateway's words (the engine's own, "produced no audio for 1 s", go to the log)
      assert.match(done.error, /^local did not answer in time\..*request id tts_.*Nothing was charged/);
    } finally {
      if (saved === undefined) delete process.env.LOCAL_SPEECH_STALL_SECONDS;
      else process.env.LOCAL_SPEECH_STALL_SECONDS = saved;
    }
    const attempts = await attemptsOf(runId, 'runSpeechJob');
    assert.deepEqual(
      attempts.map((a) => a.attempt),
      [3],
      'the third (last) attempt ended it',
    );
    assert.match(attempts[0].lastFailure?.message ?? '', /local did not answer in time/);
    assert.deepEqual(await charges(accountId), []);
    assert.deepEqual(await usd(accountId), { amount: ONE_USD, held: 0n, available: ONE_USD });
    // the stopped engines gave their slots back: the next synthesis runs
    const res = await fetch(`${api.base}/api/v1/audio/speech`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ model: 'local/espeak', input: 'Still here.', voice: 'alloy', response_format: 'wav' }),
    });
    assert.equal(res.status, 200, await res.clone().text());
    assert.ok((await res.arrayBuffer()).byteLength > 1000);
  });

  it('a worker killed after the settlement is written, before the job record: the next worker completes the record; charged once, books balance', async () => {
    await onOwnWorkers('tts-kill-settled', async (startWorker) => {
      const worker = await startWorker();
      const { key, accountId } = await newAccount('1');
      // the job's record may not become `completed` until the test says so (the update waits in the database)
      const held = await holdUpdates(
        'media_jobs',
        `NEW.account_id = '${accountId}' AND NEW.status = 'completed' AND OLD.status <> 'completed'`,
      );
      try {
        const before = eleven.requests.length;
        const runId = await tts(key, { text: 'a song paid for by a dying worker', model: MUSIC, duration: 30 });
        const cost = 30n * MUSIC_PER_SECOND;
        await until(
          () => charges(accountId),
          (c) => c.length === 1,
          30_000,
          'the settlement',
        );
        await until(
          () => held.waiting(),
          (w) => w.length === 1,
          10_000,
          'the job record update',
        );
        await worker.kill();
        await held.dropWaiting(); // the dead worker's database session ends with it: its update never happens
        await held.release();
        // in between: the money has moved, the record still says pending
        assert.deepEqual(await charges(accountId), [-cost]);
        assert.deepEqual(await usd(accountId), { amount: ONE_USD - cost, held: 0n, available: ONE_USD - cost });
        const between = await db().prisma.mediaJob.findUnique({ where: { id: runId } });
        assert.equal(between!.status, 'pending');

        await startWorker();
        const done = await finished(key, runId);
        assert.equal(done.status, 'completed', JSON.stringify(done));
        assert.equal(done.cost, 0.42);
        assert.equal(done.seconds, 30);
        assert.deepEqual(await charges(accountId), [-cost], 'charged exactly once');
        assert.deepEqual(await usd(accountId), { amount: ONE_USD - cost, held: 0n, available: ONE_USD - cost });
        const row = await db().prisma.mediaJob.findUnique({ where: { id: runId } });
        assert.equal(row!.status, 'completed');
        assert.equal(row!.cost!.toString(), cost.toString());
        assert.equal(row!.currency, 'USD');
        assert.ok(row!.completedAt);
        assert.ok((await (await fetch(done.audioUrl)).arrayBuffer()).byteLength > 0);
        assert.equal(upstreamCalls(before).length, 1, 'the audio made before the crash is the one kept: made once');
        await assertBooksBalance(accountId);
      } finally {
        await held.release();
      }
    });
  });

  it('every attempt stops heartbeating: after the last, the job is an error, its reservation released, nothing charged', async () => {
    await onOwnWorkers('tts-frozen-thrice', async (startWorker) => {
      const worker = await startWorker();
      const { key, accountId } = await newAccount('1');
      const before = eleven.requests.length;
      eleven.script({ hang: true }, { hang: true }, { hang: true });
      const runId = await tts(key, { text: 'a song nobody finishes', model: MUSIC, duration: 20 });
      assert.equal((await usd(accountId)).held, 20n * MUSIC_PER_SECOND);
      for (let attempt = 1; attempt <= 3; attempt++) {
        await until(
          async () => upstreamCalls(before).length,
          (n) => n === attempt,
          30_000,
          `attempt ${attempt} to call ElevenLabs`,
        );
        worker.freeze();
        // the attempt is timed out (the next one scheduled, or, after the third, none left)
        await until(
          () => pending(runId, 'runSpeechJob'),
          (a) => (attempt < 3 ? (a?.attempt ?? 0) > attempt : a === undefined),
          30_000,
          `attempt ${attempt} to time out`,
        );
        assert.equal((await status(key, runId)).status, 'pending');
        worker.thaw();
      }
      const done = await finished(key, runId);
      assert.equal(done.status, 'error', JSON.stringify(done));
      assert.match(done.error, /heartbeat/i);
      assert.match(done.error, /Nothing was charged/);
      assert.equal(upstreamCalls(before).length, 3, 'three attempts, as the retry policy says');
      assert.deepEqual(await charges(accountId), []);
      assert.deepEqual(await usd(accountId), { amount: ONE_USD, held: 0n, available: ONE_USD });
      const hold = await db().pool.query(`SELECT status FROM balance_holds WHERE request_id = $1`, [runId]);
      assert.deepEqual(
        hold.rows.map((r) => r.status),
        ['released'],
      );
    });
  });
});
