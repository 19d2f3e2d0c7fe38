// biome-ignore-all lint/suspicious/noExplicitAny: wire JSON, read field by field
// Inline batches (POST /api/beta/batches) end to end: the real API, the `batchJob` workflow on the
// real Temporal dev server and worker, loopback OpenAI upstreams. Every row is the synchronous
// request at the batch price: each test compares a row's charge with what the same request costs
// on the synchronous route (half of it, rounded up to the nano-dollar), checks that every
// succeeded row is charged exactly once and no failed, cancelled or expired row is charged, and
// ends with the books balanced.
import assert from 'node:assert/strict';
import net from 'node:net';
import { config } from '../activities/config.js';
import { db } from '../activities/db.js';
import { loadCatalog } from '../activities/catalog/catalog.js';
import { parseCatalog } from '../activities/catalog/file.js';
import { finishBatch } from '../activities/batches/run.js';
import { createKey } from '../activities/accounts/keys.js';
import { atPriceBps, batchPriceBps } from '../activities/billing/pricing.js';
import { parseAmount } from '../activities/core/money.js';
import { type ChatBench, startChatBench } from './support/chatEnv.js';
import { useTemporal } from './support/temporal.js';
import { assertBooksBalance } from './support/books.js';
import { until } from './support/wait.js';
import { freePort } from './support/ports.js';
import { closeTemporalClient, temporal } from '../activities/temporalClient.js';

const MODEL = 'openai/gpt-4o-mini';

