// biome-ignore-all lint/suspicious/noExplicitAny: wire JSON, read field by field
// Upstream error text never reaches callers word for word (issue 11, item 4). A caller reads the
// provider, the kind of failure and the request id; the upstream's own message and body go to the
// operator's log, credentials scrubbed. Only a refusal of the caller's own request (an upstream
// 400 about their prompt) carries the upstream's message, and never a credential.
import assert from 'node:assert/strict';
import { useChatBench, readSse } from './support/chatEnv.js';
import { scrubSecrets } from '../activities/core/errors.js';

const MODEL = 'openai/gpt-4o-mini';
const hello = { model: MODEL, messages: [{ role: 'user', content: 'hi' }] };

/** Everything written with console.warn while `work` runs. */
async function warnings<T>(work: () => Promise<T>): Promise<{ value: T; lines: string[] }> {
  const lines: string[] = [];
  const original = console.warn;
  console.warn = (...args: unknown[]) => {
    lines.push(args.map(String).join(' '));
  };
  try {
    return { value: await work(), lines };
  } finally {
    console.warn = original;
  }
}

describe('upstream errors as callers see them', function () {
  this.timeout(60_000);
  const bench = useChatBench();

  it("an upstream's credential error: the provider, the kind and the request id; its words only in the log", async () => {
    const b = bench();
    const { key } = await b.account('1');
    const said = 'Incorrect API key provided: sk-proj-AbCdEf123456789. You can find your API key at the dashboard.';
    const reply = { status: 401, error: { message: said, type: 'invalid_request_error', code: 'invalid_api_key' } };
    b.openai.script(reply); // not retryable: no fallback
    const { value: res, lines } = await warnings(() => b.post(key, hello));
    assert.equal(res.status, 502);
    const requestId = res.headers.get('x-request-id')!;
    const { error } = (await res.json()) as any;
    const text = JSON.stringify(error);
    assert.doesNotMatch(text, /Incorrect API key|sk-proj|dashboard/);
    assert.match(error.message, /openai refused the gateway's credentials \(an authentication error, HTTP 401\)\./);
    assert.ok(error.message.includes(requestId), `the request id in ${error.message}`);
    // the operator's log has the upstream's words, without the key
    const logged = lines.filter((l) => l.includes(requestId));
    assert.equal(logged.length, 1, lines.join('\n'));
    assert.match(logged[0], /openai 401 upstream_error: Incorrect API key provided: \[redacted\]/);
    assert.ok(
      lines.every((l) => !l.includes('sk-proj')),
      'no credential in the log',
    );
  });

  it('a server error mid-stream: the error frame names the provider and the request id, not the upstream text', async () => {
    const b = bench();
    const { key } = await b.account('1');
    b.openai.script({ errorAfter: 2, error: { message: 'internal shard db-7.prod exploded', type: 'server_error' } });
    const { value, lines } = await warnings(async () => {
      const res = await b.post(key, { ...hello, stream: true });
      return { requestId: res.headers.get('x-request-id')!, frames: await readSse(res) };
    });
    const { requestId, frames } = value;
    const frame = frames.find((f) => f !== '[DONE]' && f.error);
    assert.ok(frame, 'an error frame');
    assert.doesNotMatch(JSON.stringify(frame), /shard|exploded/);
    assert.match(frame.error.message, /^openai /);
    assert.ok(frame.error.message.includes(requestId));
    assert.ok(lines.some((l) => l.includes(requestId) && l.includes('exploded')));
  });

  it("the caller's own mistake (a 400 about the prompt) keeps its detail, scrubbed of credentials", async () => {
    const b = bench();
    const { key } = await b.account('1');
    b.openai.script({
      status: 400,
      error: {
        message:
          "This model's maximum context length is 128000 tokens; your messages resulted in 130000 tokens. (key sk-live-9f8e7d6c5b4a)",
        type: 'invalid_request_error',
        code: 'context_length_exceeded',
      },
    });
    const res = await b.post(key, { ...hello, provider: { allow_fallbacks: false } });
    assert.equal(res.status, 400);
    const { error } = (await res.json()) as any;
    assert.match(
      error.message,
      /^openai refused the request \(HTTP 400\): This model's maximum context length is 128000/,
    );
    assert.doesNotMatch(error.message, /sk-live/);
    assert.match(error.message, /\[redacted\]/);
  });

  it('scrubs what looks like a credential', () => {
    const cases: Array<[string, string]> = [
      ['Incorrect API key provided: sk-proj-abc123******wxyz. See', 'Incorrect API key provided: [redacted] See'],
      ['API key not valid: AIzaSyA1234567890abcdefghijk', 'API key not valid: [redacted]'],
      ['Authorization: Bearer abcdefgh12345678', 'Authorization: [redacted] [redacted]'],
      ['got Bearer eyJhbGciOi.J9x2', 'got Bearer [redacted]'],
      ['{"api_key": "hunter2hunter"}', '{"api_key": "[redacted]"}'],
      ['https://x/y?key=abc123def&q=1', 'https://x/y?key=[redacted]&q=1'],
      ['trace 0123456789abcdef0123456789abcdef01 failed', 'trace [redacted] failed'],
      // ordinary words and model names survive
      ["Invalid value for 'messages[0].role'", "Invalid value for 'messages[0].role'"],
      ['claude-3-5-haiku-20241022 does not exist', 'claude-3-5-haiku-20241022 does not exist'],
    ];
    for (const [input, expected] of cases) assert.equal(scrubSecrets(input), expected, input);
    process.env.TEST_SCRUB_API_KEY = 'plain-looking-secret';
    try {
      assert.equal(scrubSecrets('the key plain-looking-secret was refused'), 'the key [redacted] was refused');
    } finally {
      delete process.env.TEST_SCRUB_API_KEY;
    }
  });
});
