// biome-ignore-all lint/suspicious/noExplicitAny: wire JSON, read field by field
// Native message batches (/v1/messages/batches) through the official `@anthropic-ai/sdk`, unchanged:
// `messages.batches.create / retrieve / list / cancel / delete / results()` against the real API,
// the `batchJob` workflow on the real Temporal dev server and worker, and loopback upstreams (the
// Anthropic loopback the messages tests use, an OpenAI-protocol one as the catalog's OpenRouter
// fallback and as OpenAI for a translated model, and the built-in local model). Every row is the
// synchronous message request at the batch price: each test compares a row's charge with what the
// same request costs on POST /api/v1/messages (half of it, rounded up to the nano-dollar), checks
// that every succeeded row is charged exactly once and no other row at all, and ends with the
// books balanced.
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { config } from '../activities/config.js';
import { db } from '../activities/db.js';
import { newAccount, startApi, apiPost } from './support/api.js';
import { assertBooksBalance, sweepDeadLeases } from './support/books.js';
import { useProviderEnv } from './support/providerEnv.js';
import { onOwnWorkers } from './support/ownWorkers.js';
import { useTemporal } from './support/temporal.js';
import { type AnthropicUpstream, startAnthropicUpstream } from './support/upstreams/anthropic.js';
import { type OpenAIUpstream, startOpenAIUpstream } from './support/upstreams/openai.js';
import { until } from './support/wait.js';
import { keepConfig } from './support/keepConfig.js';

const HAIKU = 'anthropic/claude-3-5-haiku';
const ENV = [
  'ANTHROPIC_API_KEY',
  'ANTHROPIC_BASE_URL',
  'OPENAI_API_KEY',
  'OPENAI_BASE_URL',
  'OPENROUTER_API_KEY',
  'OPENROUTER_BASE_URL',
];

