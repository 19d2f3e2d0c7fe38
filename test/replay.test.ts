// biome-ignore-all lint/suspicious/noExplicitAny: wire JSON, read field by field
// Recorded workflow histories replayed against the current workflow code. A job's workflow runs
// for minutes to hours; a worker started with new code replays the histories of the jobs in
// flight, and a change that makes different commands (another activity, a timer more or less,
// a different order) throws DeterminismViolationError there and strands those jobs. Each file in
// test/fixtures/ is the real history of one path through a workflow, exported from the Temporal
// dev server with `temporal workflow show --output json`; each is replayed here with
// Worker.runReplayHistory, after checking that it still is the path its name says.
//
// Re-recording: when a workflow change is intended, keep running jobs working by gating the new
// behaviour with `patched('<name>')` from @temporalio/workflow (old histories take the old
// branch), then record the fixtures again from real runs:
//   RECORD_HISTORIES=1 npm run test:one -- test/replay.test.ts                      (all of them)
//   RECORD_HISTORIES=1 npm run test:one -- test/replay.test.ts -g speechJob-failed  (one)
// Recording runs each job below against the loopback upstreams and overwrites its file; commit
// the new files with the change. Keep the old file under another name too if jobs recorded
// under the old code may still be running when the change ships: it must replay as well.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode, DefaultLogger, Worker, type WorkflowBundle } from '@temporalio/worker';
import { exportHistoryJson, loadHistoryJson } from './support/replayHistory.js';
import { startApi, newAccount, apiPost } from './support/api.js';
import { useTemporal } from './support/temporal.js';
import { startFalUpstream, type FalUpstream } from './support/upstreams/fal.js';
import {
  startElevenLabsUpstream,
  startOpenAISpeechUpstream,
  speechEnv,
  type SpeechUpstream,
} from './support/upstreams/speech.js';
import { useProviderEnv } from './support/providerEnv.js';
import { startOpenAIUpstream, type OpenAIUpstream } from './support/upstreams/openai.js';
import { config } from '../activities/config.js';
import { db } from '../activities/db.js';
import { credit } from '../activities/ledger/ledger.js';
import { parseAmount } from '../activities/core/money.js';
import { assertBooksBalance } from './support/books.js';
import { until } from './support/wait.js';
import { person, teamEmail, teamFixture } from './support/teams.js';
import { testPlan, usePlans } from './support/plans.js';
import { startBtcpayUpstream, type BtcpayUpstream } from './support/upstreams/btcpay.js';

const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));
const WORKFLOWS = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));

/** What a recorded path looks like: its activities in order (repeats folded) and how the run closed. */
interface Path {
  activities: string[];
  /** the closing event's type, without EVENT_TYPE_WORKFLOW_EXECUTION_ */
  closed: 'COMPLETED' | 'CANCELED';
  /** the workflow's result (for COMPLETED) */
  result?: string;
  /** other event types the path must contain */
  has?: string[];
}

