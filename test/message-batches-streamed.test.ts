// biome-ignore-all lint/suspicious/noExplicitAny: wire JSON, read field by field
// Large message batch creates (over 1 MiB, chunked or compressed), which the API reads as they
// arrive and stores request by request (api/streamedJson.ts, startStreamedBatch): the batch runs
// as one parsed whole would, an Idempotency-Key replay answers the same batch, and a body refused
// part-way (a bad request deep inside, a duplicate id, broken JSON, past the 200 MiB limit) is
// answered with the message-style 400/413 naming the request, with nothing stored.
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { request } from 'undici';
import { config } from '../activities/config.js';
import { db } from '../activities/db.js';
import { newAccount, startApi } from './support/api.js';
import { useProviderEnv } from './support/providerEnv.js';
import { useTemporal } from './support/temporal.js';
import { type AnthropicUpstream, startAnthropicUpstream } from './support/upstreams/anthropic.js';
import { until } from './support/wait.js';

const HAIKU = 'anthropic/claude-3-5-haiku';
const ROWS = 40;
const PAD = 'word '.repeat(12_000); // 60 kB a request: 40 of them are well over the 1 MiB fast path

describe('message batch creates read as they arrive', function () {
  this.timeout(180_000);
  let api: Awaited<ReturnType<typeof startApi>>;
  let anthropic: AnthropicUpstream;
  let restoreEnv: () => Promise<void>;
  let key: string;
  let accountId: string;

  before(async () => {
    await useTemporal();
    anthropic = await startAnthropicUpstream();
    restoreEnv = await useProviderEnv({ ANTHROPIC_API_KEY: anthropic.apiKey, ANTHROPIC_BASE_URL: anthropic.url }, [
      'ANTHROPIC_API_KEY',
      'ANTHROPIC_BASE_URL',
    ]);
    api = await startApi();
    ({ key, accountId } = await newAccount('5'));
  });
  after(async () => {
    await api.close();
    await anthropic.close();
    await restoreEnv();
  });

  const row = (i: number, params: object = {}) => ({
    custom_id: `r${i}`,
    params: { model: HAIKU, max_tokens: 16, messages: [{ role: 'user', content: `${i} ${PAD}` }], ...params },
  });
  const rows = (change: (r: any, i: number) => any = (r) => r) =>
    Array.from({ length: ROWS }, (_, i) => change(row(i), i));

  /** POST the body: as bytes with a Content-Length, or `chunked` in 64 kB pieces without one. */
  async function create(body: Buffer, headers: Record<string, string> = {}, chunked = false) {
    const res = await request(`${api.base}/v1/messages/batches`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key, ...headers },
      body: chunked ? Readable.from(pieces(body)) : body,
    });
    return { status: res.statusCode, body: (await res.body.json()) as any };
  }
  function* pieces(body: Buffer) {
    for (let i = 0; i < body.length; i += 65536) yield body.subarray(i, i + 65536);
  }

  /** What the account has stored: its batches and their rows. */
  async function stored() {
    const {
      rows: [counts],
    } = await db().pool.query(
      `SELECT (SELECT count(*) FROM batches WHERE account_id = $1)::int AS batches,
              (SELECT count(*) FROM batch_rows r JOIN batches b ON b.id = r.batch_id WHERE b.account_id = $1)::int AS rows`,
      [accountId],
    );
    return counts as { batches: number; rows: number };
  }

  it('stores and runs a large batch as it arrives; a chunked replay under the same key answers it', async () => {
    const body = Buffer.from(JSON.stringify({ requests: rows() }));
    assert.ok(body.length > 2 * 1024 * 1024);
    const made = await create(body, { 'idempotency-key': 'big-one' });
    assert.equal(made.status, 200, JSON.stringify(made.body));
    assert.equal(made.body.type, 'message_batch');
    assert.equal(made.body.request_counts.processing, ROWS);
    const again = await create(body, { 'idempotency-key': 'big-one' }, true);
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.equal(again.body.id, made.body.id);
    const { rows: kept } = await db().pool.query(
      `SELECT idx, custom_id, body FROM batch_rows WHERE batch_id = $1 ORDER BY idx`,
      [made.body.id],
    );
    assert.deepEqual(
      kept.map((r) => [r.idx, r.custom_id, r.body.messages[0].content]),
      rows().map((r, i) => [i, r.custom_id, r.params.messages[0].content]),
    );
    const ended = await until(
      async () =>
        (
          await request(`${api.base}/v1/messages/batches/${made.body.id}`, { headers: { 'x-api-key': key } })
        ).body.json(),
      (b: any) => b.processing_status === 'ended',
      120_000,
      'the batch to end',
    );
    assert.equal((ended as any).request_counts.succeeded, ROWS);
    // the same key with another body is refused as for a body parsed whole
    const other = await create(Buffer.from(JSON.stringify({ requests: rows().reverse() })), {
      'idempotency-key': 'big-one',
    });
    assert.equal(other.status, 409);
  });

  it('reads a gzip-compressed create as it inflates', async () => {
    const before = await stored();
    const made = await create(gzipSync(JSON.stringify({ requests: rows() })), { 'content-encoding': 'gzip' });
    assert.equal(made.status, 200, JSON.stringify(made.body));
    assert.equal((await stored()).rows, before.rows + ROWS);
  });

  const refusals: Array<[string, () => Buffer, RegExp]> = [
    [
      'a request deep inside that its schema refuses',
      () => Buffer.from(JSON.stringify({ requests: rows((r, i) => (i === 33 ? row(i, { max_tokens: 0 }) : r)) })),
      /'requests\[33\]\.params\.max_tokens'/,
    ],
    [
      'a custom_id used twice, far apart',
      () => Buffer.from(JSON.stringify({ requests: rows((r, i) => (i === 37 ? { ...r, custom_id: 'r2' } : r)) })),
      /requests\[37\]\.custom_id 'r2'/,
    ],
    [
      'another model than the first request',
      () =>
        Buffer.from(JSON.stringify({ requests: rows((r, i) => (i === 30 ? row(i, { model: 'openai/gpt-4o' }) : r)) })),
      /requests\[30\]/,
    ],
    [
      'broken JSON near the end',
      () => {
        const text = JSON.stringify({ requests: rows() });
        return Buffer.from(`${text.slice(0, -200)}}}}}`);
      },
      /not valid JSON/,
    ],
    [
      "'requests' given a second time after the first",
      () => Buffer.from(`${JSON.stringify({ requests: rows() }).slice(0, -1)},"requests":[]}`),
      /given twice/,
    ],
  ];
  for (const [what, body, message] of refusals) {
    for (const chunked of [false, true]) {
      it(`refuses ${what} (${chunked ? 'chunked' : 'with a Content-Length'}) and stores nothing`, async () => {
        const before = await stored();
        const res = await create(body(), {}, chunked);
        assert.equal(res.status, 400, JSON.stringify(res.body));
        assert.equal(res.body.type, 'error');
        assert.equal(res.body.error.type, 'invalid_request_error');
        assert.match(res.body.error.message, message);
        assert.deepEqual(await stored(), before);
      });
    }
  }

  it('refuses a body past the 200 MiB limit with 413, announced or not, and stores nothing', async () => {
    const before = await stored();
    const head = Buffer.from(`{"requests":[${JSON.stringify(row(0))},`);
    const space = Buffer.alloc(1024 * 1024, ' ');
    // announced: refused before it is read
    const announced = await request(`${api.base}/v1/messages/batches`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key, 'content-length': String(201 * 1024 * 1024) },
      body: Readable.from(
        (function* () {
          yield head;
          for (let i = 0; i < 201; i++) yield space;
        })(),
      ),
    }).catch((err) => err);
    if (!(announced instanceof Error)) {
      assert.equal(announced.statusCode, 413);
      await announced.body.dump();
    }
    // chunked: a valid request stored first, then whitespace past the limit
    const res = await request(`${api.base}/v1/messages/batches`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key },
      body: Readable.from(
        (function* () {
          yield head;
          for (let i = 0; i < 202; i++) yield space;
          yield Buffer.from(']}');
        })(),
      ),
    }).catch((err) => err);
    // answered before the upload ends (the rest is drained, up to another limit's worth)
    assert.ok(!(res instanceof Error), String(res));
    assert.equal(res.statusCode, 413);
    const body = (await res.body.json()) as any;
    assert.equal(body.error.type, 'request_too_large');
    assert.match(body.error.message, /larger than the limit of 209715200 bytes/);
    assert.deepEqual(await stored(), before);
  });

  it('drops a create whose client stops sending (408), storing nothing', async () => {
    const before = await stored();
    const saved = config.fileUploadIdleTimeoutMs;
    config.fileUploadIdleTimeoutMs = 500;
    try {
      const res = await request(`${api.base}/v1/messages/batches`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': key },
        body: Readable.from(
          (async function* () {
            yield Buffer.from(`{"requests":[${JSON.stringify(row(0))},`);
            await new Promise((r) => setTimeout(r, 3000));
            yield Buffer.from(`${JSON.stringify(row(1))}]}`);
          })(),
        ),
      });
      assert.equal(res.statusCode, 408);
      assert.match(((await res.body.json()) as any).error.message, /sent nothing for 0.5 s/);
    } finally {
      config.fileUploadIdleTimeoutMs = saved;
    }
    assert.deepEqual(await stored(), before);
  });

  it('refuses a large body from a bad key without reading it into a batch', async () => {
    const before = await stored();
    const res = await request(`${api.base}/v1/messages/batches`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': 'sk-not-a-key' },
      body: Buffer.from(JSON.stringify({ requests: rows() })),
    });
    assert.equal(res.statusCode, 401);
    await res.body.dump();
    assert.deepEqual(await stored(), before);
  });
});
