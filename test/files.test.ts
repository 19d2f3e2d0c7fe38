// The Files API through HTTP: the official openai SDK unchanged, a large upload streamed into the
// database while it arrives, aborted and malformed uploads that leave nothing, other accounts' files
// invisible.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { connect } from 'node:net';
import { gzipSync } from 'node:zlib';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

setFlagsFromString('--expose-gc');
import OpenAI, { NotFoundError, toFile } from 'openai';
import { config } from '../activities/config.js';
import { db } from '../activities/db.js';
import { holdFile, releaseFileHolds } from '../activities/files/holds.js';
import { storeFile } from '../activities/files/store.js';
import { newAccount, startApi } from './support/api.js';

type Api = Awaited<ReturnType<typeof startApi>>;

const jsonl = (rows: number) =>
  Array.from({ length: rows }, (_, i) =>
    JSON.stringify({
      custom_id: `row-${i}`,
      method: 'POST',
      url: '/v1/chat/completions',
      body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: `hello ${i} ✓` }], max_tokens: 5 },
    }),
  ).join('\n');

async function filesOf(accountId: string): Promise<number> {
  const r = await db().pool.query(`SELECT count(*)::int AS n FROM files WHERE account_id = $1`, [accountId]);
  return r.rows[0].n;
}

async function upload(api: Api, key: string, form: FormData) {
  const res = await fetch(`${api.base}/v1/files`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}` },
    body: form,
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as any };
}

function form(fields: Array<[string, string | Blob, string?]>): FormData {
  const f = new FormData();
  for (const [name, value, filename] of fields) {
    if (typeof value === 'string') f.append(name, value);
    else f.append(name, value, filename);
  }
  return f;
}

describe('files API', function () {
  this.timeout(120_000);
  let api: Api;
  before(async () => {
    api = await startApi();
  });
  after(() => api.close());

  it('works with the official openai SDK: create, list with pagination, retrieve, content, delete', async () => {
    const { key, accountId } = await newAccount('0');
    const client = new OpenAI({ apiKey: key, baseURL: `${api.base}/v1`, maxRetries: 0 });
    const text = jsonl(3);
    const created = [];
    for (let i = 0; i < 5; i++)
      created.push(
        await client.files.create({ file: await toFile(Buffer.from(text), `batch-${i}.jsonl`), purpose: 'batch' }),
      );
    const first = created[0]!;
    assert.match(first.id, /^file_[0-9a-f]{24}$/);
    assert.equal(first.object, 'file');
    assert.equal(first.bytes, Buffer.byteLength(text));
    assert.equal(first.filename, 'batch-0.jsonl');
    assert.equal(first.purpose, 'batch');
    assert.equal(first.status, 'processed');
    assert.ok(Math.abs(first.created_at - Date.now() / 1000) < 60);

    // newest first, two per page, the SDK following has_more / after
    const page = await client.files.list({ limit: 2 });
    assert.deepEqual(
      page.data.map((f) => f.id),
      [created[4]!.id, created[3]!.id],
    );
    assert.equal(page.has_more, true);
    const all = [];
    for await (const f of client.files.list({ limit: 2 })) all.push(f.id);
    assert.deepEqual(all, created.map((f) => f.id).reverse());
    const oldestFirst = [];
    for await (const f of client.files.list({ limit: 3, order: 'asc' })) oldestFirst.push(f.id);
    assert.deepEqual(
      oldestFirst,
      created.map((f) => f.id),
    );
    assert.equal((await client.files.list({ purpose: 'batch_output' })).data.length, 0);

    const again = await client.files.retrieve(first.id);
    assert.deepEqual(again, first);
    const content = await client.files.content(first.id);
    assert.equal(content.headers.get('content-type'), 'application/jsonl');
    assert.equal(await content.text(), text);

    const deleted = await client.files.delete(first.id);
    assert.deepEqual(deleted, { id: first.id, object: 'file', deleted: true });
    await assert.rejects(client.files.retrieve(first.id), NotFoundError);
    await assert.rejects(client.files.delete(first.id), NotFoundError);

    // the documented way to upload: a read stream of a file on disk
    const path = join(tmpdir(), `switchyard-files-${process.pid}.jsonl`);
    await writeFile(path, text);
    try {
      const fromDisk = await client.files.create({ file: createReadStream(path), purpose: 'batch' });
      assert.equal(fromDisk.bytes, Buffer.byteLength(text));
      assert.equal(fromDisk.filename, basename(path));
    } finally {
      await rm(path, { force: true });
    }

    // an output file a batch worker writes is the caller's to list, read and delete like any other
    const output = await storeFile({
      accountId,
      keyId: null,
      purpose: 'batch_output',
      filename: 'batch_x_output.jsonl',
      body: [Buffer.from('{"custom_id":"a"}\n'), Buffer.from('{"custom_id":"b"}\n')],
    });
    const outputs = [];
    for await (const f of client.files.list({ purpose: 'batch_output' })) outputs.push(f);
    assert.deepEqual(
      outputs.map((f) => [f.id, f.purpose]),
      [[output.id, 'batch_output']],
    );
    assert.equal(await (await client.files.content(output.id)).text(), '{"custom_id":"a"}\n{"custom_id":"b"}\n');
    await client.files.delete(output.id);
  });

  it('list envelope: first_id / last_id, before= for the newer page, null ids when empty, not after and before together', async () => {
    const { key } = await newAccount('0');
    const get = async (q: string) => {
      const res = await fetch(`${api.base}/api/v1/files${q}`, { headers: { authorization: `Bearer ${key}` } });
      return { status: res.status, body: (await res.json()) as any };
    };
    assert.deepEqual((await get('')).body, {
      object: 'list',
      data: [],
      first_id: null,
      last_id: null,
      has_more: false,
    });
    const ids = [];
    for (let i = 0; i < 5; i++)
      ids.push(
        (
          await upload(
            api,
            key,
            form([
              ['purpose', 'batch'],
              ['file', new Blob(['{}']), 'a.jsonl'],
            ]),
          )
        ).body.id,
      );
    const newest = (await get('?limit=2')).body;
    assert.equal(newest.first_id, ids[4]);
    assert.equal(newest.last_id, ids[3]);
    const older = (await get(`?limit=2&after=${newest.last_id}`)).body;
    assert.deepEqual(
      older.data.map((f: any) => f.id),
      [ids[2], ids[1]],
    );
    assert.equal(older.has_more, true);
    const newer = (await get(`?limit=2&before=${older.first_id}`)).body;
    assert.deepEqual(
      newer.data.map((f: any) => f.id),
      [ids[4], ids[3]],
    );
    assert.equal(newer.has_more, false);
    const both = await get(`?after=${ids[1]}&before=${ids[3]}`);
    assert.equal(both.status, 400);
    assert.equal(both.body.error.param, 'before');
    assert.equal((await get('?limit=0')).status, 400);
  });

  it('streams a large upload into the database while it arrives, and streams it back', async () => {
    const { key, accountId } = await newAccount('0');
    // random text: PostgreSQL compresses what it can, and the size of what it stored is the measure here
    const piece = Buffer.from(randomBytes(48 * 1024).toString('base64'));
    const total = 48 * 1024 * 1024;
    const pieces = total / piece.length;
    const size = async () =>
      Number((await db().pool.query(`SELECT pg_total_relation_size('file_chunks') AS n`)).rows[0].n);
    const sizeBefore = await size();
    // memory still held, after a full collection (what an API that buffered the upload would keep)
    const gc = runInNewContext('gc') as () => void;
    const retained = async () => {
      // twice, a turn apart: buffers' backing stores are freed by the collection after the one that finds them dead
      gc();
      await new Promise((r) => setImmediate(r));
      gc();
      const m = process.memoryUsage();
      return m.heapUsed + m.arrayBuffers;
    };
    const base = await retained();
    let halfwayStored = 0;
    let halfwayRetained = 0;
    const boundary = 'xyzBOUNDARYxyz';
    let i = -1;
    // pulled as the connection takes it: the test itself never holds more than a piece
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        i++;
        if (i === 0) {
          controller.enqueue(
            Buffer.from(
              `--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n` +
                `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.jsonl"\r\n` +
                'Content-Type: application/octet-stream\r\n\r\n',
            ),
          );
        } else if (i <= pieces) {
          controller.enqueue(piece);
          if (i === pieces / 2) {
            // half sent: the bytes must reach the database before the upload ends (not buffered in the API)
            const until = Date.now() + 20_000;
            for (;;) {
              halfwayStored = (await size()) - sizeBefore;
              if (halfwayStored >= total / 4 || Date.now() > until) break;
              await new Promise((r) => setTimeout(r, 50));
            }
            halfwayRetained = (await retained()) - base;
            console.log(`      halfway: ${halfwayStored} bytes stored, ${halfwayRetained} bytes more held`);
          }
        } else {
          controller.enqueue(Buffer.from(`\r\n--${boundary}--\r\n`));
          controller.close();
        }
      },
    });
    const res = await fetch(`${api.base}/v1/files`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': `multipart/form-data; boundary=${boundary}` },
      body,
      duplex: 'half',
    } as RequestInit);
    const file = (await res.json()) as any;
    assert.equal(res.status, 200, JSON.stringify(file));
    assert.equal(file.bytes, total);
    assert.ok(halfwayStored >= total / 4, `only ${halfwayStored} bytes reached the database by halfway`);
    // 24 MiB sent by then: the API (this same process) holds a few chunks of it, not the upload
    assert.ok(halfwayRetained < 8 * 1024 * 1024, `${halfwayRetained} bytes more memory held halfway through`);
    const chunks = await db().pool.query(
      `SELECT count(*)::int AS n, max(length(data))::int AS biggest FROM file_chunks WHERE file_id = $1`,
      [file.id],
    );
    assert.equal(chunks.rows[0].n, total / (256 * 1024));
    assert.equal(chunks.rows[0].biggest, 256 * 1024);

    const download = await fetch(`${api.base}/v1/files/${file.id}/content`, {
      headers: { authorization: `Bearer ${key}` },
    });
    assert.equal(download.headers.get('content-length'), String(total));
    let got = 0;
    let same = true;
    for await (const c of download.body as unknown as AsyncIterable<Uint8Array>) {
      for (let i = 0; i < c.length; i += 4099) same &&= c[i] === piece[(got + i) % piece.length];
      got += c.length;
    }
    assert.equal(got, total);
    assert.ok(same, 'downloaded bytes differ from the upload');
    assert.equal(await filesOf(accountId), 1);
  });

  it('an upload the client abandons midway leaves nothing, and frees its connection', async () => {
    const { key, accountId } = await newAccount('0');
    const { port } = new URL(api.base);
    const boundary = 'b0undary';
    const socket = connect(Number(port), '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    socket.write(
      `POST /v1/files HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n` +
        `Content-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: 50000000\r\n\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="cut.jsonl"\r\n\r\n`,
    );
    for (let i = 0; i < 20; i++) socket.write(Buffer.alloc(100_000, 'x'));
    // wait until the upload is writing chunks (its transaction is open), then vanish
    const until = Date.now() + 10_000;
    while (Date.now() < until) {
      const r = await db().pool.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'`,
      );
      if (r.rows[0].n > 0) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    socket.destroy();
    const settle = Date.now() + 10_000;
    let open = 1;
    while (Date.now() < settle) {
      const r = await db().pool.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'`,
      );
      open = r.rows[0].n;
      if (open === 0) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(open, 0, 'the aborted upload still holds a transaction open');
    assert.equal(await filesOf(accountId), 0);
    const orphans = await db().pool.query(
      `SELECT count(*)::int AS n FROM file_chunks c LEFT JOIN files f ON f.id = c.file_id WHERE f.id IS NULL`,
    );
    assert.equal(orphans.rows[0].n, 0);
    // and the next upload goes through
    const ok = await upload(
      api,
      key,
      form([
        ['purpose', 'batch'],
        ['file', new Blob(['{"a":1}\n']), 'ok.jsonl'],
      ]),
    );
    assert.equal(ok.status, 200);
  });

  it('an upload that stops sending is dropped with 408 after the idle timeout, leaving nothing', async () => {
    const { key, accountId } = await newAccount('0');
    const saved = config.fileUploadIdleTimeoutMs;
    config.fileUploadIdleTimeoutMs = 500;
    const { port } = new URL(api.base);
    const socket = connect(Number(port), '127.0.0.1');
    try {
      await new Promise((r) => socket.once('connect', r));
      let answer = '';
      socket.on('data', (d) => {
        answer += d.toString('latin1');
      });
      const started = Date.now();
      socket.write(
        `POST /v1/files HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n` +
          'Content-Type: multipart/form-data; boundary=bb\r\nContent-Length: 1000000\r\n\r\n' +
          '--bb\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n' +
          `--bb\r\nContent-Disposition: form-data; name="file"; filename="stall.jsonl"\r\n\r\n${'x'.repeat(300_000)}`,
      );
      while (!answer.includes('\r\n\r\n') && Date.now() - started < 10_000) await new Promise((r) => setTimeout(r, 50));
      assert.match(answer, /^HTTP\/1\.1 408 /);
      assert.match(answer, /upload_timeout/);
      assert.ok(Date.now() - started >= 500);
    } finally {
      socket.destroy();
      config.fileUploadIdleTimeoutMs = saved;
    }
    const open = await db().pool.query(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'`,
    );
    assert.equal(open.rows[0].n, 0);
    assert.equal(await filesOf(accountId), 0);
  });

  it('refuses malformed uploads with a 400 that says what to send, storing nothing', async () => {
    const { key, accountId } = await newAccount('0');
    const blob = new Blob(['{"custom_id":"a"}\n']);
    const cases: Array<[string, FormData | string, string, string | null]> = [
      ['no file', form([['purpose', 'batch']]), 'missing_required_parameter', 'file'],
      ['no purpose', form([['file', blob, 'a.jsonl']]), 'missing_required_parameter', 'purpose'],
      [
        'wrong purpose first',
        form([
          ['purpose', 'fine-tune'],
          ['file', blob, 'a.jsonl'],
        ]),
        'invalid_parameter_value',
        'purpose',
      ],
      [
        'wrong purpose after the file',
        form([
          ['file', blob, 'a.jsonl'],
          ['purpose', 'assistants'],
        ]),
        'invalid_parameter_value',
        'purpose',
      ],
      [
        'an unknown field after the file',
        form([
          ['purpose', 'batch'],
          ['file', blob, 'a.jsonl'],
          ['x', '1'],
        ]),
        'invalid_parameter_value',
        'x',
      ],
      [
        'purpose twice',
        form([
          ['purpose', 'batch'],
          ['purpose', 'batch'],
          ['file', blob, 'a.jsonl'],
        ]),
        'invalid_parameter_value',
        'purpose',
      ],
      [
        'two files',
        form([
          ['purpose', 'batch'],
          ['file', blob, 'a.jsonl'],
          ['file', blob, 'b.jsonl'],
        ]),
        'invalid_parameter_value',
        'file',
      ],
      [
        'the file in another field',
        form([
          ['purpose', 'batch'],
          ['upload', blob, 'a.jsonl'],
        ]),
        'invalid_parameter_value',
        'upload',
      ],
    ];
    for (const [what, body, code, param] of cases) {
      const r = await upload(api, key, body as FormData);
      assert.equal(r.status, 400, `${what}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.error.code, code, what);
      assert.equal(r.body.error.param, param, what);
      assert.equal(r.body.error.type, 'invalid_request_error', what);
      assert.match(r.body.error.message, /purpose|file|field/i, what);
    }
    const raw = async (contentType: string, body: string) => {
      const res = await fetch(`${api.base}/api/v1/files`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': contentType },
        body,
      });
      return { status: res.status, body: (await res.json()) as any };
    };
    const json = await raw('application/json', '{"purpose":"batch"}');
    assert.equal(json.status, 400);
    assert.equal(json.body.error.code, 'invalid_content_type');
    assert.equal((await raw('multipart/form-data', '--x\r\n')).status, 400);
    const truncated = await raw(
      'multipart/form-data; boundary=zz',
      '--zz\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n--zz\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\n{"a":1}',
    );
    assert.equal(truncated.status, 400, JSON.stringify(truncated.body));
    assert.equal(await filesOf(accountId), 0);
  });

  it('past the concurrent-upload cap answers 503 with Retry-After; a compressed upload 415', async () => {
    const { key, accountId } = await newAccount('0');
    const saved = config.fileUploadsMaxConcurrent;
    config.fileUploadsMaxConcurrent = 1;
    const { port } = new URL(api.base);
    const socket = connect(Number(port), '127.0.0.1');
    try {
      await new Promise((r) => socket.once('connect', r));
      // one upload in progress, its body still coming
      socket.write(
        `POST /v1/files HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n` +
          'Content-Type: multipart/form-data; boundary=bb\r\nContent-Length: 1000000\r\n\r\n' +
          '--bb\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n' +
          '--bb\r\nContent-Disposition: form-data; name="file"; filename="slow.jsonl"\r\n\r\n{"a":1}\n',
      );
      await new Promise((r) => setTimeout(r, 300));
      const busy = await upload(
        api,
        key,
        form([
          ['purpose', 'batch'],
          ['file', new Blob(['{}']), 'a.jsonl'],
        ]),
      );
      assert.equal(busy.status, 503);
      assert.equal(busy.body.error.code, 'too_many_uploads');
      assert.equal(busy.headers.get('retry-after'), '1');
    } finally {
      socket.destroy();
      config.fileUploadsMaxConcurrent = saved;
    }
    const gz = await fetch(`${api.base}/v1/files`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'multipart/form-data; boundary=x',
        'content-encoding': 'gzip',
      },
      body: gzipSync('--x--\r\n'),
    });
    assert.equal(gz.status, 415);
    assert.equal(((await gz.json()) as any).error.code, 'unsupported_content_encoding');
    // the abandoned slow upload left nothing either, and its slot is free again
    const until = Date.now() + 5000;
    let ok = 0;
    while (Date.now() < until && ok !== 200) {
      ok = (
        await upload(
          api,
          key,
          form([
            ['purpose', 'batch'],
            ['file', new Blob(['{}']), 'a.jsonl'],
          ]),
        )
      ).status;
      if (ok !== 200) await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(ok, 200);
    assert.equal(await filesOf(accountId), 1);
  });

  it('refuses a file over the upload limit with 413, storing nothing', async () => {
    const { key, accountId } = await newAccount('0');
    const saved = config.fileUploadMaxBytes;
    config.fileUploadMaxBytes = 1000;
    try {
      const r = await upload(
        api,
        key,
        form([
          ['purpose', 'batch'],
          ['file', new Blob([Buffer.alloc(5000, 'a')]), 'big.jsonl'],
        ]),
      );
      assert.equal(r.status, 413);
      assert.equal(r.body.error.code, 'file_too_large');
      assert.match(r.body.error.message, /1000 bytes/);
      const fits = await upload(
        api,
        key,
        form([
          ['purpose', 'batch'],
          ['file', new Blob([Buffer.alloc(1000, 'a')]), 'ok.jsonl'],
        ]),
      );
      assert.equal(fits.status, 200);
    } finally {
      config.fileUploadMaxBytes = saved;
    }
    assert.equal(await filesOf(accountId), 1);
  });

  it("other accounts' files are not found; a held file cannot be deleted until released", async () => {
    const mine = await newAccount('0');
    const theirs = await newAccount('0');
    const created = await upload(
      api,
      mine.key,
      form([
        ['purpose', 'batch'],
        ['file', new Blob(['{}\n']), 'a.jsonl'],
      ]),
    );
    const id = created.body.id as string;
    const as = (key: string, method: string, path: string) =>
      fetch(`${api.base}/v1/files${path}`, { method, headers: { authorization: `Bearer ${key}` } });
    for (const [method, path] of [
      ['GET', `/${id}`],
      ['GET', `/${id}/content`],
      ['DELETE', `/${id}`],
    ] as const) {
      const r = await as(theirs.key, method, path);
      assert.equal(r.status, 404, `${method} ${path}`);
      assert.equal(((await r.json()) as any).error.type, 'not_found_error');
    }
    assert.equal(((await (await as(theirs.key, 'GET', '')).json()) as any).data.length, 0);
    assert.equal((await as(mine.key, 'GET', '/file_nonsense')).status, 404);

    await holdFile(id, mine.accountId, 'batch_test_1');
    const inUse = await as(mine.key, 'DELETE', `/${id}`);
    assert.equal(inUse.status, 409);
    assert.equal(inUse.headers.get('x-should-retry'), 'false');
    const err = ((await inUse.json()) as any).error;
    assert.equal(err.code, 'file_in_use');
    assert.match(err.message, /batch_test_1/);
    await releaseFileHolds('batch_test_1');
    assert.equal((await as(mine.key, 'DELETE', `/${id}`)).status, 200);
    assert.equal((await as(mine.key, 'GET', `/${id}`)).status, 404);
  });
});