/** Every fixture: the path it records. A fixture without an entry here fails, so none is replayed unchecked. */
const PATHS: Record<string, Path> = {
  // a team invitation e-mailed, then accepted (a workflow update running the accept activity)
  'teamInvitation-accepted': {
    activities: ['sendTeamInvitationMail', 'acceptTeamInvitation'],
    closed: 'COMPLETED',
    result: 'accepted',
    has: ['EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED'],
  },
  'teamInvitation-revoked': {
    activities: ['sendTeamInvitationMail', 'revokeTeamInvitation'],
    closed: 'COMPLETED',
    result: 'revoked',
    has: ['EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED'],
  },
  // nobody answered: the workflow's timer fired and the expiry was recorded
  'teamInvitation-expired': {
    activities: ['sendTeamInvitationMail', 'expireTeamInvitation'],
    closed: 'COMPLETED',
    result: 'expired',
    has: ['EVENT_TYPE_TIMER_FIRED'],
  },
  // a credit invitation redeemed (the API signals its end), revoked (the hold released once more
  // by the workflow's activity), or left to its timer (expired, the hold released)
  'creditInvitation-redeemed': {
    activities: [],
    closed: 'COMPLETED',
    result: 'redeemed',
    has: ['EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED'],
  },
  'creditInvitation-revoked': {
    activities: ['closeCreditInvitation'],
    closed: 'COMPLETED',
    result: 'revoked',
    has: ['EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED'],
  },
  'creditInvitation-expired': {
    activities: ['expireCreditInvitation'],
    closed: 'COMPLETED',
    result: 'expired',
    has: ['EVENT_TYPE_TIMER_FIRED'],
  },
  // the provider's queue watched by one heartbeating activity (patch `video-watch-activity`)
  'videoJob-completed': {
    activities: ['submitVideoJob', 'watchVideoJob', 'finishVideoJob'],
    closed: 'COMPLETED',
    result: 'completed',
    has: ['EVENT_TYPE_MARKER_RECORDED'],
  },
  // the provider reports the run failed on a status check: the watch ends, the check released the money
  'videoJob-failed': {
    activities: ['submitVideoJob', 'watchVideoJob'],
    closed: 'COMPLETED',
    result: 'failed',
    has: ['EVENT_TYPE_MARKER_RECORDED'],
  },
  // an activity fails for good (fal refuses our key): the workflow's catch runs the compensation
  'videoJob-gave-up': {
    activities: ['submitVideoJob', 'closeVideoJob'],
    closed: 'COMPLETED',
    result: 'failed',
    has: ['EVENT_TYPE_ACTIVITY_TASK_FAILED'],
  },
  // cancelled by a cancel request alone (an operator in the Web UI; the route before it waited on an update)
  'videoJob-cancelled': {
    activities: ['submitVideoJob', 'watchVideoJob', 'closeVideoJob'],
    closed: 'CANCELED',
    has: ['EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED', 'EVENT_TYPE_MARKER_RECORDED'],
  },
  // cancelled through POST /api/generate-video/cancel: the route waits on the `ended` update, answered
  'videoJob-cancelled-heard': {
    activities: ['submitVideoJob', 'watchVideoJob', 'closeVideoJob'],
    closed: 'CANCELED',
    has: ['EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED', 'EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED'],
  },
  // a background response run and settled in one activity
  'backgroundResponse-completed': { activities: ['runBackgroundResponse'], closed: 'COMPLETED', result: 'completed' },
  // cancelled through POST /v1/responses/{id}/cancel while its upstream call hangs: the activity is
  // cancelled, the compensation releases the reservation, the route hears the end on `ended`
  'backgroundResponse-cancelled-heard': {
    activities: ['runBackgroundResponse', 'closeBackgroundResponse'],
    closed: 'CANCELED',
    has: ['EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED', 'EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED'],
  },
  // Recorded before the watch activity, when the workflow polled with a timer and one check per
  // turn: jobs started then may still be running when a worker with the new code picks them up.
  // They cannot be recorded again (the code that made them is gone); keep them while such jobs
  // may exist (the longest video deadline after the change ships).
  'videoJob-timer-completed': {
    activities: ['submitVideoJob', 'pollVideoJob', 'finishVideoJob'],
    closed: 'COMPLETED',
    result: 'completed',
    has: ['EVENT_TYPE_TIMER_FIRED'],
  },
  'videoJob-timer-failed': {
    activities: ['submitVideoJob', 'pollVideoJob'],
    closed: 'COMPLETED',
    result: 'failed',
    has: ['EVENT_TYPE_TIMER_FIRED'],
  },
  'videoJob-timer-cancelled': {
    activities: ['submitVideoJob', 'pollVideoJob', 'closeVideoJob'],
    closed: 'CANCELED',
    has: ['EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED'],
  },
  'speechJob-completed': { activities: ['runSpeechJob'], closed: 'COMPLETED', result: 'completed' },
  // every attempt fails: Temporal gives up and the workflow's catch releases and records the error
  'speechJob-failed': {
    activities: ['runSpeechJob', 'closeSpeechJob'],
    closed: 'COMPLETED',
    result: 'error',
    has: ['EVENT_TYPE_ACTIVITY_TASK_FAILED'],
  },
  // a batch of three rows in chunks of two: the parent makes the rows, runs two child chunks, finishes
  'batchJob-completed': {
    activities: ['prepareBatch', 'finishBatch'],
    closed: 'COMPLETED',
    result: 'completed',
    has: ['EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED'],
  },
  'batchChunk-completed': { activities: ['runBatchRows'], closed: 'COMPLETED', result: 'done' },
  // cancelled while its one chunk runs: the parent signals the chunk to start no more rows
  'batchJob-cancelled': {
    activities: ['prepareBatch', 'finishBatch'],
    closed: 'COMPLETED',
    result: 'cancelled',
    has: ['EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED', 'EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED'],
  },
  // the balance pays the first period only: grace (retried), then the subscription lapses
  'subscription-lapsed': {
    activities: ['paySubscriptionPeriod', 'endSubscription'],
    closed: 'COMPLETED',
    result: 'lapsed',
    has: ['EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED', 'EVENT_TYPE_TIMER_FIRED'],
  },
  // cancelled (a workflow update running the activity), ended when the period does
  'subscription-cancelled': {
    activities: ['paySubscriptionPeriod', 'cancelSubscriptionAtPeriodEnd', 'endSubscription'],
    closed: 'COMPLETED',
    result: 'cancelled',
    has: ['EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED', 'EVENT_TYPE_TIMER_FIRED'],
  },
  // grace, then the caller tops up and subscribes again (update payNow): paid; then cancelled
  'subscription-grace-paid': {
    activities: ['paySubscriptionPeriod', 'cancelSubscriptionAtPeriodEnd', 'endSubscription'],
    closed: 'COMPLETED',
    result: 'cancelled',
    has: ['EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED', 'EVENT_TYPE_TIMER_FIRED'],
  },
  // the balance does not cover the first period: nothing more happens
  'subscription-unpaid': {
    activities: ['paySubscriptionPeriod'],
    closed: 'COMPLETED',
    result: 'unpaid',
    has: ['EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED'],
  },
  // a deposit paid and settled: BTCPay's webhooks arrive as signals, the invoice is read again, credited
  'cryptoDeposit-completed': {
    activities: ['observeDeposit', 'completeDeposit'],
    closed: 'COMPLETED',
    result: 'Completed',
    has: ['EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED'],
  },
  // never paid: the workflow's timer wakes it when BTCPay stops watching, and it closes uncredited
  'cryptoDeposit-expired': {
    activities: ['observeDeposit', 'closeDeposit'],
    closed: 'COMPLETED',
    result: 'Expired',
    has: ['EVENT_TYPE_TIMER_FIRED'],
  },
  'batchChunk-stopped': {
    activities: ['runBatchRows'],
    closed: 'COMPLETED',
    result: 'stop',
    has: ['EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED'],
  },
};

