import assert from 'node:assert/strict';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { startApi } from './support/api.js';
import { config } from '../activities/config.js';

describe('API basics', () => {
  let api: Awaited<ReturnType<typeof startApi>>;
  before(async () => (api = await startApi()));
  after(() => api.close());

  it('puts a fresh X-Request-ID on every response', async () => {
    const a = await fetch(`${api.base}/health`);
    const b = await fetch(`${api.base}/nope`);
    assert.match(a.headers.get('x-request-id')!, /^req_[0-9a-f]{32}$/);
    assert.notEqual(a.headers.get('x-request-id'), b.headers.get('x-request-id'));
  });

  it('answers unknown routes with a 404 in the OpenAI envelope', async () => {
    const res = await fetch(`${api.base}/api/v1/unknown`);
    assert.equal(res.status, 404);
    const body = await res.json();
    assert.equal(body.error.type, 'not_found_error');
    assert.equal(body.error.code, 'not_found');
  });

  it('answers a known route with the wrong method with a 405 naming the allowed ones', async () => {
    const res = await fetch(`${api.base}/api/v1/chat/completions`);
    assert.equal(res.status, 405);
    assert.match(res.headers.get('allow') ?? '', /POST/);
    assert.equal((await res.json()).error.code, 'method_not_allowed');
    // routes of surfaces mounted later still answer (one router holds them all)
    assert.equal((await fetch(`${api.base}/api/v1/models`, { method: 'DELETE' })).status, 405);
    assert.equal((await fetch(`${api.base}/api/v1/models`)).status, 200);
  });

  it("answers 405 and 501 in the envelope of the path's own surface", async () => {
    const ask = async (method: string, path: string) => {
      const res = await fetch(`${api.base}${path}`, { method });
      return { status: res.status, allow: res.headers.get('allow'), body: await res.json() };
    };
    for (const [method, path] of [
      ['PUT', '/api/tts'],
      ['DELETE', '/api/generate-video'],
      ['POST', '/api/video/status'],
      ['PROPFIND', '/api/tts'],
    ]) {
      const r = await ask(method!, path!);
      assert.equal(r.status, method === 'PROPFIND' ? 501 : 405, `${method} ${path}`);
      assert.deepEqual(Object.keys(r.body).sort(), ['code', 'error', 'message', 'status'], `${method} ${path}`);
      assert.equal(r.body.status, r.status);
      assert.match(r.allow ?? '', /POST|GET/);
    }
    for (const [method, path] of [
      ['GET', '/v1/messages'],
      ['PATCH', '/api/v1/messages/count_tokens'],
      ['PROPFIND', '/v1/messages'],
    ]) {
      const r = await ask(method!, path!);
      assert.equal(r.status, method === 'PROPFIND' ? 501 : 405, `${method} ${path}`);
      assert.equal(r.body.type, 'error', `${method} ${path}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.error.type, method === 'PROPFIND' ? 'api_error' : 'invalid_request_error');
    }
    const openai = await ask('PUT', '/v1/responses/resp_1');
    assert.equal(openai.status, 405);
    assert.equal(openai.body.error.code, 'method_not_allowed');
  });

  describe('bad bodies', () => {
    const post = (body: BodyInit, headers: Record<string, string> = { 'content-type': 'application/json' }) =>
      fetch(`${api.base}/api/check-balance`, { method: 'POST', body, headers });

    it('malformed JSON is a 400 invalid_json, never a 500', async () => {
      for (const body of ['{"model":', '{model: 1}', '\u0000\u0001', '[1,2', '{"a":1}}']) {
        const res = await post(body);
        assert.equal(res.status, 400, body);
        const json = await res.json();
        assert.equal(json.code, 'invalid_json');
        assert.match(json.message, /not valid JSON/);
      }
    });

    it('oversize bodies are a 413, also when they only grow large after decompression', async () => {
      const big = JSON.stringify({ pad: 'x'.repeat(config.bodyLimitBytes + 10) });
      const res = await post(big);
      assert.equal(res.status, 413);
      assert.equal((await res.json()).code, 'request_too_large');
      const bomb = gzipSync(Buffer.from(big));
      assert.ok(bomb.length < config.bodyLimitBytes / 100);
      const res2 = await post(bomb, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
      assert.equal(res2.status, 413);
    });

    it('reads gzip, deflate and br bodies, and answers a corrupt one with a 400', async () => {
      const body = Buffer.from(JSON.stringify({ hello: 'world' }));
      for (const [encoding, data] of [
        ['gzip', gzipSync(body)],
        ['deflate', deflateSync(body)],
        ['br', brotliCompressSync(body)],
      ] as const) {
        const res = await post(data, { 'content-type': 'application/json', 'content-encoding': encoding });
        // the body parsed; the route then asks for a key
        assert.equal(res.status, 401, encoding);
      }
      const corrupt = await post(Buffer.from('not gzip at all'), {
        'content-type': 'application/json',
        'content-encoding': 'gzip',
      });
      assert.equal(corrupt.status, 400);
      const json = await corrupt.json();
      assert.equal(json.code, 'invalid_body');
      assert.match(json.message, /could not be decompressed as gzip/);
    });

    it('a body that is JSON but not an object is a 400', async () => {
      for (const body of ['"text"', '42', 'null']) {
        const res = await post(body);
        assert.equal(res.status, 400, body);
        assert.equal((await res.json()).code, 'invalid_json');
      }
    });

    it('a lone UTF-16 surrogate anywhere in a body (value or key, however deep) is a 400 naming where', async () => {
      // the body is read before the key is asked for; chat speaks the envelope that names the parameter
      const chat = (body: string) =>
        fetch(`${api.base}/api/v1/chat/completions`, {
          method: 'POST',
          body,
          headers: { 'content-type': 'application/json' },
        });
      const deep = `${'{"a":'.repeat(50)}"\\ud800"${'}'.repeat(50)}`;
      for (const [body, param] of [
        ['{"model":"a\\ud800"}', 'model'],
        ['{"messages":[{"content":"x\\udfffy"}]}', 'messages[0].content'],
        ['{"meta":{"\\ud83d":1}}', 'meta.\ud83d'],
        ['{"tail":"\\ud83d"}', 'tail'],
        [deep, `${'a.'.repeat(49)}a`],
      ] as const) {
        const res = await chat(body);
        assert.equal(res.status, 400, body.slice(0, 60));
        const { error } = await res.json();
        assert.equal(error.code, 'invalid_parameter_value');
        assert.equal(error.param, param);
        assert.match(error.message, /lone UTF-16 surrogate/);
      }
      // a whole pair, an escaped backslash before "ud800", and raw non-ASCII text are fine (the route then asks for a key)
      for (const body of ['{"a":"\\ud83d\\ude00"}', '{"a":"\\\\ud800"}', '{"a":"😀 é"}'])
        assert.equal((await chat(body)).status, 401, body);
    });

    it('an unknown Content-Encoding is a 415 with a clear message', async () => {
      const res = await post('{}', { 'content-type': 'application/json', 'content-encoding': 'zstd-nope' });
      assert.equal(res.status, 415);
    });
  });
});
