// biome-ignore-all lint/suspicious/noExplicitAny: wire JSON, read field by field
// What a hostile caller sends before any work is done: NUL characters (which PostgreSQL cannot
// store) in JSON bodies, path ids and query strings, and JSON nested deeper than the limit. Each
// is refused with 400 in the envelope of the route that was called, and nothing is spent, held,
// stored or sent upstream.
import assert from 'node:assert/strict';
import net from 'node:net';
import { useChatBench } from './support/chatEnv.js';
import { db } from '../activities/db.js';
import { config } from '../activities/config.js';
import { settledBalances } from './support/books.js';
import { flushRequestRecords } from '../activities/metering/records.js';

const MODEL = 'openai/gpt-4o-mini';
type Envelope = 'openai' | 'message' | 'legacy';

/** The route's own envelope, status 400. */
function assertRefused(res: Response, body: any, envelope: Envelope, what: string) {
  assert.equal(res.status, 400, `${what}: ${res.status} ${JSON.stringify(body)}`);
  if (envelope === 'openai') {
    assert.equal(body.error?.type, 'invalid_request_error', `${what}: ${JSON.stringify(body)}`);
    assert.equal(typeof body.error.message, 'string');
  } else if (envelope === 'message') {
    assert.equal(body.type, 'error', `${what}: ${JSON.stringify(body)}`);
    assert.equal(body.error?.type, 'invalid_request_error');
  } else {
    assert.equal(body.status, 400, `${what}: ${JSON.stringify(body)}`);
    assert.equal(typeof body.error, 'string');
    assert.equal(body.message, body.error);
  }
}

/** What an account has been charged, held, stored or started since it was funded. */
async function footprint(accountId: string) {
  // an earlier request's record may still be queued (they are written in batches): count it now, not later
  await flushRequestRecords();
  const count = async (table: string) =>
    Number(
      (await db().pool.query(`SELECT count(*)::int AS n FROM ${table} WHERE account_id = $1`, [accountId])).rows[0].n,
    );
  const usd = (await settledBalances(accountId)).USD;
  await flushRequestRecords(); // written in batches, a moment after each request
  return {
    amount: usd.amount,
    held: usd.held,
    entries: await count('ledger_entries'),
    holds: await count('balance_holds'),
    records: await count('request_records'),
    responses: await count('stored_responses'),
    jobs: await count('media_jobs'),
  };
}