const fileOf = (name: string) => `${FIXTURES}${name}.history.json`;

function pathOf(name: string): Path {
  const events: any[] = JSON.parse(readFileSync(fileOf(name), 'utf8')).events;
  const activities: string[] = [];
  for (const e of events) {
    const type = e.activityTaskScheduledEventAttributes?.activityType?.name;
    if (type && activities.at(-1) !== type) activities.push(type);
  }
  const last = events.at(-1);
  const closed = String(last.eventType).replace('EVENT_TYPE_WORKFLOW_EXECUTION_', '') as Path['closed'];
  const payload = last.workflowExecutionCompletedEventAttributes?.result?.payloads?.[0]?.data;
  const result = payload ? JSON.parse(Buffer.from(payload, 'base64').toString()) : undefined;
  const types = new Set(events.map((e) => e.eventType as string));
  const want = PATHS[name];
  return {
    activities,
    closed,
    ...(result !== undefined ? { result } : {}),
    ...(want?.has ? { has: want.has.filter((t) => types.has(t)) } : {}),
  };
}

describe('recorded workflow histories replay against the current workflow code', function () {
  this.timeout(120_000);

  if (process.env.RECORD_HISTORIES === '1') describe('recording (RECORD_HISTORIES=1)', recordings);

  describe('replay', () => {
    const files = readdirSync(FIXTURES).filter((f) => f.endsWith('.history.json'));
    let bundle: WorkflowBundle;
    before(async () => {
      // The replayer runs on Temporal's process-wide runtime: have it installed as the project's
      // worker installs it (bin/worker.ts), not with the defaults the replayer would install, which
      // a worker started later in this process could not replace.
      await useTemporal();
      // the workflow code bundled once, as a worker bundles it at start-up
      bundle = await bundleWorkflowCode({ workflowsPath: WORKFLOWS, logger: new DefaultLogger('WARN') });
    });
    it('every fixture is a known path, and every known path has its fixture', () => {
      assert.deepEqual(files.map((f) => f.replace('.history.json', '')).sort(), Object.keys(PATHS).sort());
    });
    for (const file of files) {
      const name = file.replace('.history.json', '');
      it(`${name} replays deterministically`, async () => {
        assert.deepEqual(pathOf(name), PATHS[name], `${file} is not the path it is named for: re-record it`);
        // throws DeterminismViolationError if the workflow no longer makes the recorded commands
        await Worker.runReplayHistory({ workflowBundle: bundle }, loadHistoryJson(fileOf(name)), `${name}-replay`);
      });
    }
  });
});

