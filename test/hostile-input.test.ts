// biome-ignore-all lint/suspicious/noExplicitAny: wire JSON, read field by field
// What a hostile caller sends before any work is done: NUL characters (which PostgreSQL cannot
// store) in JSON bodies, path ids and query strings, and JSON nested deeper than the limit. Each
// is refused with 400 in the envelope of the route that was called, and nothing is spent, held,
// stored or sent upstream.
import assert from 'node:assert/strict';
import { useChatBench } from './support/chatEnv.js';
import { db } from '../activities/db.js';
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
});
