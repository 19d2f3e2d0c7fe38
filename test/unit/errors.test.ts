// Upstream failures as the caller and the operator see them (activities/core/errors.ts), alone: the
// caller's message says whose failure it was and what kind, never the upstream's words (except a
// refusal of the caller's own request); anything shaped like a credential is scrubbed everywhere.
import assert from 'node:assert/strict';
import {
  isCallersOwn,
  isRetryableStatus,
  notSupported,
  RequestError,
  scrubSecrets,
  UPSTREAM_ERROR,
  upstreamError,
} from '../../activities/core/errors.js';

describe('upstream errors', () => {
  describe('the caller’s message, by kind of failure', () => {
    const kinds: Array<[number, string | undefined, string]> = [
      [408, undefined, 'groq did not answer in time.'],
      [504, undefined, 'groq did not answer in time.'],
      [502, 'upstream_timeout', 'groq did not answer in time.'],
      [502, 'upstream_unreachable', 'groq could not be reached.'],
      [502, 'upstream_stream_cut', 'groq broke off its answer midway.'],
      [502, 'upstream_bad_response', 'groq sent a response the gateway could not read.'],
      [499, undefined, 'groq call was aborted.'],
      [401, undefined, "groq refused the gateway's credentials (an authentication error, HTTP 401)."],
      [402, undefined, "groq refused the gateway's credentials (an authentication error, HTTP 402)."],
      [403, undefined, "groq refused the gateway's credentials (an authentication error, HTTP 403)."],
      [429, undefined, 'groq is rate limiting the gateway (HTTP 429).'],
      [404, undefined, 'groq does not serve what was asked of it (HTTP 404).'],
      [500, undefined, 'groq failed (a server error, HTTP 500).'],
      [503, undefined, 'groq failed (a server error, HTTP 503).'],
      [409, undefined, 'groq refused the call (a client error, HTTP 409).'],
    ];
    for (const [status, code, message] of kinds) {
      it(`${status}${code ? ` ${code}` : ''}`, () => {
        const e = upstreamError('internal words of the upstream', status, false, { code, providerId: 'groq' });
        assert.equal(e.message, message);
        assert.equal(e.opts.detail, 'internal words of the upstream');
        assert.equal(e.code, code ?? UPSTREAM_ERROR);
        assert.equal(e.status, status);
      });
    }
    for (const status of [400, 413, 422]) {
      it(`${status} is the caller's own request: its text is shown`, () => {
        assert.equal(isCallersOwn(status), true);
        const e = upstreamError('max_tokens is too large', status, false, { providerId: 'openai' });
        assert.equal(e.message, `openai refused the request (HTTP ${status}): max_tokens is too large`);
      });
    }
    it('names no provider when none is known', () =>
      assert.equal(upstreamError('x', 500, true).message, 'The provider failed (a server error, HTTP 500).'));
    it('keeps retryability and scrubs the upstream body', () => {
      const e = upstreamError('boom', 503, true, { upstreamBody: '{"key":"sk-abcdef123456"}' });
      assert.equal(e.retryable, true);
      assert.equal(e.opts.upstreamBody, '{"key":"[redacted]"}');
      assert.equal(new RequestError(400, 'x', 'y').retryable, false);
    });
  });

  describe('scrubbing credentials', () => {
    const cases: Array<[string, string, string]> = [
      [
        'an OpenAI-style key',
        'Incorrect API key provided: sk-proj-abc123XYZ',
        'Incorrect API key provided: [redacted]',
      ],
      ['a masked key', 'key sk-abc***xyz is wrong', 'key [redacted] is wrong'],
      ['a Google key', 'API key AIzaSyA1234567890abcdef not valid', 'API key [redacted] not valid'],
      ['a bearer token', 'Authorization: Bearer abc123def456', 'Authorization: [redacted] [redacted]'],
      ['a bearer token in prose', 'sent bearer abcdefgh12345 twice', 'sent bearer [redacted] twice'],
      ['a key=value pair', 'url?api_key=hunter22&x=1', 'url?api_key=[redacted]&x=1'],
      ['a JSON password', '{"password": "hunter2!"}', '{"password": "[redacted]"}'],
      ['an access token', 'access-token: 0123abcd', 'access-token: [redacted]'],
      ['a long opaque token', `id ${'a1'.repeat(20)} end`, 'id [redacted] end'],
    ];
    for (const [what, text, want] of cases) it(what, () => assert.equal(scrubSecrets(text), want));
    it('leaves ordinary text alone', () => {
      const text = 'The model gpt-4o-mini does not exist or you do not have access to it (request 42).';
      assert.equal(scrubSecrets(text), text);
    });
    it('leaves long words with no digit alone', () => {
      const text = 'Supercalifragilisticexpialidocious_and_more_letters';
      assert.equal(scrubSecrets(text), text);
    });
    it('removes the value of a credential setting of this process wherever it appears', () => {
      process.env.UNIT_TEST_PROVIDER_API_KEY = 'plainwordsecret';
      try {
        assert.equal(scrubSecrets('echo: plainwordsecret!'), 'echo: [redacted]!');
      } finally {
        delete process.env.UNIT_TEST_PROVIDER_API_KEY;
      }
    });
  });

  describe('retryable statuses', () => {
    for (const status of [408, 409, 425, 429, 500, 502, 503, 504])
      it(`${status} is retryable`, () => assert.equal(isRetryableStatus(status), true));
    for (const status of [400, 401, 403, 404, 413, 422])
      it(`${status} is not`, () => assert.equal(isRetryableStatus(status), false));
  });

  describe('naming a value that is not supported', () => {
    it('quotes text', () => assert.equal(notSupported('wav'), "'wav' is not supported"));
    it('says a missing value is missing', () => {
      assert.equal(notSupported(undefined), 'is missing');
      assert.equal(notSupported(null), 'is missing');
    });
    it('names the kind of a value that is not text', () => {
      assert.equal(notSupported({}), 'must be a string, not an object');
      assert.equal(notSupported([]), 'must be a string, not an array');
      assert.equal(notSupported(3), 'must be a string, not a number');
      assert.equal(notSupported(true), 'must be a string, not a boolean');
    });
  });
});