describe('inline batches (/api/beta/batches) on the batch workflow', function () {
  this.timeout(180_000);
  let b: ChatBench;
  let key: string;
  let accountId: string;
  // the batch settings tests change, put back after each (only these: the rest is the harness's)
  const saved = {
    batchConcurrency: config.batchConcurrency,
    batchWindowSeconds: config.batchWindowSeconds,
    batchRowAttempts: config.batchRowAttempts,
  };

  before(async () => {
    await useTemporal();
    b = await startChatBench();
    ({ key, accountId } = await b.account('5'));
  });
  after(() => b.close());
  afterEach(async () => {
    Object.assign(config, saved);
    b.openai.reset();
    await assertBooksBalance();
  });

  const create = (body: unknown, headers: Record<string, string> = {}) =>
    b.post(key, body, headers, '/api/beta/batches');
  const get = async (id: string) =>
    (await (
      await fetch(`${b.base}/api/beta/batches/${id}`, { headers: { authorization: `Bearer ${key}` } })
    ).json()) as any;
  const ended = (id: string, ms = 90_000) =>
    until(
      () => get(id),
      (x) => ['completed', 'failed', 'expired', 'cancelled'].includes(x.status),
      ms,
      `batch ${id} to end`,
    );
  const chatRow = (custom_id: string, text: string, extra: object = {}) => ({
    custom_id,
    body: { messages: [{ role: 'user', content: text }], max_tokens: 50, ...extra },
  });
  /** charges by request id (a row's request id is `<batch id>:<idx>`) */
  const chargesOf = async (prefix: string) => {
    const { rows } = await db().pool.query(
      `SELECT request_id, amount FROM ledger_entries WHERE account_id = $1 AND kind = 'charge' AND request_id LIKE $2 ORDER BY request_id`,
      [accountId, `${prefix}%`],
    );
    return rows.map((r) => ({ requestId: r.request_id as string, amount: -BigInt(r.amount) }));
  };
  /** what the same request costs on the synchronous route, charged and read back from the ledger */
  const syncCharge = async (body: object) => {
    const res = await b.post(key, { model: MODEL, ...body });
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

  it('runs every row as the synchronous request at half its price: results, counts, usage and cost', async () => {
    const rows = [chatRow('a', 'Say one thing'), chatRow('b', 'Say two things now'), chatRow('c', 'Three')];
    const res = await create({
      endpoint: '/v1/chat/completions',
      model: MODEL,
      requests: rows,
      metadata: { job: 'x' },
    });
    assert.equal(res.status, 202, await res.clone().text());
    const made = (await res.json()) as any;
    assert.match(made.id, /^batch_[0-9a-f]{32}$/);
    assert.equal(made.object, 'batch');
    assert.equal(made.status, 'validating');
    assert.equal(made.results, null);
    assert.deepEqual(made.request_counts, { total: 3, completed: 0, failed: 0 });
    assert.deepEqual(made.metadata, { job: 'x' });
    assert.equal(made.finalized_at, null);
    assert.equal(made.error, null);

    const done = await ended(made.id);
    assert.equal(done.status, 'completed', JSON.stringify(done));
    assert.deepEqual(done.request_counts, { total: 3, completed: 3, failed: 0 });
    // the spec's finalized_at is the terminal time; a batch that did not fail has no error
    assert.ok(done.finalized_at >= done.created_at);
    assert.equal(done.finalized_at, done.completed_at);
    assert.equal(done.error, null);
    assert.deepEqual(
      done.results.map((r: any) => r.custom_id),
      ['a', 'b', 'c'],
    );
    for (const r of done.results) {
      assert.equal(r.error, null);
      assert.equal(r.response.status_code, 200);
      assert.equal(r.response.body.object, 'chat.completion');
      assert.match(r.response.body.choices[0].message.content, /^Echo: /);
    }
    assert.equal(b.openai.requests.length, 3, 'the upstream saw each row once');

    // each row costs half of the same synchronous request, rounded up; each is charged once
    const charges = await chargesOf(made.id);
    assert.equal(charges.length, 3);
    let total = 0n;
    for (const [i, row] of rows.entries()) {
      const sync = await syncCharge(row.body);
      const charge = charges.find((c) => c.requestId === `${made.id}:${i}`)!;
      assert.equal(charge.amount, half(sync), `row ${row.custom_id}: ${charge.amount} vs synchronous ${sync}`);
      assert.equal(done.results[i].response.body.cost * 1e9, Number(charge.amount), 'the line carries its cost');
      total += charge.amount;
    }
    assert.equal(Math.round(done.cost * 1e9), Number(total), 'the batch carries its total cost');
    const usage = done.results.reduce(
      (s: any, r: any) => ({
        i: s.i + r.response.body.usage.prompt_tokens,
        o: s.o + r.response.body.usage.completion_tokens,
      }),
      { i: 0, o: 0 },
    );
    assert.equal(done.usage.input_tokens, usage.i);
    assert.equal(done.usage.output_tokens, usage.o);
    assert.ok(done.completed_at >= done.created_at && done.in_progress_at !== null);

    // the workflow is the batch's id, its owner searchable
    const t = await useTemporal();
    const desc = await t.client.workflow.getHandle(made.id).describe();
    assert.equal(desc.type, 'batchJob');
    assert.deepEqual(desc.searchAttributes.SwitchyardAccountId, [accountId]);
  });

  it('10,000 rows: each answered and charged once, and no workflow history grows with the batch', async function () {
    this.timeout(300_000);
    const N = 10_000;
    const res = await create({
      endpoint: '/v1/chat/completions',
      model: MODEL,
      requests: Array.from({ length: N }, (_, i) => chatRow(`r${i}`, `row ${i}`, { max_tokens: 16 })),
    });
    assert.equal(res.status, 202, await res.clone().text());
    const made = (await res.json()) as any;
    const done = await ended(made.id, 240_000);
    assert.equal(done.status, 'completed');
    assert.deepEqual(done.request_counts, { total: N, completed: N, failed: 0 });
    assert.equal(b.openai.requests.length, N, 'the upstream saw each row once');

    const { rows } = await db().pool.query(
      `SELECT count(*)::int AS n, count(DISTINCT request_id)::int AS rows, COALESCE(-sum(amount), 0)::text AS total
       FROM ledger_entries WHERE account_id = $1 AND kind = 'charge' AND request_id LIKE $2`,
      [accountId, `${made.id}:%`],
    );
    assert.deepEqual(rows[0], { n: N, rows: N, total: String(Math.round(done.cost * 1e9)) });
    assert.equal((await b.usd(accountId)).held, 0n, 'nothing left held');

    // the parent's history grows by a few events per chunk of SWITCHYARD_BATCH_CHUNK_ROWS rows, a
    // chunk's by a few per activity of SWITCHYARD_BATCH_ROWS_PER_ACTIVITY rows: none by the row
    const t = await useTemporal();
    const events = async (id: string) => (await t.client.workflow.getHandle(id).fetchHistory()).events?.length ?? 0;
    const chunks = Math.ceil(N / config.batchChunkRows);
    assert.ok((await events(made.id)) <= 20 + 12 * chunks, `the parent's history: ${await events(made.id)} events`);
    for (let from = 0; from < N; from += config.batchChunkRows) {
      const activities = Math.ceil(Math.min(config.batchChunkRows, N - from) / config.batchRowsPerActivity);
      const n = await events(`${made.id}:rows:${from}`);
      assert.ok(n <= 20 + 12 * activities, `chunk ${from}: ${n} events for ${activities} activities`);
    }
  });

  it('the built-in local model answers batch rows in-process, each at half its price', async () => {
    const LOCAL = 'local/stories260k';
    const rows = [0, 1].map((i) => ({
      custom_id: `l${i}`,
      body: { messages: [{ role: 'user', content: `Once upon a time ${i}` }], max_tokens: 12, temperature: 0, seed: 1 },
    }));
    const made = (await (
      await create({ endpoint: '/v1/chat/completions', model: LOCAL, requests: rows })
    ).json()) as any;
    const done = await ended(made.id);
    assert.deepEqual(done.request_counts, { total: 2, completed: 2, failed: 0 });
    for (const r of done.results) {
      assert.equal(r.response.body.provider, 'local');
      assert.ok(r.response.body.choices[0].message.content.length > 0);
    }
    const charges = await chargesOf(made.id);
    for (const [i, r] of done.results.entries()) {
      const u = r.response.body.usage;
      // 0.02 USD per 1M tokens both ways, no markup: each part rounds up, then the half rounds up
      const sync =
        (BigInt(u.prompt_tokens) * 20_000_000n + 999_999n) / 1_000_000n +
        (BigInt(u.completion_tokens) * 20_000_000n + 999_999n) / 1_000_000n;
      assert.equal(charges[i].amount, half(sync));
    }
  });

  it('responses rows; a row the upstream refuses goes to the errors uncharged; the list shows the batch', async () => {
    const refuse = (req: any) => (JSON.stringify(req.body).includes('refuse me') ? { status: 400 } : {});
    b.openai.script(refuse, refuse);
    const res = await create({
      endpoint: '/v1/responses',
      model: MODEL,
      requests: [
        { custom_id: 'ok', body: { input: 'Hello there', max_output_tokens: 32 } },
        { custom_id: 'bad', body: { input: 'refuse me', max_output_tokens: 32 } },
      ],
    });
    assert.equal(res.status, 202, await res.clone().text());
    const made = (await res.json()) as any;
    const done = await ended(made.id);
    assert.equal(done.status, 'completed');
    assert.deepEqual(done.request_counts, { total: 2, completed: 1, failed: 1 });
    const ok = done.results.find((r: any) => r.custom_id === 'ok');
    assert.equal(ok.response.body.object, 'response');
    assert.equal(ok.response.body.status, 'completed');
    const bad = done.results.find((r: any) => r.custom_id === 'bad');
    assert.equal(bad.response, null);
    assert.equal(bad.error.code, 'upstream_rejected_request');
    const charges = await chargesOf(made.id);
    assert.deepEqual(
      charges.map((c) => c.requestId),
      [`${made.id}:0`],
      'only the row that answered is charged',
    );
    const list = (await (
      await fetch(`${b.base}/api/beta/batches?limit=1`, { headers: { authorization: `Bearer ${key}` } })
    ).json()) as any;
    assert.equal(list.object, 'list');
    assert.equal(list.data[0].id, made.id);
    assert.equal(list.data[0].results, null, 'results are null in lists');
    assert.equal(list.first_id, made.id);
    const { rows: mine } = await db().pool.query(`SELECT count(*)::int AS n FROM batches WHERE account_id = $1`, [
      accountId,
    ]);
    assert.equal(list.has_more, mine[0].n > 1);
  });

  it('a row the upstream rate-limits is retried with backoff by the engine and charged once', async () => {
    // the first attempt: openai rate-limits, its fallback openrouter is unavailable; the second is answered
    b.openai.script({ status: 429, headers: { 'retry-after': '1' } });
    b.openrouter.script({ status: 503 });
    const res = await create({ endpoint: '/v1/chat/completions', model: MODEL, requests: [chatRow('r', 'retry me')] });
    const made = (await res.json()) as any;
    const done = await ended(made.id);
    assert.equal(done.status, 'completed');
    assert.deepEqual(done.request_counts, { total: 1, completed: 1, failed: 0 });
    assert.equal(b.openai.requests.length, 2, 'openai saw the row twice: the 429, then the answer');
    assert.equal(b.openrouter.requests.length, 1);
    assert.equal((await chargesOf(made.id)).length, 1);
    b.openrouter.reset();
  });

  it('a row that keeps failing retryably goes to the errors when its attempts are spent, its hold released', async () => {
    config.batchRowAttempts = 2;
    b.openai.defaults({ status: 500 });
    b.openrouter.defaults({ status: 500 });
    try {
      const res = await create({ endpoint: '/v1/chat/completions', model: MODEL, requests: [chatRow('x', 'never')] });
      const made = (await res.json()) as any;
      const done = await ended(made.id);
      assert.equal(done.status, 'completed');
      assert.deepEqual(done.request_counts, { total: 1, completed: 0, failed: 1 });
      assert.equal(done.results[0].error.code, 'all_fallbacks_failed');
      assert.equal(b.openai.requests.length, 2, 'two attempts');
      assert.deepEqual(await chargesOf(made.id), []);
      assert.equal((await b.usd(accountId)).held, 0n);
    } finally {
      b.openai.defaults({});
      b.openrouter.defaults({});
      b.openrouter.reset();
    }
  });

  it('a row gets exactly the attempts the setting gives: one, or five (the default), then its error line', async () => {
    try {
      for (const attempts of [1, 5]) {
        config.batchRowAttempts = attempts;
        b.openai.reset(); // the requests counted, and the defaults: set again
        b.openai.defaults({ status: 500 });
        b.openrouter.defaults({ status: 500 });
        const res = await create({ endpoint: '/v1/chat/completions', model: MODEL, requests: [chatRow('x', 'never')] });
        const made = (await res.json()) as any;
        const done = await ended(made.id);
        assert.deepEqual(done.request_counts, { total: 1, completed: 0, failed: 1 }, `${attempts} attempts`);
        assert.equal(done.results[0].error.code, 'all_fallbacks_failed', `${attempts} attempts`);
        assert.equal(b.openai.requests.length, attempts, `${attempts} attempts, each sent once`);
        assert.deepEqual(await chargesOf(made.id), []);
        assert.equal((await b.usd(accountId)).held, 0n);
      }
    } finally {
      b.openai.defaults({});
      b.openrouter.defaults({});
      b.openrouter.reset();
    }
  });

  it('cancel: rows running finish and are charged, rows not started are cancelled and never sent', async () => {
    config.batchConcurrency = 2;
    b.openai.defaults({ delayMs: 700 });
    const rows = Array.from({ length: 12 }, (_, i) => chatRow(`c${i}`, `slow ${i}`));
    const made = (await (
      await create({ endpoint: '/v1/chat/completions', model: MODEL, requests: rows })
    ).json()) as any;
    await until(
      () => get(made.id),
      (x) => x.request_counts.completed >= 2,
      30_000,
      'two rows to finish',
    );
    const cancel = await fetch(`${b.base}/api/beta/batches/${made.id}/cancel`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
    });
    assert.equal(cancel.status, 200);
    assert.equal(((await cancel.json()) as any).status, 'cancelling');
    const done = await ended(made.id);
    b.openai.defaults({});
    assert.equal(done.status, 'cancelled');
    const { completed, failed, total } = done.request_counts;
    assert.equal(total, 12);
    assert.equal(failed, 0);
    assert.ok(completed >= 2 && completed < 12, `completed ${completed}`);
    assert.equal(b.openai.requests.length, completed, 'no cancelled row reached the upstream');
    assert.equal((await chargesOf(made.id)).length, completed, 'every finished row charged once, no other');
    assert.equal(done.results.length, completed, 'the output so far is kept');
    const { rows: states } = await db().pool.query(
      `SELECT status, count(*)::int AS n FROM batch_rows WHERE batch_id = $1 GROUP BY status`,
      [made.id],
    );
    assert.equal(states.find((s) => s.status === 'cancelled')?.n, 12 - completed);
    // cancelling again answers the batch as it is; a completed batch cannot be cancelled
    const again = await fetch(`${b.base}/api/beta/batches/${made.id}/cancel`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
    });
    assert.equal(((await again.json()) as any).status, 'cancelled');
  });

  it('cancel racing the rows as they finish: every row ends exactly one way, and only answered rows are charged', async () => {
    config.batchConcurrency = 3;
    b.openai.defaults({ delayMs: 60 });
    for (const wait of [0, 40, 90, 150, 260]) {
      b.openai.reset();
      const rows = Array.from({ length: 6 }, (_, i) => chatRow(`r${i}`, `race ${wait} ${i}`));
      const made = (await (
        await create({ endpoint: '/v1/chat/completions', model: MODEL, requests: rows })
      ).json()) as any;
      await new Promise((r) => setTimeout(r, wait)); // the race's chosen delay: what is tested
      const cancel = await fetch(`${b.base}/api/beta/batches/${made.id}/cancel`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}` },
      });
      // a batch already finalizing or completed cannot be cancelled: 409, and it completes
      assert.ok(cancel.status === 200 || cancel.status === 409, `${cancel.status}`);
      const done = await ended(made.id);
      assert.ok(['cancelled', 'completed'].includes(done.status), done.status);
      const { rows: states } = await db().pool.query(
        `SELECT status, count(*)::int AS n FROM batch_rows WHERE batch_id = $1 GROUP BY status`,
        [made.id],
      );
      const n = (s: string) => states.find((x) => x.status === s)?.n ?? 0;
      assert.equal(n('succeeded') + n('cancelled'), 6, JSON.stringify(states));
      assert.equal(n('succeeded'), done.request_counts.completed);
      const { rows: counted } = await db().pool.query('SELECT cancelled FROM batches WHERE id = $1', [made.id]);
      assert.equal(counted[0].cancelled, n('cancelled'));
      assert.equal((await chargesOf(made.id)).length, n('succeeded'), `wait ${wait}`);
      assert.equal(b.openai.requests.length, n('succeeded'));
    }
    b.openai.defaults({});
  });

  it('the completion window closes first: rows not run are expired and never charged', async () => {
    config.batchConcurrency = 1;
    config.batchWindowSeconds = 2;
    b.openai.defaults({ delayMs: 800 });
    const rows = Array.from({ length: 8 }, (_, i) => chatRow(`e${i}`, `late ${i}`));
    const made = (await (
      await create({ endpoint: '/v1/chat/completions', model: MODEL, requests: rows })
    ).json()) as any;
    const done = await ended(made.id);
    b.openai.defaults({});
    assert.equal(done.status, 'expired');
    assert.ok(done.expired_at >= done.created_at);
    const { completed } = done.request_counts;
    assert.ok(completed >= 1 && completed < 8, `completed ${completed}`);
    assert.equal((await chargesOf(made.id)).length, completed);
    assert.equal(b.openai.requests.length, completed);
    // finishBatch retried after it had closed the rows but before it set the status: still expired
    await db().pool.query(`UPDATE batches SET status = 'finalizing' WHERE id = $1`, [made.id]);
    assert.equal(await finishBatch(made.id, { cancelled: false, expired: true }), 'expired');
  });

  it('two creates with one Idempotency-Key make one batch; the key with another body is a 409', async () => {
    const body = { endpoint: '/v1/chat/completions', model: MODEL, requests: [chatRow('i', 'once')] };
    const [r1, r2] = await Promise.all([
      create(body, { 'idempotency-key': 'same-key-1' }),
      create(body, { 'idempotency-key': 'same-key-1' }),
    ]);
    assert.equal(r1.status, 202);
    assert.equal(r2.status, 202);
    const [a, c] = [(await r1.json()) as any, (await r2.json()) as any];
    assert.equal(a.id, c.id);
    const other = await create({ ...body, metadata: { x: 'y' } }, { 'idempotency-key': 'same-key-1' });
    assert.equal(other.status, 409);
    assert.equal(((await other.json()) as any).error.code, 'idempotency_key_reused');
    await ended(a.id);
    assert.equal(b.openai.requests.length, 1, 'one batch ran');
    const { rows } = await db().pool.query(
      `SELECT count(*)::int AS n FROM batches WHERE idempotency_key = 'same-key-1'`,
    );
    assert.equal(rows[0].n, 1);
  });

  it("refuses what the spec's rules refuse, naming the row, before anything is stored", async () => {
    const bad = async (body: any, code: string, param?: RegExp) => {
      const res = await create({ endpoint: '/v1/chat/completions', model: MODEL, ...body });
      const j = (await res.json()) as any;
      assert.ok(res.status === 400 || res.status === 413, `${res.status} ${JSON.stringify(j)}`);
      assert.equal(j.error.code, code, JSON.stringify(j));
      if (param) assert.match(j.error.param, param);
    };
    await bad(
      { requests: [chatRow('a', 'x', { stream: true })] },
      'invalid_parameter_value',
      /requests\[0\]\.body\.stream/,
    );
    await bad(
      { requests: [chatRow('a', 'x'), chatRow('a', 'y')] },
      'invalid_parameter_value',
      /requests\[1\]\.custom_id/,
    );
    await bad({ requests: [{ custom_id: 'a', body: { messages: [] } }] }, 'invalid_parameter_value', /requests\[0\]/);
    await bad({ requests: [chatRow('a', 'x', { model: 'anthropic/claude-3-5-haiku' })] }, 'invalid_parameter_value');
    await bad({ endpoint: '/v1/messages', requests: [chatRow('a', 'x')] }, 'invalid_parameter_value', /endpoint/);
    await bad(
      { endpoint: '/v1/responses', requests: [{ custom_id: 'a', body: { input: 'x', max_output_tokens: 8 } }] },
      'invalid_parameter_value',
    );
    // 62 rows without a cap ask for 62 × 4096 > 250,000 output tokens
    await bad(
      {
        requests: Array.from({ length: 62 }, (_, i) => ({
          custom_id: `n${i}`,
          body: { messages: [{ role: 'user', content: 'x' }] },
        })),
      },
      'invalid_parameter_value',
      /^requests$/,
    );
    // bodies the synchronous route's schema refuses are refused here too (never a 500)
    await bad(
      { requests: [{ custom_id: 'a', body: { messages: [null], max_tokens: 5 } }] },
      'invalid_parameter_value',
      /messages/,
    );
    await bad(
      { requests: [{ custom_id: 'a', body: { messages: [{ role: 'user', content: { a: 1 } }], max_tokens: 5 } }] },
      'invalid_parameter_value',
    );
    await bad(
      { requests: [{ custom_id: 'a', body: { messages: 'hello', max_tokens: 5 } }] },
      'invalid_parameter_value',
    );
    // a model that cannot run the rows: the spec's unsupported_model, naming the row's model
    for (const [model, endpoint, param] of [
      ['openai/text-embedding-3-small', '/v1/chat/completions', /^model$/],
      ['local/decider-260k', '/v1/chat/completions', /^model$/],
      ['openai/gpt-4o-mini-search-preview', '/v1/responses', /^requests\[0\]\.body\.model$/],
    ] as const)
      await bad(
        {
          model,
          endpoint,
          requests: [
            endpoint === '/v1/responses'
              ? { custom_id: 'a', body: { input: 'x', max_output_tokens: 32 } }
              : chatRow('a', 'x'),
          ],
        },
        'unsupported_model',
        param,
      );
    // the model's class takes no tools (no tool calling) or no structured output: unsupported_batch_input
    const tool = { type: 'function', function: { name: 'f', parameters: { type: 'object' } } };
    await bad(
      { model: 'local/stories260k', requests: [chatRow('a', 'x', { tools: [tool] })] },
      'unsupported_batch_input',
      /requests\[0\]\.body\.tools/,
    );
    const schema = { type: 'json_schema', json_schema: { name: 's', schema: { type: 'object' } } };
    for (const response_format of [schema, { type: 'json_object' }])
      await bad(
        { model: 'local/stories260k', requests: [chatRow('a', 'x', { response_format })] },
        'unsupported_batch_input',
        /requests\[0\]\.body\.response_format/,
      );
    await bad(
      {
        model: 'local/stories260k',
        endpoint: '/v1/responses',
        requests: [
          { custom_id: 'a', body: { input: 'x', max_output_tokens: 32, text: { format: { type: 'json_object' } } } },
        ],
      },
      'unsupported_batch_input',
      /requests\[0\]\.body\.text\.format/,
    );
    const list = await fetch(`${b.base}/api/beta/batches?created_after=2026-13-45T99:99Z`, {
      headers: { authorization: `Bearer ${key}` },
    });
    assert.equal(list.status, 400);
    const { rows } = await db().pool.query(
      `SELECT count(*)::int AS n FROM batches WHERE account_id = $1 AND status = 'validating'`,
      [accountId],
    );
    assert.equal(rows[0].n, 0);
  });

  it('a row reserves its worst case at the batch price too, not at the synchronous one', async () => {
    // a key with a daily cap holds exactly (no lease share), so each reservation is a hold to read
    const { key: capped } = await createKey(accountId, { name: 'capped', dailyUsdLimit: parseAmount('100', 'USD') });
    const row = chatRow('r', 'reserve for me at the batch price');
    const sync = await b.post(capped, { model: MODEL, ...row.body });
    assert.equal(sync.status, 200, await sync.clone().text());
    const holdOf = async (requestPattern: string) => {
      const { rows } = await db().pool.query(`SELECT amount FROM balance_holds WHERE request_id LIKE $1`, [
        requestPattern,
      ]);
      assert.equal(rows.length, 1, requestPattern);
      return BigInt(rows[0].amount);
    };
    const syncWorst = await holdOf(sync.headers.get('x-request-id')!);
    const made = (await (
      await b.post(capped, { endpoint: '/v1/chat/completions', model: MODEL, requests: [row] }, {}, '/api/beta/batches')
    ).json()) as any;
    assert.equal((await ended(made.id)).status, 'completed');
    assert.equal(await holdOf(`${made.id}:%`), half(syncWorst));
  });

  it('the batch price arithmetic: the default factor, a factor of 0, rounding up to the nano-dollar', () => {
    assert.equal(batchPriceBps({ batchPriceBps: null }), 5000);
    assert.equal(batchPriceBps({ batchPriceBps: 0 }), 0, 'a free batch price is a price');
    assert.equal(batchPriceBps({ batchPriceBps: 2500 }), 2500);
    for (const [cost, bps, want] of [
      [0n, 5000, 0n],
      [1n, 5000, 1n],
      [3n, 5000, 2n],
      [4n, 5000, 2n],
      [4n, 2500, 1n],
      [5n, 2500, 2n],
      [6n, 2500, 2n],
      [10_000n, 1, 1n],
      [10_001n, 1, 2n],
      [7n, 10_000, 7n],
      [7n, 0, 0n],
      [1_000_000_007n, 7500, 750_000_006n],
    ] as const)
      assert.equal(atPriceBps(cost, bps), want, `${cost} at ${bps} bps`);
  });

  it('the catalog sets another batch price factor for a model: the row costs that share', async () => {
    assert.equal(
      parseCatalog(
        `providers: {p: {name: P, protocol: openai}}\nmodels: [{id: m, name: M, owned_by: o, category: chat, batch_price_factor: "0.25", providers: [{provider: p, upstream_model: m, price: {input: "1", output: "1"}}]}]`,
      ).models[0].batchPriceBps,
      2500,
    );
    await db().pool.query(`UPDATE models SET batch_price_bps = 2500 WHERE id = $1`, [MODEL]);
    await loadCatalog();
    try {
      const row = chatRow('q', 'a quarter please');
      const made = (await (
        await create({ endpoint: '/v1/chat/completions', model: MODEL, requests: [row] })
      ).json()) as any;
      await ended(made.id);
      const [charge] = await chargesOf(made.id);
      const sync = await syncCharge(row.body);
      assert.equal(charge.amount, (sync * 2500n + 9999n) / 10000n);
    } finally {
      await db().pool.query(`UPDATE models SET batch_price_bps = NULL WHERE id = $1`, [MODEL]);
      await loadCatalog();
    }
  });

  describe('the workflow engine unreachable: 503 batches_unavailable within 2 s', () => {
    /** Create a batch against `address` (connecting afresh), and how long the answer took. */
    async function createAgainst(address: string, connected?: () => Promise<void>) {
      // the engine the shared client was connected to (another file's config snapshot may have unset
      // config.temporalAddress since): the client is closed here, so it must find that engine again
      const engine = (await useTemporal()).address;
      await import('@temporalio/client'); // loaded, as an API process with an engine does at start-up
      await closeTemporalClient();
      config.temporalAddress = address;
      try {
        await connected?.();
        const started = Date.now();
        const res = await create({ endpoint: '/v1/chat/completions', model: MODEL, requests: [chatRow('a', 'hi')] });
        return { res, ms: Date.now() - started };
      } finally {
        await closeTemporalClient();
        config.temporalAddress = engine;
      }
    }

    it('nothing listens at the address', async () => {
      const { res, ms } = await createAgainst(`127.0.0.1:${await freePort()}`);
      assert.equal(res.status, 503, await res.clone().text());
      assert.equal(((await res.json()) as any).error.code, 'batches_unavailable');
      assert.ok(ms < 2000, `answered after ${ms} ms`);
    });

    it('the engine goes away after the client connected', async () => {
      // a TCP relay to the real engine, closed (with its connections) once the client is connected
      const sockets = new Set<net.Socket>();
      const [host, port] = (await useTemporal()).address.split(':');
      const relay = net.createServer((inbound) => {
        const outbound = net.connect(Number(port), host);
        for (const s of [inbound, outbound]) {
          sockets.add(s);
          s.on('error', () => undefined);
        }
        inbound.pipe(outbound).pipe(inbound);
      });
      await new Promise<void>((r) => relay.listen(0, '127.0.0.1', r));
      const { res, ms } = await createAgainst(`127.0.0.1:${(relay.address() as net.AddressInfo).port}`, async () => {
        await temporal();
        await new Promise<void>((r) => {
          relay.close(() => r());
          for (const s of sockets) s.destroy();
        });
      });
      assert.equal(res.status, 503, await res.clone().text());
      assert.ok(ms < 2000, `answered after ${ms} ms`);
    });
  });
});
