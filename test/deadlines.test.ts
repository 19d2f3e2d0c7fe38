// biome-ignore-all lint/suspicious/noExplicitAny: wire JSON, read field by field
// Per-attempt deadlines on upstream calls (issue 11, item 5): to connect, to the response's first
// byte, and between two pieces of its body. An upstream that misses one before anything reached
// the caller is given up and the next route tried, within the deadline; one that goes silent
// after the stream began is cut there, and what it produced is charged (and priced in the stream).
// The hanging upstreams are real sockets: a listener that never accepts (python, backlog full), a
// server that never answers, one that sends its headers and stops, one that stops midway.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { useChatBench, readSse } from './support/chatEnv.js';
import { useProviderEnv } from './support/providerEnv.js';
import { config } from '../activities/config.js';
import { parseAmount } from '../activities/core/money.js';

const MODEL = 'openai/gpt-4o-mini'; // served by openai, then openrouter
const hello = { model: MODEL, messages: [{ role: 'user', content: 'hi' }] };
const DEADLINE = 400;
/** how much later than the deadline an answer may come: the fallback's own call, a loaded machine */
const SLACK = 3000;

/**
 * A TCP listener whose accept queue is full and which never accepts: one more connection attempt
 * gets no answer to its SYN, so connecting hangs until the client's deadline.
 */
async function blackhole(): Promise<{ url: string; close(): void }> {
  const child: ChildProcess = spawn('python3', [
    '-u',
    '-c',
    "import socket,time\ns=socket.socket()\ns.bind(('127.0.0.1',0))\ns.listen(0)\nprint(s.getsockname()[1])\ntime.sleep(600)",
  ]);
  const port = await new Promise<number>((resolve, reject) => {
    child.once('error', reject);
    child.stdout!.once('data', (d) => resolve(Number(String(d).trim())));
  });
  // fill the queue: these connect (the kernel completes the handshake), later ones cannot
  const fillers = Array.from({ length: 3 }, () => net.connect(port, '127.0.0.1').on('error', () => undefined));
  await new Promise((r) => setTimeout(r, 100));
  return {
    url: `http://127.0.0.1:${port}/v1`,
    close() {
      for (const f of fillers) f.destroy();
      child.kill();
    },
  };
}

describe('upstream deadlines per attempt', function () {
  this.timeout(60_000);
  const bench = useChatBench();
  const saved = { ...config };
  before(() => {
    config.upstreamConnectTimeoutMs = DEADLINE;
    config.upstreamFirstByteTimeoutMs = DEADLINE;
    config.upstreamIdleTimeoutMs = DEADLINE;
  });
  after(() => {
    config.upstreamConnectTimeoutMs = saved.upstreamConnectTimeoutMs;
    config.upstreamFirstByteTimeoutMs = saved.upstreamFirstByteTimeoutMs;
    config.upstreamIdleTimeoutMs = saved.upstreamIdleTimeoutMs;
  });

  async function timed<T>(work: () => Promise<T>): Promise<{ value: T; ms: number }> {
    const t0 = Date.now();
    const value = await work();
    return { value, ms: Date.now() - t0 };
  }

  function withinDeadline(ms: number) {
    assert.ok(ms >= DEADLINE - 50, `answered after ${ms} ms: before the deadline was reached`);
    assert.ok(ms < DEADLINE + SLACK, `answered after ${ms} ms: the deadline (${DEADLINE} ms) did not cut it off`);
  }

  it('a connection that cannot be opened: the next route, after the connect deadline', async () => {
    const b = bench();
    const { key } = await b.account('1');
    const hole = await blackhole();
    const restore = await useProviderEnv({ OPENAI_BASE_URL: hole.url });
    try {
      const { value: res, ms } = await timed(() => b.post(key, hello));
      assert.equal(res.status, 200);
      assert.equal(((await res.json()) as any).provider, 'openrouter');
      withinDeadline(ms);
    } finally {
      await restore();
      hole.close();
    }
  });

  for (const stream of [false, true]) {
    const mode = stream ? 'streaming' : 'non-streaming';

    it(`an upstream that accepts and never answers: the next route, after the first-byte deadline (${mode})`, async () => {
      const b = bench();
      const { key } = await b.account('1');
      b.openai.script({ hang: true });
      const { value, ms } = await timed(async () => {
        const res = await b.post(key, { ...hello, stream });
        return { status: res.status, body: stream ? await readSse(res) : await res.json() };
      });
      assert.equal(value.status, 200);
      const provider = stream ? (value.body as any[])[0].provider : (value.body as any).provider;
      assert.equal(provider, 'openrouter');
      assert.equal(b.openai.requests.length, 1);
      assert.equal(b.openai.last().aborted, true, 'the hung attempt was given up');
      withinDeadline(ms);
    });

    it(`an upstream that answers its headers and stalls: the next route, after the idle deadline (${mode})`, async () => {
      const b = bench();
      const { key } = await b.account('1');
      b.openai.script({ headersThenHang: true });
      const { value, ms } = await timed(async () => {
        const res = await b.post(key, { ...hello, stream });
        return { status: res.status, body: stream ? await readSse(res) : await res.json() };
      });
      assert.equal(value.status, 200, JSON.stringify(value.body));
      const provider = stream ? (value.body as any[])[0].provider : (value.body as any).provider;
      assert.equal(provider, 'openrouter');
      withinDeadline(ms);
    });
  }

  it('when every route hangs: 502 all_fallbacks_failed naming the kind of each failure, nothing charged', async () => {
    const b = bench();
    const { key, accountId } = await b.account('1');
    b.openai.script({ hang: true });
    b.openrouter.script({ hang: true });
    const { value: res, ms } = await timed(() => b.post(key, hello));
    assert.equal(res.status, 502);
    const { error } = (await res.json()) as any;
    assert.equal(error.code, 'all_fallbacks_failed');
    assert.match(error.message, /openai did not answer in time\. openrouter did not answer in time\./);
    assert.ok(ms < 2 * DEADLINE + SLACK, `${ms} ms`);
    assert.deepEqual(await b.usd(accountId), {
      amount: parseAmount('1', 'USD'),
      held: 0n,
      available: parseAmount('1', 'USD'),
    });
  });

  it('a stream that stalls midway is cut at the idle deadline, charged for what it produced and priced', async () => {
    const b = bench();
    const { key, accountId } = await b.account('1');
    b.openai.script({ text: 'one two three four five six', hangAfter: 3 });
    const { value: frames, ms } = await timed(async () => readSse(await b.post(key, { ...hello, stream: true })));
    withinDeadline(ms);
    assert.equal(b.openrouter.requests.length, 0, 'no fallback once the caller had content');
    const text = frames
      .filter((f) => f !== '[DONE]' && f.choices?.[0]?.delta?.content)
      .map((f) => f.choices[0].delta.content)
      .join('');
    assert.ok(text.length > 0, 'content reached the caller before the stall');
    const cut = frames.find((f) => f !== '[DONE]' && f.error);
    assert.equal(cut?.error.code, 'upstream_stream_cut');
    assert.match(cut.error.message, /^openai broke off its answer midway\./);
    const charged = parseAmount('1', 'USD') - (await b.usd(accountId)).amount;
    assert.ok(charged > 0n, 'what was produced is charged');
    assert.equal(frames.at(-2).x_nanogpt_pricing.cost, Number(charged) / 1e9);
    assert.equal(frames.at(-1), '[DONE]');
  });
});