describe('hostile caller input', function () {
  this.timeout(60_000);
  const bench = useChatBench();
  let key: string;
  let accountId: string;
  before(async () => ({ key, accountId } = await bench().account('5')));

  const send = async (method: string, path: string, body?: string) => {
    const res = await fetch(`${bench().base}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body,
    });
    const text = await res.text();
    let parsed: any;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = text;
    }
    return { res, body: parsed };
  };

  /** Every case is refused in its envelope, and the account and upstreams saw nothing. */
  async function assertAllRefused(cases: Array<[string, string, Envelope, string?]>) {
    const before = await footprint(accountId);
    for (const [method, path, envelope, body] of cases) {
      const { res, body: answer } = await send(method, path, body);
      assertRefused(res, answer, envelope, `${method} ${path} ${body?.slice(0, 80) ?? ''}`);
    }
    assert.deepEqual(await footprint(accountId), before, 'nothing charged, held or stored');
    assert.equal(bench().openai.requests.length, 0, 'nothing sent upstream');
    assert.equal(bench().openrouter.requests.length, 0, 'nothing sent upstream');
  }

  describe('NUL characters', () => {
    const chat = (content: string) => JSON.stringify({ model: MODEL, messages: [{ role: 'user', content }] });
    const responses = (extra: object) => JSON.stringify({ model: MODEL, input: 'hi', ...extra });

    it('in JSON body strings (values and keys) are refused with 400 on every surface', async () => {
      await assertAllRefused([
        ['POST', '/api/v1/responses', 'openai', responses({ input: 'a\0b' })],
        ['POST', '/v1/responses', 'openai', responses({ instructions: 'be\0brief' })],
        ['POST', '/api/v1/responses', 'openai', responses({ metadata: { tag: '\0' } })],
        ['POST', '/api/v1/responses', 'openai', responses({ metadata: { 'ta\0g': 'x' } })],
        ['POST', '/api/v1/responses', 'openai', responses({ previous_response_id: 'resp_\0' })],
        ['POST', '/api/v1/chat/completions', 'openai', chat('hello\0')],
        ['POST', '/v1/chat/completions', 'openai', JSON.stringify({ model: `${MODEL}\0`, messages: [] })],
        ['POST', '/api/v1/completions', 'openai', JSON.stringify({ model: MODEL, prompt: '\0' })],
        [
          'POST',
          '/v1/messages',
          'message',
          JSON.stringify({ model: MODEL, max_tokens: 5, messages: [{ role: 'user', content: 'a\0' }] }),
        ],
        ['POST', '/api/talk-to-gpt', 'legacy', JSON.stringify({ model: MODEL, prompt: 'x\0', messages: [] })],
        ['POST', '/api/tts', 'legacy', JSON.stringify({ model: 'local/espeak', text: `${'long '.repeat(600)}\0` })],
        ['POST', '/api/v1/audio/speech', 'openai', JSON.stringify({ model: 'local/espeak', input: 'a\0', voice: 'x' })],
        ['POST', '/api/generate-video', 'legacy', JSON.stringify({ model: 'kling-2.1-master', prompt: 'cat\0' })],
        ['POST', '/api/generate-video/cancel', 'legacy', JSON.stringify({ runId: 'vid_\0' })],
        ['POST', '/api/generate-video/extend', 'legacy', JSON.stringify({ runId: 'vid_\0', prompt: 'more' })],
        ['POST', '/api/check-balance', 'legacy', JSON.stringify({ '\0': 1 })],
      ]);
    });

    it('in bodies sent as text or form data (read as JSON too) are refused alike', async () => {
      const before = await footprint(accountId);
      for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/vnd.api+json']) {
        const res = await fetch(`${bench().base}/api/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': type },
          body: chat('a\0'),
        });
        assertRefused(res, await res.json(), 'openai', type);
      }
      assert.deepEqual(await footprint(accountId), before);
      assert.equal(bench().openai.requests.length, 0);
    });

    it('names the parameter that holds one', async () => {
      const { body } = await send('POST', '/api/v1/responses', responses({ metadata: { tag: 'a\0' } }));
      assert.equal(body.error.code, 'invalid_parameter_value');
      assert.equal(body.error.param, 'metadata.tag');
      assert.match(body.error.message, /NUL/);
    });

    it('in path ids and query strings are refused with 400 on every route that reads them', async () => {
      await assertAllRefused([
        ['GET', '/api/v1/responses/resp_%00', 'openai'],
        ['GET', '/v1/responses/%00', 'openai'],
        ['DELETE', '/api/v1/responses/resp_%00abc', 'openai'],
        ['POST', '/api/v1/responses/resp_%00/cancel', 'openai'],
        ['GET', '/api/tts/status?runId=%00', 'legacy'],
        ['GET', '/api/tts/status?runId=tts_1&model=%00', 'legacy'],
        ['GET', '/api/video/status?requestId=vid_%00', 'legacy'],
        ['GET', '/api/generate-video/status?runId=vid_%00', 'legacy'],
        ['GET', '/api/generate-video/recover?runId=vid_%00', 'legacy'],
        ['GET', '/api/generate-video/content?runId=vid_%00', 'legacy'],
        ['GET', '/api/media/%00?expires=1&signature=x', 'legacy'],
        ['GET', '/api/v1/models?detailed%00=1', 'openai'],
        ['GET', '/api/models/openai%00/providers', 'openai'],
        ['GET', '/api/v1/audio/voices?model=%00', 'openai'],
      ]);
    });

    it('names the query or path parameter that holds one', async () => {
      const { body } = await send('GET', '/api/video/status?requestId=vid_%00');
      assert.equal(body.code, 'invalid_parameter_value');
      assert.match(body.message, /'requestId'.*NUL/);
      const { body: id } = await send('GET', '/api/v1/responses/resp_%00');
      assert.equal(id.error.param, 'id');
    });

    it('spelled out as text (an escaped backslash before u0000) is an ordinary string', async () => {
      const { res, body } = await send('POST', '/api/v1/chat/completions', chat('a\\u0000b'));
      assert.equal(res.status, 200, JSON.stringify(body));
      assert.equal(bench().openai.requests[0].body.messages[0].content, 'a\\u0000b');
    });
  });

  describe('deep JSON', () => {
    /** `{"a":{"a":…{}}}`: `levels` nested objects. */
    const nested = (levels: number) => `${'{"a":'.repeat(levels - 1)}{}${'}'.repeat(levels - 1)}`;
    /** A chat body whose deepest point is `depth` levels down (the body itself is level 1). */
    const chatAt = (depth: number) =>
      `{"model":"${MODEL}","messages":[{"role":"user","content":"hi"}],` +
      `"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":${nested(depth - 3)}}}}`;

    it('is refused with 400 past the limit (64 levels), before any work, at any depth', async () => {
      const deepSchema = `${'{"type":"object","properties":{"a":'.repeat(5000)}{}${'}}'.repeat(5000)}`;
      await assertAllRefused([
        ['POST', '/api/v1/chat/completions', 'openai', chatAt(65)],
        ['POST', '/api/v1/chat/completions', 'openai', chatAt(10_000)],
        ['POST', '/api/v1/responses', 'openai', `{"model":"${MODEL}","input":"hi","metadata":${nested(10_000)}}`],
        [
          'POST',
          '/v1/messages',
          'message',
          `{"model":"${MODEL}","max_tokens":5,"messages":[{"role":"user","content":"hi"}],` +
            `"output_config":{"format":{"type":"json_schema","schema":${deepSchema}}}}`,
        ],
        ['POST', '/api/talk-to-gpt', 'legacy', `${'['.repeat(100_000)}${']'.repeat(100_000)}`],
        ['POST', '/api/generate-video', 'legacy', `{"model":"kling-2.1-master","prompt":${nested(200)}}`],
      ]);
      const { body } = await send('POST', '/api/v1/chat/completions', chatAt(65));
      assert.equal(body.error.code, 'invalid_json');
      assert.match(body.error.message, /nested more than 64 levels/);
    });

    it('is accepted up to the limit, and brackets inside strings do not count', async () => {
      const { res, body } = await send('POST', '/api/v1/chat/completions', chatAt(64));
      assert.equal(res.status, 200, JSON.stringify(body));
      // strings: one ending in an escaped backslash, one of brackets, one with an escaped quote
      const contents = ['x\\', '[{'.repeat(500), `a\\"${'[{'.repeat(500)}`];
      const text = await send(
        'POST',
        '/api/v1/chat/completions',
        JSON.stringify({ model: MODEL, messages: contents.map((content) => ({ role: 'user', content })) }),
      );
      assert.equal(text.res.status, 200, JSON.stringify(text.body));
      assert.deepEqual(
        bench().openai.requests[1].body.messages.map((m: any) => m.content),
        contents,
      );
    });
  });

  describe('JSON that parses into millions of values', () => {
    // 10 MB of `{},` parse into 3.3 million objects (over 400 MB); the count is limited before parsing
    const many = (n: number, item: string) => Array(n).fill(item).join(',');

    it('is refused with 400 past the limit (250,000 values), before it is parsed', async () => {
      const message = '{"role":"user","content":"a"}';
      await assertAllRefused([
        ['POST', '/api/v1/chat/completions', 'openai', `{"model":"${MODEL}","messages":[${many(90_000, message)}]}`],
        ['POST', '/v1/messages', 'message', `{"model":"${MODEL}","max_tokens":5,"messages":[${many(260_000, '{}')}]}`],
        ['POST', '/api/talk-to-gpt', 'legacy', `{"model":"${MODEL}","prompt":"hi","pad":[${many(260_000, '0')}]}`],
        ['POST', '/api/v1/responses', 'openai', `{"model":"${MODEL}","input":"hi","metadata":{${keys(260_000)}}}`],
      ]);
      const { body } = await send('POST', '/api/v1/chat/completions', `{"pad":[${many(260_000, '[]')}]}`);
      assert.equal(body.error.code, 'invalid_json');
      assert.match(body.error.message, /more than 250000 values/);
    });

    it('counts no commas or brackets inside strings', async () => {
      const csv = `${','.repeat(260_000)}[{"a":1}]`;
      const { res, body } = await send(
        'POST',
        '/api/v1/chat/completions',
        JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: csv }] }),
      );
      assert.equal(res.status, 200, JSON.stringify(body).slice(0, 300));
      assert.equal(bench().openai.requests[0].body.messages[0].content, csv);
    });

    function keys(n: number): string {
      return Array.from({ length: n }, (_, i) => `"k${i}":0`).join(',');
    }
  });

  describe('bodies over the size limit', () => {
    /**
     * Writes a body of `total` bytes on a raw connection (chunked, or with its Content-Length), on
     * and on whatever the answer, as a hostile client would: when the answer came, and how much
     * was sent before the gateway closed the connection (all of it, if it never did).
     */
    function upload(total: number, chunked: boolean) {
      return new Promise<{ status: number; answeredAt: number; sent: number; all: boolean }>((resolve) => {
        const socket = net.connect(Number(new URL(bench().base).port), '127.0.0.1');
        let sent = 0;
        let all = false;
        let answer = '';
        let answeredAt = -1;
        socket.on('data', (d) => {
          if (answeredAt < 0) answeredAt = sent;
          answer += d;
        });
        socket.on('error', () => undefined);
        socket.on('close', () => resolve({ status: Number(answer.split(' ')[1]), answeredAt, sent, all }));
        socket.write(
          `POST /api/v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n` +
            `Content-Type: application/json\r\n${chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${total}`}\r\n\r\n`,
        );
        const piece = Buffer.alloc(65536, 'x');
        const frame = chunked ? Buffer.concat([Buffer.from('10000\r\n'), piece, Buffer.from('\r\n')]) : piece;
        const write = () => {
          while (sent < total && !socket.destroyed) {
            sent += piece.length;
            if (!socket.write(frame)) return void socket.once('drain', write);
          }
          if (socket.destroyed) return;
          all = true;
          socket.end(chunked ? '0\r\n\r\n' : '');
        };
        write();
      });
    }

    it('are refused with 413 once the limit is passed, and the rest is not read for nothing', async () => {
      const limit = config.bodyLimitBytes;
      const before = await footprint(accountId);
      for (const chunked of [true, false]) {
        const r = await upload(6 * limit, chunked);
        assert.equal(r.status, 413, JSON.stringify(r));
        // answered once the limit was passed (what was sent meanwhile sat in socket buffers)
        assert.ok(r.answeredAt < 3 * limit, `answered after ${r.answeredAt} bytes`);
        assert.ok(!r.all && r.sent < 4 * limit, `the gateway read ${r.sent} bytes of ${6 * limit}`);
      }
      assert.deepEqual(await footprint(accountId), before);
    });
  });

  describe("what Node's HTTP layer refuses before the app sees it", () => {
    /** Send `raw` on a fresh connection; the whole answer, parsed. */
    function send(raw: string) {
      return new Promise<{ status: number; headers: Record<string, string>; body: any }>((resolve, reject) => {
        const socket = net.connect(Number(new URL(bench().base).port), '127.0.0.1');
        let answer = '';
        socket.on('data', (d) => (answer += d));
        socket.on('error', () => undefined);
        socket.on('close', () => {
          const [head, ...rest] = answer.split('\r\n\r\n');
          const [statusLine, ...lines] = head.split('\r\n');
          const headers = Object.fromEntries(
            lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
          );
          try {
            resolve({ status: Number(statusLine.split(' ')[1]), headers, body: JSON.parse(rest.join('\r\n\r\n')) });
          } catch (err) {
            reject(new Error(`not a JSON answer: ${JSON.stringify(answer)} (${err})`));
          }
        });
        socket.end(raw);
      });
    }

    for (const [what, raw, status, code] of [
      ['a malformed request line', 'GET /v1/models HTTP/9.Z\r\nHost: x\r\n\r\n', 400, 'malformed_request'],
      [
        'a header without a colon',
        'GET /v1/models HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n',
        400,
        'malformed_request',
      ],
      [
        'headers past the size limit',
        `GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
        431,
        'request_header_fields_too_large',
      ],
    ] as Array<[string, string, number, string]>) {
      it(`${what}: ${status} in the JSON envelope, with a request id`, async () => {
        const r = await send(raw);
        assert.equal(r.status, status);
        assert.match(r.headers['content-type'], /^application\/json/);
        assert.match(r.headers['x-request-id'], /^req_[0-9a-f]{32}$/);
        assert.equal(r.body.error.code, code);
        assert.equal(r.body.error.type, 'invalid_request_error');
        assert.equal(typeof r.body.error.message, 'string');
      });
    }
  });
});
