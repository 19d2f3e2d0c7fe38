// biome-ignore-all lint/suspicious/noExplicitAny: wire JSON, read field by field
// File-backed batches (/v1/batches) with the official `openai` SDK, unchanged: files.create →
// batches.create → batches.retrieve until it ends → files.content of the output and error files;
// batches.list and batches.cancel. The input file is checked inside the workflow (`validating`):
// a bad file fails the batch with `errors` naming its lines, and charges nothing. The input file
// is held while the batch may read it (deleting it is a 409 file_in_use). Every answered row is
// charged once at half the synchronous price; the books balance after every test.
import assert from 'node:assert/strict';
import OpenAI, { toFile } from 'openai';
import { config } from '../activities/config.js';
import { db } from '../activities/db.js';
import { type ChatBench, startChatBench } from './support/chatEnv.js';
import { useTemporal } from './support/temporal.js';
import { assertBooksBalance } from './support/books.js';
import { until } from './support/wait.js';

const MODEL = 'openai/gpt-4o-mini';

describe('file-backed batches (/v1/batches) with the openai SDK', function () {
  this.timeout(180_000);
  let b: ChatBench;
  let client: OpenAI;
  // the batch settings tests change, put back after each (only these: the rest is the harness's)
  const saved = {
    batchConcurrency: config.batchConcurrency,
    batchWindowSeconds: config.batchWindowSeconds,
    batchRowAttempts: config.batchRowAttempts,
  };

  before(async () => {
    await useTemporal();
    b = await startChatBench();
    const { key } = await b.account('5');
    client = new OpenAI({ apiKey: key, baseURL: `${b.base}/v1`, maxRetries: 0 });
  });
  after(() => b.close());
  afterEach(async () => {
    Object.assign(config, saved);
    b.openai.reset();
    await assertBooksBalance();
  });

  const line = (custom_id: string, body: object, url = '/v1/chat/completions') =>
    JSON.stringify({ custom_id, method: 'POST', url, body });
  const chat = (text: string, extra: object = {}) => ({
    model: MODEL,
    messages: [{ role: 'user', content: text }],
    max_tokens: 40,
    ...extra,
  });
  const upload = async (lines: string[]) =>
    client.files.create({ file: await toFile(Buffer.from(`${lines.join('\n')}\n`), 'batch.jsonl'), purpose: 'batch' });
  const ended = (id: string) =>
    until(
      () => client.batches.retrieve(id),
      (x) => ['completed', 'failed', 'expired', 'cancelled'].includes(x.status),
      90_000,
      `batch ${id} to end`,
    );
  const jsonl = async (fileId: string) =>
    (await (await client.files.content(fileId)).text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
  const charges = async (batchId: string) =>
    (
      await db().pool.query(
        `SELECT request_id, amount FROM ledger_entries WHERE kind = 'charge' AND request_id LIKE $1 ORDER BY request_id`,
        [`${batchId}:%`],
      )
    ).rows.map((r) => ({ requestId: r.request_id as string, amount: -BigInt(r.amount) }));

  it('create, retrieve, list; the output file has the answers, the error file the failures; each row charged once at half price', async () => {
    const refuse = (req: any) => (JSON.stringify(req.body).includes('refuse me') ? { status: 400 } : {});
    b.openai.script(refuse, refuse, refuse);
    const file = await upload([
      line('one', chat('first row')),
      line('two', chat('refuse me')),
      line('three', chat('third')),
    ]);
    const batch = await client.batches.create({
      input_file_id: file.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
      metadata: { purpose: 'test' },
    });
    assert.equal(batch.object, 'batch');
    assert.equal(batch.status, 'validating');
    assert.equal(batch.input_file_id, file.id);
    assert.equal(batch.output_file_id, null);
    assert.deepEqual(batch.request_counts, { total: 0, completed: 0, failed: 0 });

    const done = await ended(batch.id);
    assert.equal(done.status, 'completed', JSON.stringify(done));
    assert.deepEqual(done.request_counts, { total: 3, completed: 2, failed: 1 });
    assert.equal((done as any).model, MODEL);
    assert.ok(done.completed_at && done.finalizing_at && done.in_progress_at);
    assert.ok(done.output_file_id && done.error_file_id);

    const out = await jsonl(done.output_file_id!);
    assert.deepEqual(
      out.map((l) => l.custom_id),
      ['one', 'three'],
    );
    for (const l of out) {
      assert.equal(l.error, null);
      assert.equal(l.response.status_code, 200);
      assert.equal(l.response.body.object, 'chat.completion');
    }
    const errs = await jsonl(done.error_file_id!);
    assert.deepEqual(
      errs.map((l) => [l.custom_id, l.response, l.error.code]),
      [['two', null, 'upstream_rejected_request']],
    );

    const c = await charges(batch.id);
    assert.deepEqual(
      c.map((x) => x.requestId),
      [`${batch.id}:0`, `${batch.id}:2`],
    );
    // each line carries its row's cost, which is what was charged (batches.test.ts: half the synchronous price)
    for (const [i, l] of out.entries()) assert.equal(BigInt(Math.round(l.response.body.cost * 1e9)), c[i].amount);
    assert.equal(BigInt(Math.round((done as any).cost * 1e9)), c[0].amount + c[1].amount);

    const page = await client.batches.list({ limit: 10 });
    assert.ok(page.data.some((x) => x.id === batch.id));
    // the input file is no longer held once the batch has ended: it can be deleted
    assert.equal((await client.files.delete(file.id)).deleted, true);
  });

  it('a file that breaks the rules fails the batch with errors naming its lines, nothing run or charged', async () => {
    const file = await upload([
      line('a', chat('fine')),
      line('a', chat('duplicate id')),
      line('b', chat('no cap', { max_tokens: undefined })),
      line('c', chat('streamed', { stream: true })),
      line('d', chat('wrong url'), '/v1/messages'),
      '{not json',
      line('e', { model: MODEL, input: 'x', max_output_tokens: 8 }),
    ]);
    const batch = await client.batches.create({
      input_file_id: file.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    const done = await ended(batch.id);
    assert.equal(done.status, 'failed');
    assert.ok(done.failed_at);
    // the spec's one-error field and terminal time, beside OpenAI's list and failed_at
    const raw = (await client.batches.retrieve(batch.id)) as unknown as { error: unknown; finalized_at: number };
    assert.deepEqual(raw.error, done.errors!.data![0]);
    assert.equal(raw.finalized_at, done.failed_at);
    const byLine = Object.fromEntries(done.errors!.data!.map((e) => [e.line, e]));
    assert.equal(byLine[2].code, 'duplicate_custom_id');
    assert.equal(byLine[3].code, 'missing_required_parameter');
    assert.match(byLine[3].message!, /max_tokens/);
    assert.equal(byLine[4].param, 'body.stream');
    assert.equal(byLine[5].code, 'mismatched_url');
    assert.equal(byLine[6].code, 'invalid_json_line');
    assert.ok(byLine[7], 'a responses-shaped row in a chat batch is refused');
    assert.equal(byLine[1], undefined, 'the good line is not named');
    assert.equal(b.openai.requests.length, 0);
    assert.deepEqual(await charges(batch.id), []);
    const { rows } = await db().pool.query('SELECT count(*)::int AS n FROM batch_rows WHERE batch_id = $1', [batch.id]);
    assert.equal(rows[0].n, 0);
    assert.equal((await client.files.delete(file.id)).deleted, true, 'the failed batch let go of its file');
  });

  it('responses rows need max_output_tokens >= 16; valid ones run', async () => {
    const bad = await upload([line('r', { model: MODEL, input: 'hi', max_output_tokens: 15 }, '/v1/responses')]);
    const failed = await ended(
      (await client.batches.create({ input_file_id: bad.id, endpoint: '/v1/responses', completion_window: '24h' })).id,
    );
    assert.equal(failed.status, 'failed');
    assert.match(failed.errors!.data![0].message!, /max_output_tokens/);
    const good = await upload([line('r', { model: MODEL, input: 'hi', max_output_tokens: 16 }, '/v1/responses')]);
    const done = await ended(
      (await client.batches.create({ input_file_id: good.id, endpoint: '/v1/responses', completion_window: '24h' })).id,
    );
    assert.equal(done.status, 'completed');
    const [out] = await jsonl(done.output_file_id!);
    assert.equal(out.response.body.object, 'response');
  });

  it('the input file cannot be deleted while its batch runs (409 file_in_use); cancel keeps the output so far', async () => {
    config.batchConcurrency = 1;
    b.openai.defaults({ delayMs: 600 });
    const file = await upload(Array.from({ length: 8 }, (_, i) => line(`s${i}`, chat(`slow ${i}`))));
    const batch = await client.batches.create({
      input_file_id: file.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    await until(
      () => client.batches.retrieve(batch.id),
      (x) => x.request_counts!.completed >= 1,
      30_000,
      'a row to finish',
    );
    const del = await fetch(`${b.base}/v1/files/${file.id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${client.apiKey}` },
    });
    assert.equal(del.status, 409);
    assert.equal(((await del.json()) as any).error.code, 'file_in_use');

    const cancelling = await client.batches.cancel(batch.id);
    assert.equal(cancelling.status, 'cancelling');
    const done = await ended(batch.id);
    b.openai.defaults({});
    assert.equal(done.status, 'cancelled');
    assert.ok(done.cancelled_at && done.cancelling_at);
    const completed = done.request_counts!.completed;
    assert.ok(completed >= 1 && completed < 8);
    assert.equal((await jsonl(done.output_file_id!)).length, completed, 'the output so far is kept');
    assert.equal((await charges(batch.id)).length, completed);
    assert.equal(b.openai.requests.length, completed);
    assert.equal((await client.files.delete(file.id)).deleted, true);
  });

  it("someone else's file, or a file that is not a batch input, is refused at create", async () => {
    const other = await b.account('1');
    const theirs = new OpenAI({ apiKey: other.key, baseURL: `${b.base}/v1`, maxRetries: 0 });
    const file = await upload([line('x', chat('mine'))]);
    await assert.rejects(
      theirs.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' }),
      (e: any) => e.status === 404,
    );
    await assert.rejects(
      client.batches.create({
        input_file_id: file.id,
        endpoint: '/v1/chat/completions',
        completion_window: '1h' as any,
      }),
      (e: any) => e.status === 400,
    );
    await assert.rejects(
      client.batches.create({ input_file_id: file.id, endpoint: '/v1/messages' as any, completion_window: '24h' }),
      (e: any) => e.status === 400,
    );
    assert.equal((await client.files.delete(file.id)).deleted, true, 'refused creates hold nothing');
  });
});
