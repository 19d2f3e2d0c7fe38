// biome-ignore-all lint/suspicious/noExplicitAny: wire JSON, read field by field
// Background responses as Temporal workflows (real dev server and worker): queued at once,
// run by the worker, settled in the activity, retrievable; cancel goes through the workflow and
// gives the reservation back.
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startChatBench, type ChatBench } from './support/chatEnv.js';
import { useTemporal } from './support/temporal.js';
import { assertBooksBalance } from './support/books.js';
import { parseAmount } from '../activities/core/money.js';
import { until } from './support/wait.js';
import { endedAnswers } from './support/jobEnded.js';
import { freePort } from './support/ports.js';
import { config } from '../activities/config.js';
import { closeTemporalClient } from '../activities/temporalClient.js';

const MODEL = 'openai/gpt-4o-mini';

describe('responses API: background mode (Temporal workflow)', function () {
  this.timeout(120_000);
  let b: ChatBench;
  let client: OpenAI;
  let accountId: string;
  before(async () => {
    await useTemporal();
    b = await startChatBench();
    let key: string;
    ({ key, accountId } = await b.account('2'));
    client = new OpenAI({ apiKey: key, baseURL: `${b.base}/v1`, maxRetries: 0 });
  });
  after(() => b.close());
  afterEach(() => assertBooksBalance());

  it('answers queued at once, runs in the workflow, settles the usage, and can be retrieved and chained', async () => {
    const before = (await b.usd(accountId)).amount;
    b.openai.script({ text: 'Background answer.', delayMs: 300 });
    const r: any = await client.responses.create({ model: MODEL, input: 'Think about it', background: true });
    assert.equal(r.status, 'queued');
    assert.equal(r.background, true);
    assert.match(r.id, /^resp_/);
    const done: any = await until(
      () => client.responses.retrieve(r.id),
      (x: any) => x.status === 'completed',
    );
    assert.equal(done.status, 'completed');
    assert.equal(done.output_text, 'Background answer.');
    assert.ok(done.usage.output_tokens > 0);
    const bal = await b.usd(accountId);
    assert.equal(bal.held, 0n);
    assert.ok(bal.amount < before);
    // the workflow is visible by its id, and by the owner's search attribute
    const t = await useTemporal();
    const desc = await t.client.workflow.getHandle(r.id).describe();
    assert.equal(desc.type, 'backgroundResponse');
    assert.deepEqual(desc.searchAttributes.SwitchyardAccountId, [accountId]);
    // it chains like any stored response
    const next: any = await client.responses.create({ model: MODEL, input: 'And then?', previous_response_id: r.id });
    assert.equal(next.status, 'completed');
    assert.ok(
      b.openai.last().body.messages.some((m: any) => m.role === 'assistant' && m.content === 'Background answer.'),
    );
  });

  it('cancels through the workflow: status cancelled, reservation released, nothing charged', async () => {
    const before = await b.usd(accountId);
    b.openai.script({ hang: true });
    const r: any = await client.responses.create({ model: MODEL, input: 'This will hang', background: true });
    await until(
      () => client.responses.retrieve(r.id),
      (x: any) => x.status === 'in_progress',
    );
    await until(
      async () => b.openai.requests.length,
      (n) => n > 0,
    );
    const cancelled: any = await client.responses.cancel(r.id);
    assert.equal(cancelled.status, 'cancelled');
    // the route heard the end from the workflow (its `ended` update), not by reading the row again and again
    assert.deepEqual(await endedAnswers(r.id), ['cancelled']);
    const after = await until(
      () => b.usd(accountId),
      (x) => x.held === 0n,
    );
    assert.deepEqual(after, before);
    await until(
      async () => b.openai.last().aborted,
      (x) => x,
      5000,
    );
    assert.equal(b.openai.last().aborted, true, 'the upstream call was aborted');
  });

  it("cancelling a finished response answers it as it ended; another account's is not found", async () => {
    b.openai.script({ text: 'Already done.' });
    const r: any = await client.responses.create({ model: MODEL, input: 'Quick one', background: true });
    const done: any = await until(
      () => client.responses.retrieve(r.id),
      (x: any) => x.status === 'completed',
    );
    const spent = await b.usd(accountId);
    const other = await b.account('1');
    const stranger = new OpenAI({ apiKey: other.key, baseURL: `${b.base}/v1`, maxRetries: 0 });
    await assert.rejects(stranger.responses.cancel(r.id), (e: any) => e.status === 404);
    const again: any = await client.responses.cancel(r.id);
    assert.equal(again.status, 'completed');
    assert.equal(again.output_text, done.output_text);
    assert.deepEqual(await b.usd(accountId), spent);
    assert.deepEqual(await endedAnswers(r.id), [], 'a finished job is not asked anything');
  });

  it('a cancel while the workflow engine is unreachable: 503 background_unavailable, the response runs on', async () => {
    const before = await b.usd(accountId);
    b.openai.script({ hang: true });
    const r: any = await client.responses.create({ model: MODEL, input: 'Outlives an outage', background: true });
    await until(
      () => client.responses.retrieve(r.id),
      (x: any) => x.status === 'in_progress',
    );
    const address = config.temporalAddress;
    await closeTemporalClient();
    config.temporalAddress = `127.0.0.1:${await freePort()}`; // nothing listens there
    try {
      await assert.rejects(client.responses.cancel(r.id), (e: any) => {
        assert.equal(e.status, 503);
        assert.equal(e.code, 'background_unavailable');
        return true;
      });
    } finally {
      await closeTemporalClient();
      config.temporalAddress = address;
    }
    assert.equal(((await client.responses.retrieve(r.id)) as any).status, 'in_progress');
    const cancelled: any = await client.responses.cancel(r.id);
    assert.equal(cancelled.status, 'cancelled');
    assert.deepEqual(
      await until(
        () => b.usd(accountId),
        (x) => x.held === 0n,
      ),
      before,
    );
  });

  it('records a failed run (every provider failed) without charging', async () => {
    const before = await b.usd(accountId);
    b.openai.script({ status: 400, error: { message: 'rejected upstream' } });
    const r: any = await client.responses.create({ model: MODEL, input: 'x', background: true });
    const done: any = await until(
      () => client.responses.retrieve(r.id),
      (x: any) => x.status === 'failed',
    );
    assert.equal(done.status, 'failed');
    assert.match(done.error.message, /rejected upstream/);
    assert.deepEqual(await b.usd(accountId), before);
  });

  it('402 before queueing when the balance cannot cover the worst case', async () => {
    const poor = await b.account('0.000001');
    const res = await b.post(poor.key, { model: MODEL, input: 'x', background: true }, {}, '/v1/responses');
    assert.equal(res.status, 402);
    assert.equal((await b.usd(poor.accountId)).amount, parseAmount('0.000001', 'USD'));
  });
});