describe('native message batches (/v1/messages/batches) with the official SDK', function () {
  this.timeout(180_000);
  let api: Awaited<ReturnType<typeof startApi>>;
  let anthropic: AnthropicUpstream;
  let openai: OpenAIUpstream;
  let openrouter: OpenAIUpstream;
  let restoreEnv: () => Promise<void>;
  let key: string;
  let accountId: string;
  let client: Anthropic;
  // the settings as the suite starts, put back after each test (tests change some) and at the end
  const saved = keepConfig();

  before(async () => {
    await useTemporal();
    anthropic = await startAnthropicUpstream();
    openai = await startOpenAIUpstream({ strict: true });
    openrouter = await startOpenAIUpstream({ basePath: '/api/v1', apiKey: 'sk-or-loopback' });
    restoreEnv = await useProviderEnv(
      {
        ANTHROPIC_API_KEY: anthropic.apiKey,
        ANTHROPIC_BASE_URL: anthropic.url,
        OPENAI_API_KEY: openai.apiKey,
        OPENAI_BASE_URL: openai.url,
        OPENROUTER_API_KEY: openrouter.apiKey,
        OPENROUTER_BASE_URL: openrouter.url,
      },
      ENV,
    );
    api = await startApi();
    ({ key, accountId } = await newAccount('5'));
    client = new Anthropic({ apiKey: key, baseURL: `${api.base}/api`, maxRetries: 0 });
  });
  after(async () => {
    await api.close();
    await anthropic.close();
    await openai.close();
    await openrouter.close();
    await restoreEnv();
  });
  beforeEach(() => {
    anthropic.requests.length = 0;
    anthropic.always(undefined);
    openai.reset();
    openrouter.reset();
  });
  afterEach(async () => {
    Object.assign(config, saved);
    await assertBooksBalance();
  });

  const row = (custom_id: string, text: string, extra: object = {}) => ({
    custom_id,
    params: { model: HAIKU, max_tokens: 64, messages: [{ role: 'user' as const, content: text }], ...extra },
  });
  const ended = (id: string, ms = 90_000) =>
    until(
      () => client.messages.batches.retrieve(id),
      (b) => b.processing_status === 'ended',
      ms,
      `message batch ${id} to end`,
    );
  const results = async (id: string) => {
    const out: any[] = [];
    for await (const line of await client.messages.batches.results(id)) out.push(line);
    return out;
  };
  /** charges by request id (a row's request id is `<batch id>:<idx>`) */
  const chargesOf = async (batchId: string) => {
    const { rows } = await db().pool.query(
      `SELECT request_id, amount FROM ledger_entries WHERE account_id = $1 AND kind = 'charge' AND request_id LIKE $2
       ORDER BY request_id`,
      [accountId, `${batchId}:%`],
    );
    return rows.map((r) => ({ requestId: r.request_id as string, amount: -BigInt(r.amount) }));
  };
  /** what the same request costs on the synchronous route, charged and read back from the ledger */
  const syncCharge = async (params: object) => {
    const res = await apiPost(api.base, '/api/v1/messages', params, { headers: { 'x-api-key': key } });
    assert.equal(res.status, 200, await res.clone().text());
    const id = res.headers.get('x-request-id')!;
    await assertBooksBalance(); // flushes the lease charges
    const { rows } = await db().pool.query(
      `SELECT amount FROM ledger_entries WHERE request_id = $1 AND kind = 'charge'`,
      [id],
    );
    return rows.reduce((s, r) => s - BigInt(r.amount), 0n);
  };
  const half = (n: bigint) => (n + 1n) / 2n;
  const rowStates = async (batchId: string) => {
    const { rows } = await db().pool.query(
      `SELECT status, count(*)::int AS n FROM batch_rows WHERE batch_id = $1 GROUP BY status`,
      [batchId],
    );
    return (s: string) => rows.find((x) => x.status === s)?.n ?? 0;
  };

  it('create, retrieve, results(), list and delete, unchanged; every row the synchronous request at half its price', async () => {
    const rows = [
      row('a', 'Say one thing'),
      row('b', 'Say two things now', { system: 'Be brief.' }),
      row('c', 'Three'),
    ];
    const made = await client.messages.batches.create({ requests: rows });
    assert.match(made.id, /^msgbatch_[0-9a-f]{32}$/);
    assert.equal(made.type, 'message_batch');
    assert.equal(made.processing_status, 'in_progress');
    assert.deepEqual(made.request_counts, { processing: 3, succeeded: 0, errored: 0, canceled: 0, expired: 0 });
    assert.equal(made.results_url, null);
    assert.equal(made.ended_at, null);
    assert.equal(made.archived_at, null);
    assert.equal(made.cancel_initiated_at, null);
    assert.ok(Date.parse(made.expires_at) - Date.parse(made.created_at) >= 86_399_000, 'a 24 h window');

    const done = await ended(made.id);
    assert.deepEqual(done.request_counts, { processing: 0, succeeded: 3, errored: 0, canceled: 0, expired: 0 });
    assert.ok(done.ended_at && Date.parse(done.ended_at) >= Date.parse(done.created_at));
    assert.equal(done.results_url, `${api.base}/api/v1/messages/batches/${made.id}/results`);
    assert.equal(anthropic.requests.length, 3, 'the upstream saw each row once');
    // passed through as written (the system prompt and all), the model named as the catalog's upstream
    const sent = anthropic.requests.find((r) => r.body.system === 'Be brief.');
    assert.ok(sent, 'the row went upstream as written');
    assert.equal(sent.body.model, 'claude-3-5-haiku-20241022');

    const lines = await results(made.id);
    assert.deepEqual(
      lines.map((l) => l.custom_id),
      ['a', 'b', 'c'],
    );
    const charges = await chargesOf(made.id);
    assert.equal(charges.length, 3, 'each row charged once');
    let total = 0n;
    for (const [i, r] of rows.entries()) {
      const line = lines[i];
      assert.equal(line.result.type, 'succeeded');
      const message = line.result.message;
      assert.equal(message.type, 'message');
      assert.match(message.id, /^msg_loop/, "passed through: Anthropic's own message id");
      assert.equal(message.role, 'assistant');
      assert.equal(message.model, HAIKU);
      assert.match(message.content[0].text, /^Echo: /);
      assert.equal(message.stop_reason, 'end_turn');
      assert.ok(message.usage.input_tokens > 0 && message.usage.output_tokens > 0);
      const charge = charges.find((c) => c.requestId === `${made.id}:${i}`)!;
      const sync = await syncCharge(r.params);
      assert.equal(charge.amount, half(sync), `row ${r.custom_id}: ${charge.amount} vs synchronous ${sync}`);
      assert.equal(Math.round(message.cost * 1e9), Number(charge.amount), 'the message carries its cost');
      total += charge.amount;
    }
    assert.equal(Math.round((done as any).cost * 1e9), Number(total), 'the batch carries its total cost');

    // the SDK's beta namespace (?beta=true, an anthropic-beta header) reads the same batch
    const beta = await client.beta.messages.batches.retrieve(made.id);
    assert.equal(beta.id, made.id);
    const betaLines: any[] = [];
    for await (const l of await client.beta.messages.batches.results(made.id)) betaLines.push(l);
    assert.deepEqual(betaLines, lines);

    // the workflow is the batch's id, its owner searchable
    const t = await useTemporal();
    const desc = await t.client.workflow.getHandle(made.id).describe();
    assert.equal(desc.type, 'batchJob');
    assert.deepEqual(desc.searchAttributes.SwitchyardAccountId, [accountId]);

    // results_url without the /api prefix when the batch was read there; the SDK fetches either
    const bare = new Anthropic({ apiKey: key, baseURL: api.base, maxRetries: 0 });
    assert.equal(
      (await bare.messages.batches.retrieve(made.id)).results_url,
      `${api.base}/v1/messages/batches/${made.id}/results`,
    );
    const bareLines: any[] = [];
    for await (const l of await bare.messages.batches.results(made.id)) bareLines.push(l);
    assert.deepEqual(bareLines, lines);

    // list: newest first, paged by the SDK (after_id), and back (before_id)
    const second = await client.messages.batches.create({ requests: [row('d', 'Another batch')] });
    const seen: string[] = [];
    for await (const b of client.messages.batches.list({ limit: 1 })) seen.push(b.id);
    assert.deepEqual(seen.slice(0, 2), [second.id, made.id]);
    const page = await client.messages.batches.list({ limit: 1, after_id: second.id });
    assert.deepEqual(
      page.data.map((b) => b.id),
      [made.id],
    );
    const newer = await client.messages.batches.list({ limit: 5, before_id: made.id });
    assert.deepEqual(
      newer.data.map((b) => b.id),
      [second.id],
    );
    assert.equal(newer.has_more, false);
    // an inline batch list does not show message batches, nor its routes read them
    const inline = await fetch(`${api.base}/api/beta/batches/${made.id}`, {
      headers: { authorization: `Bearer ${key}` },
    });
    assert.equal(inline.status, 404);

    await ended(second.id);
    // a batch that has ended without a cancel cannot be cancelled
    await assert.rejects(client.messages.batches.cancel(second.id), (e: any) => e instanceof Anthropic.ConflictError);
    const deleted = await client.messages.batches.delete(made.id);
    assert.deepEqual(deleted, { id: made.id, type: 'message_batch_deleted' });
    await assert.rejects(client.messages.batches.retrieve(made.id), (e: unknown) => {
      assert.ok(e instanceof Anthropic.NotFoundError);
      const body = e.error as any;
      assert.equal(body.type, 'error');
      assert.equal(body.error.type, 'not_found_error');
      return true;
    });
    const { rows: left } = await db().pool.query('SELECT count(*)::int AS n FROM batch_rows WHERE batch_id = $1', [
      made.id,
    ]);
    assert.equal(left[0].n, 0, 'its rows went with it');
  });

  it('a row the upstream refuses is errored and uncharged; rows on a translated model and the local model', async () => {
    config.batchConcurrency = 1; // rows in order: the scripted refusal lands on the second
    anthropic.script({}, { error: { status: 400, message: 'refused (scripted)' } });
    const made = await client.messages.batches.create({
      requests: [row('ok1', 'fine'), row('bad', 'refuse me'), row('ok2', 'fine too')],
    });
    const done = await ended(made.id);
    assert.deepEqual(done.request_counts, { processing: 0, succeeded: 2, errored: 1, canceled: 0, expired: 0 });
    const lines = await results(made.id);
    const bad = lines.find((l) => l.custom_id === 'bad');
    assert.equal(bad.result.type, 'errored');
    assert.equal(bad.result.error.type, 'error');
    assert.equal(bad.result.error.error.type, 'invalid_request_error');
    assert.match(bad.result.error.error.message, /.+/);
    assert.equal(bad.result.error.request_id, `${made.id}:1`);
    assert.deepEqual(
      (await chargesOf(made.id)).map((c) => c.requestId),
      [`${made.id}:0`, `${made.id}:2`],
      'only the rows that answered are charged',
    );

    // a model served over the OpenAI protocol: the row is translated, and answered as a message
    const gpt = await client.messages.batches.create({
      requests: [
        {
          custom_id: 'g',
          params: { model: 'openai/gpt-4o-mini', max_tokens: 40, messages: [{ role: 'user', content: 'hi gpt' }] },
        },
      ],
    });
    await ended(gpt.id);
    const [g] = await results(gpt.id);
    assert.equal(g.result.type, 'succeeded');
    assert.equal(g.result.message.type, 'message');
    assert.match(g.result.message.id, /^msg_/);
    assert.match(g.result.message.content[0].text, /^Echo: /);
    assert.equal(openai.requests.length, 1);
    const [gc] = await chargesOf(gpt.id);
    assert.equal(
      gc.amount,
      half(
        await syncCharge({
          model: 'openai/gpt-4o-mini',
          max_tokens: 40,
          messages: [{ role: 'user', content: 'hi gpt' }],
        }),
      ),
    );

    // the built-in local model, in-process
    const local = await client.messages.batches.create({
      requests: [0, 1].map((i) => ({
        custom_id: `l${i}`,
        params: {
          model: 'local/stories260k',
          max_tokens: 12,
          messages: [{ role: 'user', content: `Once upon a time ${i}` }],
        },
      })),
    });
    const ld = await ended(local.id);
    assert.equal(ld.request_counts.succeeded, 2);
    for (const l of await results(local.id)) {
      assert.equal(l.result.message.provider, 'local');
      assert.ok(l.result.message.content[0].text.length > 0);
      assert.ok(l.result.message.cost > 0);
    }
    assert.equal((await chargesOf(local.id)).length, 2);
  });

  it('a row the upstream rate-limits is retried with backoff by the engine and charged once', async () => {
    // first attempt: Anthropic says 429, the OpenRouter fallback is unavailable; the second is answered
    anthropic.script({ error: { status: 429, retryAfter: 1 } });
    openrouter.script({ status: 503 });
    const made = await client.messages.batches.create({ requests: [row('r', 'retry me')] });
    const done = await ended(made.id);
    assert.deepEqual(done.request_counts, { processing: 0, succeeded: 1, errored: 0, canceled: 0, expired: 0 });
    assert.equal(anthropic.requests.length, 2, 'Anthropic saw the row twice: the 429, then the answer');
    assert.equal(openrouter.requests.length, 1);
    assert.equal((await chargesOf(made.id)).length, 1);
    assert.equal((await results(made.id))[0].result.type, 'succeeded');
  });

  it('cancel a slow batch: running rows finish and are charged, the rest canceled; delete waits for the end', async () => {
    config.batchConcurrency = 2;
    anthropic.always({ delayMs: 700 });
    const made = await client.messages.batches.create({
      requests: Array.from({ length: 12 }, (_, i) => row(`c${i}`, `slow ${i}`)),
    });
    await until(
      () => client.messages.batches.retrieve(made.id),
      (b) => b.request_counts.succeeded >= 2,
      30_000,
      'two rows to finish',
    );
    // not ended: results and delete are refused (409, final: the SDK is told not to retry)
    await assert.rejects(client.messages.batches.results(made.id), /results_url/);
    const early = await fetch(`${api.base}/v1/messages/batches/${made.id}/results`, { headers: { 'x-api-key': key } });
    assert.equal(early.status, 409);
    assert.equal(early.headers.get('x-should-retry'), 'false');
    assert.equal(((await early.json()) as any).error.type, 'invalid_request_error');
    await assert.rejects(client.messages.batches.delete(made.id), (e: any) => e instanceof Anthropic.ConflictError);

    const cancelling = await client.messages.batches.cancel(made.id);
    assert.ok(['canceling', 'ended'].includes(cancelling.processing_status), cancelling.processing_status);
    assert.ok(cancelling.cancel_initiated_at);
    const done = await ended(made.id);
    const { succeeded, canceled, errored, expired, processing } = done.request_counts;
    assert.equal(errored + expired + processing, 0);
    assert.equal(succeeded + canceled, 12);
    assert.ok(succeeded >= 2 && succeeded < 12, `succeeded ${succeeded}`);
    assert.equal(anthropic.requests.length, succeeded, 'no canceled row reached the upstream');
    assert.equal((await chargesOf(made.id)).length, succeeded, 'every finished row charged once, no other');
    const lines = await results(made.id);
    assert.equal(lines.length, 12, 'one line per request');
    assert.equal(lines.filter((l) => l.result.type === 'canceled').length, canceled);
    assert.equal(lines.filter((l) => l.result.type === 'succeeded').length, succeeded);
    // cancelling again answers the batch as it is; deleting it now works
    assert.equal((await client.messages.batches.cancel(made.id)).processing_status, 'ended');
    assert.equal((await client.messages.batches.delete(made.id)).type, 'message_batch_deleted');
  });

  it('cancel racing the rows as they finish: every row ends exactly one way, only answered rows charged', async () => {
    config.batchConcurrency = 3;
    anthropic.always({ delayMs: 60 });
    for (const wait of [0, 40, 90, 150, 260]) {
      anthropic.requests.length = 0;
      const made = await client.messages.batches.create({
        requests: Array.from({ length: 6 }, (_, i) => row(`r${i}`, `race ${wait} ${i}`)),
      });
      await new Promise((r) => setTimeout(r, wait)); // the race's chosen delay: what is tested
      const cancel = await fetch(`${api.base}/api/v1/messages/batches/${made.id}/cancel`, {
        method: 'POST',
        headers: { 'x-api-key': key },
      });
      // a batch that has already ended cannot be cancelled: 409, and it has all its answers
      assert.ok(cancel.status === 200 || cancel.status === 409, `${cancel.status}`);
      const done = await ended(made.id);
      const n = await rowStates(made.id);
      assert.equal(n('succeeded') + n('cancelled'), 6, `wait ${wait}`);
      assert.equal(done.request_counts.succeeded, n('succeeded'));
      assert.equal(done.request_counts.canceled, n('cancelled'));
      if (cancel.status === 409) assert.equal(n('cancelled'), 0);
      assert.equal((await chargesOf(made.id)).length, n('succeeded'), `wait ${wait}`);
      assert.equal(anthropic.requests.length, n('succeeded'));
      const lines = await results(made.id);
      assert.equal(lines.length, 6);
    }
  });

  it('the 24 h window closes first: rows not run are expired, never sent, never charged', async () => {
    config.batchConcurrency = 1;
    config.batchWindowSeconds = 2;
    anthropic.always({ delayMs: 800 });
    const made = await client.messages.batches.create({
      requests: Array.from({ length: 8 }, (_, i) => row(`e${i}`, `late ${i}`)),
    });
    const done = await ended(made.id);
    const { succeeded, expired, processing, errored, canceled } = done.request_counts;
    assert.equal(processing + errored + canceled, 0);
    assert.ok(succeeded >= 1 && expired >= 1 && succeeded + expired === 8, JSON.stringify(done.request_counts));
    const lines = await results(made.id);
    assert.equal(lines.filter((l) => l.result.type === 'expired').length, expired);
    assert.equal(anthropic.requests.length, succeeded, 'no expired row was sent');
    assert.equal((await chargesOf(made.id)).length, succeeded);
  });

  it('Idempotency-Key: concurrent creates with one key make one batch; the key with another body is a 409', async () => {
    const body = { requests: [row('i', 'once')] };
    const k = `idem-${Date.now()}`;
    const made = await Promise.all(
      Array.from({ length: 5 }, () => client.messages.batches.create(body, { headers: { 'Idempotency-Key': k } })),
    );
    assert.equal(new Set(made.map((m) => m.id)).size, 1, 'one batch for the five');
    const again = await client.messages.batches.create(body, { headers: { 'Idempotency-Key': k } });
    assert.equal(again.id, made[0].id);
    const other = await fetch(`${api.base}/v1/messages/batches`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key, 'idempotency-key': k },
      body: JSON.stringify({ requests: [row('i', 'something else')] }),
    });
    assert.equal(other.status, 409);
    assert.equal(other.headers.get('x-should-retry'), 'false');
    const err = (await other.json()) as any;
    assert.equal(err.type, 'error');
    assert.equal(err.error.type, 'invalid_request_error');
    assert.match(err.error.message, /Idempotency-Key/);
    await ended(made[0].id);
    assert.equal(anthropic.requests.length, 1, 'one batch ran, once');
    const { rows } = await db().pool.query(`SELECT count(*)::int AS n FROM batches WHERE idempotency_key = $1`, [k]);
    assert.equal(rows[0].n, 1);
    assert.equal((await chargesOf(made[0].id)).length, 1);
  });

  it('a few thousand requests: accepted at once, every row answered and charged once, results streamed', async () => {
    const N = 3000;
    const requests = Array.from({ length: N }, (_, i) => row(`row-${i}`, `number ${i}`, { max_tokens: 16 }));
    const t0 = Date.now();
    const made = await client.messages.batches.create({ requests });
    const accepted = Date.now() - t0;
    assert.equal(made.request_counts.processing, N);
    const done = await ended(made.id, 170_000);
    const ran = Date.now() - t0;
    assert.deepEqual(done.request_counts, { processing: 0, succeeded: N, errored: 0, canceled: 0, expired: 0 });
    const ids = new Set<string>();
    let lines = 0;
    for await (const line of await client.messages.batches.results(made.id)) {
      assert.equal(line.result.type, 'succeeded');
      ids.add(line.custom_id);
      lines++;
    }
    assert.equal(lines, N);
    assert.equal(ids.size, N);
    const charges = await chargesOf(made.id);
    assert.equal(charges.length, N, 'one charge per row');
    assert.equal(
      charges.reduce((s, c) => s + c.amount, 0n),
      BigInt(Math.round((done as any).cost * 1e9)),
      'the batch cost is the sum of its rows',
    );
    assert.equal(anthropic.requests.length, N, 'the upstream saw each row once');
    console.log(
      `      ${N} requests: accepted in ${accepted} ms, ended after ${ran} ms (${Math.round((N * 1000) / ran)} rows/s)`,
    );
  });

  it('the largest batch the spec allows (100,000 requests) is accepted; one more is refused', async () => {
    const requests = Array.from({ length: 100_000 }, (_, i) => row(`n${i}`, `n ${i}`, { max_tokens: 8 }));
    const t0 = Date.now();
    const made = await client.messages.batches.create({ requests }, { timeout: 120_000 });
    const accepted = Date.now() - t0;
    assert.equal(made.request_counts.processing, 100_000);
    const cancelled = await client.messages.batches.cancel(made.id);
    assert.equal(cancelled.processing_status, 'canceling');
    const done = await ended(made.id, 170_000);
    assert.equal(done.request_counts.succeeded + done.request_counts.canceled, 100_000);
    assert.equal((await chargesOf(made.id)).length, done.request_counts.succeeded);
    console.log(`      100,000 requests accepted in ${accepted} ms; cancelled, ended after ${Date.now() - t0} ms`);
    const over = await fetch(`${api.base}/v1/messages/batches`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key },
      body: JSON.stringify({ requests: [...requests, row('one-more', 'x')] }),
    });
    assert.equal(over.status, 400);
    assert.match(((await over.json()) as any).error.message, /requests/);
  });

  it('SIGKILL the worker mid-batch, another finishes it: every row charged exactly once, none asked again once answered', async () => {
    await onOwnWorkers('msgbatch-kill', async (startWorker) => {
      const first = await startWorker();
      const own = await newAccount('5');
      const sdk = new Anthropic({ apiKey: own.key, baseURL: `${api.base}/api`, maxRetries: 0 });
      const N = 40;
      config.batchConcurrency = 8;
      anthropic.always({ delayMs: 300 });
      const made = await sdk.messages.batches.create({
        requests: Array.from({ length: N }, (_, i) => row(`k${i}`, `row ${i}`)),
      });
      await until(
        () => sdk.messages.batches.retrieve(made.id),
        (b) => b.request_counts.succeeded >= 10,
        60_000,
        'ten rows to finish',
      );
      await first.kill();
      await startWorker();
      // Any ask before this moment came from the first worker: the second one only polls for work
      // after it says it is ready (timing the kill itself would miss asks the dying worker made
      // between the timestamp and the signal landing).
      const secondUpAt = Date.now();
      const done = await until(
        () => sdk.messages.batches.retrieve(made.id),
        (b) => b.processing_status === 'ended',
        150_000,
        'the batch to end on the second worker',
      );
      assert.deepEqual(done.request_counts, { processing: 0, succeeded: N, errored: 0, canceled: 0, expired: 0 });
      const lines: any[] = [];
      for await (const l of await sdk.messages.batches.results(made.id)) lines.push(l);
      assert.deepEqual(
        lines.map((l) => l.custom_id),
        Array.from({ length: N }, (_, i) => `k${i}`),
      );
      // every row charged exactly once, at the cost its message shows; the batch's cost is their sum
      const { rows: charges } = await db().pool.query(
        `SELECT request_id, amount FROM ledger_entries WHERE account_id = $1 AND kind = 'charge'`,
        [own.accountId],
      );
      assert.equal(charges.length, N, 'one charge per row');
      let total = 0n;
      for (const [i, l] of lines.entries()) {
        const charge = charges.find((c) => c.request_id === `${made.id}:${i}`);
        assert.ok(charge, `row ${i} charged`);
        assert.equal(-BigInt(charge.amount), BigInt(Math.round(l.result.message.cost * 1e9)));
        total += -BigInt(charge.amount);
      }
      assert.equal(BigInt(Math.round((done as any).cost * 1e9)), total);
      await assertBooksBalance(own.accountId);
      await sweepDeadLeases(own.accountId); // rows pay from the worker's lease: the killed one's expires
      const { rows: bal } = await db().pool.query(
        `SELECT amount, held FROM balances WHERE account_id = $1 AND currency = 'USD'`,
        [own.accountId],
      );
      assert.equal(bal[0].held, '0', 'no reservation left behind');
      assert.equal(BigInt(bal[0].amount), 5_000_000_000n - total);
      // the upstream was never asked for a row after its answer was stored; a row asked twice was
      // in flight on the killed worker
      const { rows: finished } = await db().pool.query(
        'SELECT custom_id, finished_at FROM batch_rows WHERE batch_id = $1',
        [made.id],
      );
      let twice = 0;
      for (const r of finished) {
        const asks = anthropic.requests.filter((q) => q.body?.messages?.[0]?.content === `row ${r.custom_id.slice(1)}`);
        assert.ok(asks.length >= 1, `${r.custom_id} was asked`);
        for (const q of asks) assert.ok(q.at <= r.finished_at.getTime(), `${r.custom_id} asked after its answer`);
        if (asks.length > 1) {
          twice++;
          assert.ok(asks[0].at < secondUpAt, `${r.custom_id} asked twice, and not because of the kill`);
        }
      }
      assert.ok(twice <= 8, `${twice} rows asked twice: at most the 8 in flight when the worker died`);
    });
  });

  it('refuses what the spec refuses, in the message-style envelope, naming the request, storing nothing', async () => {
    const { rows: before } = await db().pool.query('SELECT count(*)::int AS n FROM batches WHERE account_id = $1', [
      accountId,
    ]);
    const bad = async (body: any, status: number, param: RegExp | null, message?: RegExp) => {
      const res = await fetch(`${api.base}/api/v1/messages/batches`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': key },
        body: JSON.stringify(body),
      });
      const j = (await res.json()) as any;
      assert.equal(res.status, status, JSON.stringify(j));
      assert.equal(j.type, 'error', JSON.stringify(j));
      assert.equal(typeof j.error.type, 'string');
      if (param) assert.match(j.error.message, param);
      if (message) assert.match(j.error.message, message);
    };
    await bad({ requests: [] }, 400, /requests/);
    await bad({ requests: [row('a', 'x', { stream: true })] }, 400, /requests\[0\]/, /stream/);
    await bad({ requests: [row('a', 'x'), row('a', 'y')] }, 400, /requests\[1\]\.custom_id/);
    await bad({ requests: [row('bad id!', 'x')] }, 400, /requests\[0\]\.custom_id/);
    await bad({ requests: [row('a', 'x', { max_tokens: undefined })] }, 400, /requests\[0\]\.params\.max_tokens/);
    await bad({ requests: [row('a', 'x', { max_tokens: 0 })] }, 400, /requests\[0\]\.params\.max_tokens/);
    await bad({ requests: [row('a', 'x', { max_tokens: 1_000_001 })] }, 400, /requests\[0\]\.params\.max_tokens/);
    await bad({ requests: [row('a', 'x', { max_tokens: 9000 })] }, 400, /requests\[0\]/, /output limit/);
    await bad(
      { requests: [row('a', 'x'), row('b', 'y', { model: 'openai/gpt-4o-mini' })] },
      400,
      /requests\[1\]/,
      /one model/,
    );
    await bad({ requests: [row('a', 'x', { model: 'no/such-model' })] }, 404, /requests\[0\]/);
    await bad(
      { requests: [row('a', 'x', { messages: [{ role: 'assistant', content: 'hi' }] })] },
      400,
      /requests\[0\]/,
      /first message/,
    );
    await bad({ requests: [row('a', 'x', { container: 'cntr_1' })] }, 400, /requests\[0\]/, /container/);
    await bad(
      { requests: [row('a', 'x', { mcp_servers: [{ type: 'url', url: 'https://x', name: 'x' }] })] },
      400,
      /requests\[0\]/,
      /MCP/,
    );
    await bad(
      { requests: [row('a', 'x', { tools: [{ type: 'web_search_20250305', name: 'web_search' }] })] },
      400,
      /requests\[0\]/,
      /server tool/,
    );
    await bad(
      {
        requests: [
          row('a', 'x', {
            messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'file', file_id: 'file_1' } }] }],
          }),
        ],
      },
      400,
      /requests\[0\]/,
      /uploaded file/,
    );
    await bad(
      {
        requests: [
          row('a', 'x', {
            messages: [{ role: 'user', content: [{ type: 'video', source: { type: 'url', url: 'https://x/v.mp4' } }] }],
          }),
        ],
      },
      400,
      /requests\[0\]/,
      /video/,
    );
    // the model's class takes no tools (its catalog entry has no tool calling)
    await bad(
      {
        requests: [
          row('a', 'x', {
            model: 'local/stories260k',
            tools: [{ name: 'f', input_schema: { type: 'object' } }],
          }),
        ],
      },
      400,
      /requests\[0\]/,
      /takes no tools/,
    );
    // a model that is not a chat model cannot run message rows
    await bad(
      { requests: [row('a', 'x', { model: 'openai/text-embedding-3-small' })] },
      400,
      /requests\[0\]/,
      /chat models only/,
    );
    const { rows: after } = await db().pool.query('SELECT count(*)::int AS n FROM batches WHERE account_id = $1', [
      accountId,
    ]);
    assert.equal(after[0].n, before[0].n, 'nothing stored');
    // another account's batch, and one that never was: 404 not_found_error
    const other = await newAccount('1');
    const theirs = new Anthropic({ apiKey: other.key, baseURL: `${api.base}/api`, maxRetries: 0 });
    const mine = await client.messages.batches.create({ requests: [row('m', 'mine')] });
    await assert.rejects(theirs.messages.batches.retrieve(mine.id), (e: any) => e instanceof Anthropic.NotFoundError);
    await assert.rejects(theirs.messages.batches.cancel(mine.id), (e: any) => e instanceof Anthropic.NotFoundError);
    await assert.rejects(
      client.messages.batches.retrieve('msgbatch_nope'),
      (e: any) => e instanceof Anthropic.NotFoundError,
    );
    await ended(mine.id);
  });
});