/** Runs each recorded path for real and overwrites its fixture. */
function recordings() {
  let api: Awaited<ReturnType<typeof startApi>>;
  let fal: FalUpstream;
  let openai: SpeechUpstream;
  let eleven: SpeechUpstream;
  let chat: OpenAIUpstream;
  let btcpay: BtcpayUpstream;
  let restoreEnv: () => Promise<void>;
  const savedBtcpay = config.btcpay;

  before(async () => {
    await useTemporal();
    chat = await startOpenAIUpstream();
    btcpay = await startBtcpayUpstream();
    config.btcpay = {
      url: btcpay.url,
      apiKey: btcpay.apiKey,
      storeId: btcpay.storeId,
      webhookSecret: btcpay.webhookSecret,
    };
    fal = await startFalUpstream();
    openai = await startOpenAISpeechUpstream();
    eleven = await startElevenLabsUpstream();
    restoreEnv = await useProviderEnv({
      ...speechEnv(openai, eleven),
      FAL_BASE_URL: fal.url,
      FAL_API_KEY: fal.apiKey,
      SWITCHYARD_FETCH_ALLOW_PRIVATE: '1',
      SWITCHYARD_VIDEO_POLL_MS: '200',
      OPENAI_API_KEY: chat.apiKey,
      OPENAI_BASE_URL: chat.url,
    });
    api = await startApi();
    btcpay.webhookTo(`${api.base}/api/transaction/webhook/btcpay`);
  });
  after(async () => {
    config.btcpay = savedBtcpay;
    await btcpay?.close();
    await api?.close();
    await fal?.close();
    await openai?.close();
    await eleven?.close();
    await chat?.close();
    await restoreEnv?.();
  });
  afterEach(() => assertBooksBalance());

  const post = async (key: string, path: string, body: unknown) => {
    const res = await apiPost(api.base, path, body, { key });
    const json = (await res.json()) as any;
    assert.ok(res.status < 300, JSON.stringify(json));
    return json;
  };
  const video = async (key: string, prompt: string) =>
    (await post(key, '/api/generate-video', { model: 'kling-2.1-master', prompt, duration: '5' })).runId as string;
  const speech = async (key: string, text: string) =>
    (await post(key, '/api/tts', { text, model: 'elevenlabs/music_v1', duration: 10 })).runId as string;

  /** An inline batch of `n` chat rows; returns its id. */
  const batch = async (key: string, n: number) =>
    (
      await post(key, '/api/beta/batches', {
        endpoint: '/v1/chat/completions',
        model: 'openai/gpt-4o-mini',
        requests: Array.from({ length: n }, (_, i) => ({
          custom_id: `r${i}`,
          body: { messages: [{ role: 'user', content: `recorded row ${i}` }], max_tokens: 16 },
        })),
      })
    ).id as string;

  async function record(name: string, run: () => Promise<string>) {
    const t = await useTemporal();
    const id = await run();
    const handle = t.client.workflow.getHandle(id);
    await until(
      () => handle.describe(),
      (d) => d.status.name !== 'RUNNING',
      60_000,
      `${name} to close`,
    );
    await exportHistoryJson(t.address, id, fileOf(name));
    assert.deepEqual(pathOf(name), PATHS[name], `the run recorded for ${name} took another path`);
  }

  /** A team and a pending invitation to a new person; returns both. */
  const invitation = async () => {
    const t = await teamFixture(api.base);
    const invitee = teamEmail();
    const r = await t.owner.b.post(`/api/teams/${t.uuid}/invitations`, { email: invitee });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    // let the mail activity finish first, as it does when people take longer than a second to answer
    await new Promise((resolve) => setTimeout(resolve, 1000));
    return { t, invitee, inv: r.body.invitation as { id: string; token: string } };
  };

  usePlans([testPlan('recorded-short', { price: '0.10', periodSeconds: 2, daily: 10, monthly: 10 })]);
  /** Subscribe a new account holding `usd` to the 2-second plan; returns the subscription id. */
  const subscribed = async (usd: string) => {
    const { key } = await newAccount(usd);
    const res = await fetch(`${api.base}/api/subscription/v1/subscribe`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ plan: 'recorded-short' }),
    });
    const body = (await res.json()) as any;
    return { key, status: res.status, id: (body.subscription?.id ?? '') as string };
  };

  it('subscription-lapsed', async () => {
    const [grace, retry] = [config.subscriptionGraceSeconds, config.subscriptionRetrySeconds];
    Object.assign(config, { subscriptionGraceSeconds: 2, subscriptionRetrySeconds: 1 });
    try {
      await record('subscription-lapsed', async () => (await subscribed('0.10')).id);
    } finally {
      Object.assign(config, { subscriptionGraceSeconds: grace, subscriptionRetrySeconds: retry });
    }
  });

  it('subscription-cancelled', () =>
    record('subscription-cancelled', async () => {
      const { key, id } = await subscribed('1');
      const r = await fetch(`${api.base}/api/subscription/v1/cancel`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}` },
      });
      assert.equal(r.status, 200);
      return id;
    }));

  it('subscription-grace-paid', async () => {
    const [grace, retry] = [config.subscriptionGraceSeconds, config.subscriptionRetrySeconds];
    Object.assign(config, { subscriptionGraceSeconds: 60, subscriptionRetrySeconds: 600 });
    try {
      await record('subscription-grace-paid', async () => {
        const { key, id } = await subscribed('0.10');
        const post = (path: string, body?: unknown) => apiPost(api.base, `/api/subscription/v1/${path}`, body, { key });
        await until(
          async () => (await db().pool.query(`SELECT status FROM subscriptions WHERE id = $1`, [id])).rows[0].status,
          (st) => st === 'grace',
          15_000,
          'grace',
        );
        const { rows } = await db().pool.query(`SELECT account_id FROM subscriptions WHERE id = $1`, [id]);
        await credit({
          accountId: rows[0].account_id,
          currency: 'USD',
          amount: parseAmount('0.10', 'USD'),
          reason: 'recorded top-up',
          idempotencyKey: `recorded:${id}`,
        });
        assert.equal((await post('subscribe', { plan: 'recorded-short' })).status, 200);
        assert.equal((await post('cancel')).status, 200);
        return id;
      });
    } finally {
      Object.assign(config, { subscriptionGraceSeconds: grace, subscriptionRetrySeconds: retry });
    }
  });

  it('subscription-unpaid', async () => {
    // the row's id is the workflow's: read it, since the 402 names none
    const before = Date.now();
    const { status } = await subscribed('0.01');
    assert.equal(status, 402);
    const { rows } = await db().pool.query(
      `SELECT id FROM subscriptions WHERE created_at >= $1 AND end_reason = 'unpaid' ORDER BY created_at DESC LIMIT 1`,
      [new Date(before - 1000)],
    );
    await record('subscription-unpaid', async () => rows[0].id);
  });

  /** A BTC deposit of `usd` dollars; returns its txId and invoice id. */
  const deposit = async (usd: number) => {
    const { txId } = await post((await newAccount('0')).key, '/api/transaction/create/btc', { amount: usd });
    return { txId: txId as string, invoiceId: btcpay.invoiceOf(txId)!.id };
  };

  it('cryptoDeposit-completed', () =>
    record('cryptoDeposit-completed', async () => {
      const { txId, invoiceId } = await deposit(5);
      await new Promise((resolve) => setTimeout(resolve, 500));
      await btcpay.pay(invoiceId);
      await btcpay.confirm(invoiceId);
      return txId;
    }));

  it('cryptoDeposit-expired', async () => {
    btcpay.timing({ expirationSeconds: 1, monitoringSeconds: 1 });
    try {
      await record('cryptoDeposit-expired', async () => (await deposit(5)).txId);
    } finally {
      btcpay.timing({ expirationSeconds: 900, monitoringSeconds: 3600 });
    }
  });

  it('teamInvitation-accepted', () =>
    record('teamInvitation-accepted', async () => {
      const { invitee, inv } = await invitation();
      const p = await person(api.base, 'Invitee', invitee);
      assert.equal((await p.b.post('/api/teams/invitations/accept', { token: inv.token })).status, 200);
      return inv.id;
    }));

  it('teamInvitation-revoked', () =>
    record('teamInvitation-revoked', async () => {
      const { t, inv } = await invitation();
      const r = await t.owner.b.req('PATCH', `/api/teams/${t.uuid}/invitations`, { action: 'revoke', id: inv.id });
      assert.equal(r.status, 200);
      return inv.id;
    }));

  it('teamInvitation-expired', async () => {
    const ttl = config.teamInvitationTtlSeconds;
    config.teamInvitationTtlSeconds = 2;
    try {
      await record('teamInvitation-expired', async () => (await invitation()).inv.id);
    } finally {
      config.teamInvitationTtlSeconds = ttl;
    }
  });

  /** A credit invitation of 1 USD from a fresh account, and a key of another to redeem it with. */
  const creditInvitation = async () => {
    const issuer = await newAccount('5');
    const created = await post(issuer.key, '/api/invitations/create', { amount: 1, currency: 'USD' });
    return { issuer, created: created as { insertId: string; redeemCode: string } };
  };

  it('creditInvitation-redeemed', () =>
    record('creditInvitation-redeemed', async () => {
      const { created } = await creditInvitation();
      await post((await newAccount('0')).key, '/api/invitations/redeem', { code: created.redeemCode });
      return created.insertId;
    }));

  it('creditInvitation-revoked', () =>
    record('creditInvitation-revoked', async () => {
      const { issuer, created } = await creditInvitation();
      await post(issuer.key, '/api/invitations/revoke', { code: created.redeemCode });
      return created.insertId;
    }));

  it('creditInvitation-expired', async () => {
    const ttl = config.creditInvitationTtlSeconds;
    config.creditInvitationTtlSeconds = 2;
    try {
      await record('creditInvitation-expired', async () => (await creditInvitation()).created.insertId);
    } finally {
      config.creditInvitationTtlSeconds = ttl;
    }
  });

  it('videoJob-completed', () =>
    record('videoJob-completed', async () => {
      fal.script({ queuePolls: 2, progressPolls: 3, duration: 4 });
      return video((await newAccount('10')).key, 'recorded: completes');
    }));

  it('videoJob-failed', () =>
    record('videoJob-failed', async () => {
      fal.script({ queuePolls: 1, progressPolls: 1, outcome: 'failed' });
      return video((await newAccount('10')).key, 'recorded: the runner fails');
    }));

  it('videoJob-gave-up', () =>
    record('videoJob-gave-up', async () => {
      fal.script({ submitErrors: [{ status: 401, detail: 'No user found for Key ID and Secret' }] });
      return video((await newAccount('10')).key, 'recorded: our key is refused');
    }));

  it('videoJob-cancelled', () =>
    record('videoJob-cancelled', async () => {
      const { key } = await newAccount('10');
      fal.script({ outcome: 'hang' });
      const id = await video(key, 'recorded: cancelled');
      await until(
        async () => fal.jobs.find((j) => j.input.prompt === 'recorded: cancelled')?.polls ?? 0,
        (n) => n >= 2,
        30_000,
        'polling',
      );
      await (await useTemporal()).client.workflow.getHandle(id).cancel();
      return id;
    }));

  it('videoJob-cancelled-heard', () =>
    record('videoJob-cancelled-heard', async () => {
      const { key } = await newAccount('10');
      fal.script({ outcome: 'hang' });
      const id = await video(key, 'recorded: cancelled, heard');
      await until(
        async () => fal.jobs.find((j) => j.input.prompt === 'recorded: cancelled, heard')?.polls ?? 0,
        (n) => n >= 2,
        30_000,
        'polling',
      );
      const cancelled = await post(key, '/api/generate-video/cancel', { runId: id });
      assert.equal(cancelled.data.status, 'cancelled');
      return id;
    }));

  /** A background response of a new account; returns its id. */
  const background = async (input: string) => {
    const { key } = await newAccount('1');
    const r = await post(key, '/v1/responses', { model: 'openai/gpt-4o-mini', input, background: true });
    return { key, id: r.id as string };
  };

  it('backgroundResponse-completed', () =>
    record('backgroundResponse-completed', async () => {
      chat.script({ text: 'Recorded in the background.' });
      return (await background('recorded: answer later')).id;
    }));

  it('backgroundResponse-cancelled-heard', () =>
    record('backgroundResponse-cancelled-heard', async () => {
      chat.script({ hang: true });
      const seen = chat.requests.length;
      const { key, id } = await background('recorded: cancelled, heard');
      await until(
        async () => chat.requests.length,
        (n) => n > seen,
        30_000,
        'the upstream call',
      );
      const cancelled = await post(key, `/v1/responses/${id}/cancel`, {});
      assert.equal(cancelled.status, 'cancelled');
      return id;
    }));

  it('speechJob-completed', () =>
    record('speechJob-completed', async () => speech((await newAccount('1')).key, 'recorded: a song')));

  it('speechJob-failed', () =>
    record('speechJob-failed', async () => {
      eleven.script({ status: 500 }, { status: 503 }, { status: 500, message: 'still down' });
      return speech((await newAccount('1')).key, 'recorded: a song that never comes');
    }));

  it('batchJob-completed, batchChunk-completed', async () => {
    const saved = config.batchChunkRows;
    config.batchChunkRows = 2;
    try {
      const id = await batch((await newAccount('1')).key, 3);
      await record('batchJob-completed', async () => id);
      await record('batchChunk-completed', async () => `${id}:rows:0`);
    } finally {
      config.batchChunkRows = saved;
    }
  });

  it('batchJob-cancelled, batchChunk-stopped', async () => {
    const saved = config.batchConcurrency;
    config.batchConcurrency = 1;
    chat.defaults({ delayMs: 500 });
    try {
      const { key } = await newAccount('1');
      const before = chat.requests.length;
      const id = await batch(key, 4);
      await until(
        async () => chat.requests.length - before,
        (n) => n >= 1,
        30_000,
        'a row to start',
      );
      await post(key, `/api/beta/batches/${id}/cancel`, {});
      await record('batchJob-cancelled', async () => id);
      await record('batchChunk-stopped', async () => `${id}:rows:0`);
    } finally {
      config.batchConcurrency = saved;
      chat.defaults({});
    }
  });
}
