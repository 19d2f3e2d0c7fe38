import assert from 'node:assert/strict';
import { Pool } from 'undici';
import { useChatBench, readSse, readUntil, type ChatBench } from './support/chatEnv.js';
import { startOpenAIUpstream } from './support/upstreams/openai.js';
import { useProviderEnv } from './support/providerEnv.js';
import { assertBooksBalance } from './support/books.js';
import { db } from '../activities/db.js';
import { flushRequestRecords } from '../activities/metering/records.js';
import { parseAmount } from '../activities/core/money.js';
import { config } from '../activities/config.js';
import { GPT_4O_MINI, textCost } from './support/prices.js';
import { waitFor } from './support/wait.js';

const MODEL = 'openai/gpt-4o-mini';
const hello = { model: MODEL, messages: [{ role: 'user', content: 'Say hello' }] };
/** nano-USD as the answers show USD */
const shown = (units: bigint) => Number(units) / 1e9;
/** gpt-4o-mini: the catalog's upstream price + 5% markup (test/support/prices.ts) */
const costOf = (p: number, c: number) => textCost(GPT_4O_MINI, { input: p, output: c });

describe('chat completions', function () {
  this.timeout(60_000);
  const bench = useChatBench();
  let b: ChatBench;
  before(() => (b = bench()));

  describe('non-streaming', () => {
    it('answers in the OpenAI shape, bills exactly the usage, and says so', async () => {
      const { key, accountId } = await b.account('1');
      const res = await b.post(key, hello);
      assert.equal(res.status, 200);
      const body = await res.json();
      assert.equal(body.object, 'chat.completion');
      assert.equal(body.model, MODEL);
      assert.equal(body.provider, 'openai');
      assert.match(body.id, /^chatcmpl-/);
      assert.equal(body.choices[0].message.role, 'assistant');
      assert.match(body.choices[0].message.content, /hello/i);
      assert.equal(body.choices[0].finish_reason, 'stop');
      const u = body.usage;
      assert.ok(u.prompt_tokens > 0 && u.completion_tokens > 0);
      assert.equal(u.total_tokens, u.prompt_tokens + u.completion_tokens);
      assert.deepEqual(u.prompt_tokens_details, { cached_tokens: 0, audio_tokens: 0 });
      const cost = costOf(u.prompt_tokens, u.completion_tokens);
      const p = body.x_nanogpt_pricing;
      assert.deepEqual(p, {
        amount: Number(cost) / 1e9,
        currency: 'USD',
        cost: Number(cost) / 1e9,
        paymentSource: 'USD',
        inputTokens: u.prompt_tokens,
        outputTokens: u.completion_tokens,
      });
      assert.equal(body.cost, Number(cost) / 1e9);
      assert.equal(body.paymentSource, 'USD');
      const bal = await b.usd(accountId);
      assert.equal(bal.amount, parseAmount('1', 'USD') - cost);
      assert.equal(bal.held, 0n);
      assert.equal(body.remainingBalance, Number(bal.available) / 1e9);
      // the upstream got OpenAI's own dialect: its model name, max_completion_tokens
      const sent = b.openai.last().body;
      assert.equal(sent.model, 'gpt-4o-mini');
      assert.ok(sent.max_completion_tokens > 0);
      // and the request is on record
      const requestId = res.headers.get('x-request-id')!;
      await flushRequestRecords();
      const rec = await db().prisma.requestRecord.findUnique({ where: { id: requestId } });
      assert.equal(rec?.status, 'completed');
      assert.equal(rec?.providerId, 'openai');
    });

    it('prints a tiny cost as a plain decimal (0.000000788, not 7.88e-7), in JSON and in the stream', async () => {
      const { key } = await b.account('1');
      const tiny = { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 };
      const cost = Number(costOf(1, 1)) / 1e9;
      assert.equal(JSON.stringify(cost), '7.88e-7'); // what the body said before
      b.openai.script({ usage: tiny });
      const json = await (await b.post(key, hello)).text();
      assert.equal(JSON.parse(json).cost, cost);
      assert.match(json, /"cost":0\.000000788,/);
      assert.doesNotMatch(json, /\de-\d/);
      b.openai.script({ usage: tiny });
      const stream = await (
        await b.post(key, { ...hello, stream: true, stream_options: { include_usage: true } })
      ).text();
      assert.match(stream, /"cost":0\.000000788[,}]/);
      assert.doesNotMatch(stream, /\de-\d/);
    });

    it('uses the upstream usage when it reports cached tokens, billing them at the cached price', async () => {
      const { key, accountId } = await b.account('1');
      b.openai.script({
        usage: {
          prompt_tokens: 2000,
          completion_tokens: 10,
          total_tokens: 2010,
          prompt_tokens_details: { cached_tokens: 1500 },
        },
      });
      const body = await (await b.post(key, hello)).json();
      assert.equal(body.usage.prompt_tokens_details.cached_tokens, 1500);
      const expected = textCost(GPT_4O_MINI, { input: 2000, cached: 1500, output: 10 });
      assert.equal(expected, 78_750n + 118_125n + 6_300n);
      assert.equal((await b.usd(accountId)).amount, parseAmount('1', 'USD') - expected);
    });

    it('passes tools through and returns tool calls', async () => {
      const { key } = await b.account();
      b.openai.script({ toolCalls: [{ id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' }] });
      const body = await (
        await b.post(key, {
          ...hello,
          tools: [
            {
              type: 'function',
              function: {
                name: 'get_weather',
                parameters: { type: 'object', properties: { city: { type: 'string' } } },
              },
            },
          ],
          tool_choice: 'auto',
        })
      ).json();
      assert.equal(body.choices[0].finish_reason, 'tool_calls');
      assert.deepEqual(body.choices[0].message.tool_calls, [
        { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
      ]);
      assert.equal(b.openai.last().body.tools[0].function.name, 'get_weather');
    });

    it("drops tools for tool_choice 'none' and tool results whose call id is unknown", async () => {
      const { key } = await b.account();
      await b.post(key, {
        model: MODEL,
        tools: [{ type: 'function', function: { name: 'f' } }],
        tool_choice: 'none',
        messages: [
          { role: 'user', content: 'hi' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'call_a', type: 'function', function: { name: 'f', arguments: '{}' } }],
          },
          { role: 'tool', tool_call_id: 'call_a', content: 'known' },
          { role: 'tool', tool_call_id: 'call_zzz', content: 'unknown' },
        ],
      });
      const sent = b.openai.last().body;
      assert.equal(sent.tools, undefined);
      assert.deepEqual(
        sent.messages.filter((m: { role: string }) => m.role === 'tool').map((m: { content: string }) => m.content),
        ['known'],
      );
    });
  });

  describe('streaming', () => {
    it('streams role, content deltas, a final chunk with finish_reason, usage and pricing, then [DONE]', async () => {
      const { key, accountId } = await b.account('1');
      const res = await b.post(key, { ...hello, stream: true, stream_options: { include_usage: true } });
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type')!, /text\/event-stream/);
      const frames = await readSse(res);
      assert.equal(frames.at(-1), '[DONE]');
      const chunks = frames.slice(0, -1);
      // passed through: the upstream's own first delta (OpenAI's carries `refusal: null` too)
      assert.equal(chunks[0].choices[0].delta.role, 'assistant');
      assert.equal(chunks[0].choices[0].delta.content, '');
      const text = chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');
      assert.match(text, /hello/i);
      // passed through: OpenAI's own order, the finishing chunk and then the usage chunk (no
      // choices), which carries the pricing as the final chunk
      assert.equal(chunks.find((c) => c.choices[0]?.finish_reason)?.choices[0].finish_reason, 'stop');
      const last = chunks.at(-1);
      assert.deepEqual(last.choices, []);
      assert.ok(last.usage.completion_tokens > 0);
      const cost = costOf(last.usage.prompt_tokens, last.usage.completion_tokens);
      assert.equal(last.x_nanogpt_pricing.cost, Number(cost) / 1e9);
      assert.equal((await b.usd(accountId)).amount, parseAmount('1', 'USD') - cost);
      assert.ok(chunks.every((c) => c.object === 'chat.completion.chunk'));
    });

    it('keeps the upstream connection alive across streams (read to [DONE], then drained, not destroyed)', async () => {
      const { key } = await b.account('1');
      const before = b.openai.requests.length;
      for (let i = 0; i < 3; i++) {
        // the body's end comes after [DONE]: a reader that stopped and destroyed it would lose the connection
        b.openai.script({ text: 'hello there', endDelayMs: 30 });
        const res = await b.post(key, { ...hello, stream: true });
        assert.equal((await readSse(res)).at(-1), '[DONE]');
        await new Promise((r) => setTimeout(r, 60)); // the drain finishes in the background
      }
      const ports = new Set(b.openai.requests.slice(before).map((r) => r.remotePort));
      assert.equal(ports.size, 1, `three streams used ${ports.size} upstream connections`);
    });

    it('streams tool-call deltas by index', async () => {
      const { key } = await b.account();
      b.openai.script({ toolCalls: [{ id: 'call_9', name: 'lookup', arguments: '{"q":"switchyard gateway"}' }] });
      const frames = await readSse(
        await b.post(key, { ...hello, stream: true, tools: [{ type: 'function', function: { name: 'lookup' } }] }),
      );
      const deltas = frames
        .filter((f) => f !== '[DONE]' && f.choices[0]?.delta?.tool_calls)
        .map((f) => f.choices[0].delta.tool_calls[0]);
      assert.equal(deltas[0].id, 'call_9');
      assert.equal(deltas[0].function.name, 'lookup');
      assert.equal(deltas.map((d) => d.function.arguments).join(''), '{"q":"switchyard gateway"}');
      assert.ok(deltas.every((d) => d.index === 0));
      assert.equal(frames.at(-2).choices[0].finish_reason, 'tool_calls');
    });

    // What a broken or abandoned stream costs: the upstream reported no usage, so the bill is the
    // README's estimate, worked out here by hand: the prompt "Say hello" is 9 bytes, one token per
    // 3 bytes rounded up plus 4 per message = 7 tokens; the output, one token per 4 bytes of the
    // text produced, rounded up. Billing the reservation (16,384 output tokens) instead would cost
    // about 0.01 USD.
    const HELLO_PROMPT_TOKENS = 7;
    for (const passThrough of [true, false]) {
      describe(passThrough ? 'passed through' : 'translated', () => {
        let was: boolean;
        beforeEach(() => {
          was = config.passThrough;
          config.passThrough = passThrough;
        });
        afterEach(() => {
          config.passThrough = was;
        });

        it('the same stream, frame for frame, when the upstream bytes arrive split anywhere (inside characters too)', async () => {
          const { key, accountId } = await b.account('1');
          const text = 'Grüße aus Zürich, 東京 and 🎉: naïve café!';
          const streamed = async () => {
            b.openai.script({ text });
            const frames = await readSse(
              await b.post(key, { ...hello, stream: true, stream_options: { include_usage: true } }),
            );
            // what does not depend on the run: ids and timestamps do
            return frames.map((f) =>
              f === '[DONE]' ? f : { choices: f.choices, usage: f.usage, pricing: f.x_nanogpt_pricing },
            );
          };
          const whole = await streamed();
          b.openai.splitWrites({ seed: 3, maxPiece: 5 });
          let split: typeof whole;
          try {
            split = await streamed();
          } finally {
            b.openai.splitWrites(undefined);
          }
          assert.deepEqual(split, whole);
          assert.equal(split.map((f) => (f === '[DONE]' ? '' : (f.choices[0]?.delta?.content ?? ''))).join(''), text);
          // the loopback counts words: 2 prompt tokens, 8 output tokens
          const usage = split.at(-2).usage;
          assert.deepEqual([usage.prompt_tokens, usage.completion_tokens], [2, 8]);
          const cost = textCost(GPT_4O_MINI, { input: 2, output: 8 });
          assert.equal(cost, 315n + 5040n);
          assert.equal(split.at(-2).pricing.cost, shown(cost));
          assert.equal(parseAmount('1', 'USD') - (await b.usd(accountId)).amount, 2n * cost);
        });

        it('bills exactly what was produced when the upstream stream breaks midway, and says so in an error frame', async () => {
          const { key, accountId } = await b.account('1');
          // the role chunk, "one", " two", then the body ends
          b.openai.script({ text: 'one two three four five six seven eight', cutAfter: 3 });
          const frames = await readSse(await b.post(key, { ...hello, stream: true }));
          const errorFrame = frames.find((f) => f !== '[DONE]' && f.error);
          assert.ok(errorFrame, 'an error frame');
          assert.equal(errorFrame.error.code, 'upstream_stream_cut');
          const text = frames.map((f) => (f === '[DONE]' ? '' : (f.choices?.[0]?.delta?.content ?? ''))).join('');
          assert.equal(text, 'one two');
          // "one two": 7 bytes, 2 tokens
          const expected = textCost(GPT_4O_MINI, { input: HELLO_PROMPT_TOKENS, output: 2 });
          assert.equal(expected, 1103n + 1260n);
          assert.equal(parseAmount('1', 'USD') - (await b.usd(accountId)).amount, expected);
          // the bill after the error frame says what broke the stream it charged for
          const billed = frames.filter((f) => f !== '[DONE]' && f.x_nanogpt_pricing).at(-1);
          assert.equal(billed.x_nanogpt_pricing.cost, Number(expected) / 1e9);
          assert.deepEqual(billed.x_nanogpt_pricing.error, {
            status: errorFrame.error.status ?? 502,
            message: errorFrame.error.message,
          });
          // a stream that ended well has no error in its bill
          b.openai.script({ text: 'fine' });
          const ok = await readSse(await b.post(key, { ...hello, stream: true }));
          assert.equal(
            ok.filter((f) => f !== '[DONE]' && f.x_nanogpt_pricing).at(-1).x_nanogpt_pricing.error,
            undefined,
          );
        });

        it('aborts the upstream and bills exactly what was produced when the caller disconnects', async () => {
          const { key, accountId } = await b.account('1');
          // the role chunk and four words, then the upstream stalls until the gateway gives up
          b.openai.script({ text: 'alpha beta gamma delta epsilon zeta eta theta', hangAfter: 5 });
          const ac = new AbortController();
          const res = await fetch(`${b.base}/api/v1/chat/completions`, {
            method: 'POST',
            signal: ac.signal,
            headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
            body: JSON.stringify({ ...hello, stream: true }),
          });
          // read until the last word produced has reached us: the gateway has seen all of it
          await readUntil(res, '" delta"');
          ac.abort();
          await waitFor(() => b.openai.last().aborted, 5_000, 'the upstream to see the abort');
          await waitFor(async () => (await b.usd(accountId)).held === 0n, 5_000, 'the reservation to be settled');
          const bal = await b.usd(accountId);
          assert.equal(bal.held, 0n);
          // "alpha beta gamma delta": 22 bytes, 6 tokens
          const expected = textCost(GPT_4O_MINI, { input: HELLO_PROMPT_TOKENS, output: 6 });
          assert.equal(expected, 1103n + 3780n);
          assert.equal(parseAmount('1', 'USD') - bal.amount, expected);
          await flushRequestRecords();
          const rec = await db().prisma.requestRecord.findUnique({
            where: { id: res.headers.get('x-request-id')! },
          });
          assert.equal(rec?.status, 'client_closed');
          assert.equal(rec?.outputTokens, 6);
        });
      });
    }
  });

  describe('a caller who leaves a non-streaming request', () => {
    it('aborts the upstream call and is charged nothing, also on a connection that served requests before', async () => {
      const { key, accountId } = await b.account('1');
      const warnings: Error[] = [];
      const onWarning = (w: Error) => warnings.push(w);
      process.on('warning', onWarning);
      // one keep-alive connection: the abort signal is per connection, so it is reused here
      const pool = new Pool(b.base, { connections: 1 });
      try {
        const post = (signal?: AbortSignal) =>
          pool.request({
            method: 'POST',
            path: '/api/v1/chat/completions',
            signal,
            headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
            body: JSON.stringify(hello),
          });
        for (let i = 0; i < 30; i++) {
          const res = await post();
          assert.equal(res.statusCode, 200);
          await res.body.text();
        }
        const before = await b.usd(accountId);
        b.openai.script({ hang: true });
        const ac = new AbortController();
        const seen = b.openai.requests.length;
        const pending = post(ac.signal).catch((err) => err);
        await waitFor(() => b.openai.requests.length !== seen, 5_000, 'the upstream call');
        assert.equal(b.openai.requests.length, seen + 1, 'the request reached the upstream');
        ac.abort();
        await pending;
        await waitFor(() => b.openai.last().aborted, 5_000, 'the upstream to see the abort');
        await waitFor(
          async () => (await b.usd(accountId)).held === before.held,
          5_000,
          'the reservation to be released',
        );
        const after = await b.usd(accountId);
        assert.equal(after.amount, before.amount, 'nothing charged');
        assert.equal(after.held, before.held, 'the reservation was released');
      } finally {
        await pool.destroy();
        process.off('warning', onWarning);
      }
      assert.deepEqual(
        warnings.map((w) => w.name),
        [],
        'no listener piled up on the reused signal',
      );
    });
  });

  describe('on a credit lease (an account that affords one)', () => {
    // 100 USD affords a lease: a request's worst case here is 10,323,023 nano-USD (7 prompt tokens
    // and the 16,384-token output cap), and a lease of 256 of them (about 2.64 USD) is under 1/8 of
    // the balance. Every request below takes its share from that one lease; a failed one must give
    // its share back, which the next answer's remainingBalance shows to the nano-dollar (a share
    // kept would show 0.010323023 USD less) and the lease's return to the balance confirms.
    const FUNDS = parseAmount('100', 'USD');

    /** the account's holds: one lease (`lease:` key) when every request shared it */
    async function holdsOf(accountId: string): Promise<Array<{ id: string; key: string }>> {
      const { rows } = await db().pool.query(
        `SELECT id, idempotency_key AS key FROM balance_holds WHERE account_id = $1 ORDER BY created_at`,
        [accountId],
      );
      return rows;
    }

    /** A request that succeeds: what it cost, and the balance it says is left. */
    async function succeed(key: string): Promise<{ cost: bigint; remaining: number }> {
      const res = await b.post(key, hello);
      assert.equal(res.status, 200);
      const body = await res.json();
      return { cost: costOf(body.usage.prompt_tokens, body.usage.completion_tokens), remaining: body.remainingBalance };
    }

    /** The books after: the lease was shared by every request, then given back whole. */
    async function assertOneLeaseGivenBack(accountId: string, failedId: string, charged: bigint) {
      const holds = await holdsOf(accountId);
      assert.equal(holds.length, 1, 'one lease served every request');
      assert.match(holds[0].key, /^lease:/);
      await flushRequestRecords();
      const rec = await db().prisma.requestRecord.findUnique({ where: { id: failedId } });
      assert.equal(rec?.holdId, holds[0].id, 'the failed request reserved from the lease');
      const bal = await b.usd(accountId); // writes the charges and gives the idle lease back
      assert.equal(bal.held, 0n, 'nothing is held once the lease is given back');
      assert.equal(bal.amount, FUNDS - charged);
    }

    const beforeFirstByte: Array<{ name: string; stream: boolean; reply: Record<string, unknown> }> = [
      { name: 'an upstream 500', stream: false, reply: { status: 500 } },
      { name: 'an upstream 500 on a stream', stream: true, reply: { status: 500 } },
      { name: 'a dropped connection', stream: false, reply: { drop: true } },
      { name: 'a dropped connection on a stream', stream: true, reply: { drop: true } },
    ];
    for (const f of beforeFirstByte) {
      it(`${f.name} before the first byte: its share goes back to the lease, nothing is charged`, async () => {
        const { key, accountId } = await b.account('100');
        const first = await succeed(key);
        assert.equal(first.remaining, shown(FUNDS - first.cost));
        // both providers fail: no fallback can answer
        b.openai.script(f.reply);
        b.openrouter.script(f.reply);
        const failed = await b.post(key, { ...hello, stream: f.stream });
        assert.equal(failed.status, 502);
        assert.equal((await failed.json()).error.code, 'all_fallbacks_failed');
        const second = await succeed(key);
        const charged = first.cost + second.cost;
        assert.equal(second.remaining, shown(FUNDS - charged), "the failed request's share is free again");
        await assertOneLeaseGivenBack(accountId, failed.headers.get('x-request-id')!, charged);
      });
    }

    it('usage beyond what the lease holds (an upstream reporting 10M tokens): charged the whole lease, no more', async () => {
      const { key, accountId } = await b.account('1');
      // max_tokens 10: the worst case is 1,103 (7 prompt tokens) + 6,300 (10 output tokens) =
      // 7,403 nano-USD, the lease 256 of them = 1,895,168 (1 USD affords 8 times that)
      b.openai.script({ usage: { prompt_tokens: 7, completion_tokens: 10_000_000, total_tokens: 10_000_007 } });
      const res = await b.post(key, { ...hello, max_tokens: 10 });
      assert.equal(res.status, 200);
      const body = await res.json();
      const lease = 1_895_168n;
      const [hold] = await holdsOf(accountId);
      assert.match(hold.key, /^lease:/);
      assert.equal(body.x_nanogpt_pricing.cost, 6.300001103, 'the cost of the usage reported');
      assert.equal(body.x_nanogpt_pricing.amount, shown(lease), 'charged what the lease held');
      assert.equal(body.remainingBalance, shown(parseAmount('1', 'USD') - lease));
      const bal = await b.usd(accountId);
      assert.equal(bal.amount, parseAmount('1', 'USD') - lease);
      assert.equal(bal.held, 0n);
    });

    it('usage beyond everything the account has, on the exact path: charged down to zero, never below', async () => {
      // 0.01 USD cannot afford a lease of 1,895,168 (8 times that is 0.015): one exact hold of 7,403
      const { key, accountId } = await b.account('0.01');
      b.openai.script({ usage: { prompt_tokens: 7, completion_tokens: 10_000_000, total_tokens: 10_000_007 } });
      const res = await b.post(key, { ...hello, max_tokens: 10 });
      assert.equal(res.status, 200);
      const body = await res.json();
      const [hold] = await holdsOf(accountId);
      assert.match(hold.key, /^hold:/);
      assert.equal(body.x_nanogpt_pricing.amount, 0.01, 'the hold, then the overage as far as the balance goes');
      assert.equal(body.remainingBalance, 0);
      const bal = await b.usd(accountId);
      assert.equal(bal.amount, 0n);
      assert.equal(bal.held, 0n);
    });

    it('a stream cut midway: what was produced is charged from the lease, the rest of the share goes back', async () => {
      const { key, accountId } = await b.account('100');
      const first = await succeed(key);
      b.openai.script({ text: 'one two three four five six seven eight', cutAfter: 3 });
      const cut = await b.post(key, { ...hello, stream: true });
      const frames = await readSse(cut);
      assert.equal(frames.find((f) => f !== '[DONE]' && f.error)?.error.code, 'upstream_stream_cut');
      // 7 prompt tokens, "one two" = 2 tokens (see the stream tests above)
      const produced = 1103n + 1260n;
      const second = await succeed(key);
      const charged = first.cost + produced + second.cost;
      assert.equal(second.remaining, shown(FUNDS - charged));
      await assertOneLeaseGivenBack(accountId, cut.headers.get('x-request-id')!, charged);
    });

    it('a caller who leaves midway: what was produced is charged from the lease, the rest of the share goes back', async () => {
      const { key, accountId } = await b.account('100');
      const first = await succeed(key);
      b.openai.script({ text: 'alpha beta gamma delta epsilon zeta eta theta', hangAfter: 5 });
      const ac = new AbortController();
      const left = await fetch(`${b.base}/api/v1/chat/completions`, {
        method: 'POST',
        signal: ac.signal,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({ ...hello, stream: true }),
      });
      await readUntil(left, '" delta"');
      ac.abort();
      await waitFor(() => b.openai.last().aborted, 5_000, 'the upstream to see the abort');
      await flushRequestRecords();
      const id = left.headers.get('x-request-id')!;
      await waitFor(
        async () => {
          await flushRequestRecords();
          return await db().prisma.requestRecord.findUnique({ where: { id } });
        },
        5_000,
        'the request record',
      );
      // 7 prompt tokens, "alpha beta gamma delta" = 6 tokens (see the stream tests above)
      const produced = 1103n + 3780n;
      const second = await succeed(key);
      const charged = first.cost + produced + second.cost;
      assert.equal(second.remaining, shown(FUNDS - charged));
      await assertOneLeaseGivenBack(accountId, id, charged);
    });
  });

  describe('routing and fallback', () => {
    it('falls back to the next provider on a retryable failure, and bills that provider', async () => {
      const { key } = await b.account();
      b.openai.script({ status: 503 });
      const body = await (await b.post(key, hello)).json();
      assert.equal(body.provider, 'openrouter');
      assert.equal(b.openrouter.last().body.model, 'openai/gpt-4o-mini');
    });

    it('falls back before the first streamed byte too', async () => {
      const { key } = await b.account();
      b.openai.script({ status: 429, headers: { 'retry-after': '3' } });
      const frames = await readSse(await b.post(key, { ...hello, stream: true }));
      assert.equal(frames[0].provider, 'openrouter');
    });

    it('does not fall back on a non-retryable failure, and charges nothing', async () => {
      const { key, accountId } = await b.account('1');
      b.openai.script({ status: 400, error: { message: 'bad thing', type: 'invalid_request_error' } });
      const res = await b.post(key, hello);
      assert.equal(res.status, 400);
      assert.match((await res.json()).error.message, /bad thing/);
      assert.equal(b.openrouter.requests.length, 0);
      assert.deepEqual(await b.usd(accountId), {
        amount: parseAmount('1', 'USD'),
        held: 0n,
        available: parseAmount('1', 'USD'),
      });
    });

    it('answers all_fallbacks_failed when every provider fails, and charges nothing', async () => {
      const { key, accountId } = await b.account('1');
      b.openai.script({ status: 500 });
      b.openrouter.script({ status: 502 });
      const res = await b.post(key, hello);
      assert.equal(res.status, 502);
      assert.equal((await res.json()).error.code, 'all_fallbacks_failed');
      assert.equal((await b.usd(accountId)).amount, parseAmount('1', 'USD'));
    });

    it('honours allow_fallbacks: false, X-Provider, provider order/ignore/only', async () => {
      const { key } = await b.account();
      b.openai.script({ status: 503 });
      let res = await b.post(key, { ...hello, provider: { allow_fallbacks: false } });
      assert.equal(res.status, 502);
      assert.equal(b.openrouter.requests.length, 0);
      assert.equal((await (await b.post(key, hello, { 'X-Provider': 'OpenRouter' })).json()).provider, 'openrouter');
      assert.equal((await (await b.post(key, { ...hello, provider: 'openrouter' })).json()).provider, 'openrouter');
      assert.equal(
        (await (await b.post(key, { ...hello, provider: { order: ['openrouter', 'openai'] } })).json()).provider,
        'openrouter',
      );
      assert.equal(
        (await (await b.post(key, { ...hello, provider: { ignore: ['openai'] } })).json()).provider,
        'openrouter',
      );
      assert.equal((await (await b.post(key, { ...hello, provider: { only: ['openai'] } })).json()).provider, 'openai');
      res = await b.post(key, hello, { 'X-Provider': 'nope' });
      assert.equal((await res.json()).error.code, 'provider_unknown_provider');
      res = await b.post(key, { ...hello, provider: { only: ['groq'] } });
      assert.equal((await res.json()).error.code, 'no_fallback_available');
      res = await b.post(key, { ...hello, provider: { max_price: { prompt: 0.01 } } });
      assert.equal((await res.json()).error.code, 'no_fallback_available');
      // a limit finer than a nano-dollar is cut to one, not refused (nor a 500); any size is a limit
      res = await b.post(key, { ...hello, provider: { max_price: { prompt: 1e-10 } } });
      assert.equal((await res.json()).error.code, 'no_fallback_available');
      for (const completion of [999999.9999999994, 1e21]) {
        res = await b.post(key, { ...hello, provider: { max_price: { prompt: 1.2345678912345, completion } } });
        assert.equal(res.status, 200, await res.clone().text());
      }
    });

    it('provider.data_collection "deny" routes only to providers that retain no data', async () => {
      // llama-3.3-70b: groq (may store data) and fireworks (zero data retention), both configured here
      const groq = await startOpenAIUpstream({ apiKey: 'gsk-loopback' });
      const fireworks = await startOpenAIUpstream({ apiKey: 'fw-loopback' });
      const restore = await useProviderEnv({
        GROQ_API_KEY: groq.apiKey,
        GROQ_BASE_URL: groq.url,
        FIREWORKS_API_KEY: fireworks.apiKey,
        FIREWORKS_BASE_URL: fireworks.url,
      });
      try {
        const { key, accountId } = await b.account('1');
        const llama = { ...hello, model: 'meta-llama/llama-3.3-70b-instruct' };
        const ask = (provider: Record<string, unknown>) => b.post(key, { ...llama, provider });
        const allowed = await (await ask({ order: ['groq'], data_collection: 'allow' })).json();
        assert.equal(allowed.provider, 'groq');
        const denied = await (await ask({ order: ['groq'], data_collection: 'deny' })).json();
        assert.equal(denied.provider, 'fireworks');
        // legacy completions take the same provider object
        const completion = await b.post(
          key,
          { model: llama.model, prompt: 'hi', provider: { order: ['groq'], data_collection: 'deny' } },
          {},
          '/v1/completions',
        );
        assert.equal((await completion.json()).provider, 'fireworks');
        // and no fallback to a provider that may store data: fireworks fails, nothing else is tried
        fireworks.script({ status: 503 });
        const before = { groq: groq.requests.length, openrouter: b.openrouter.requests.length };
        const failed = await ask({ order: ['groq'], data_collection: 'deny' });
        assert.equal(failed.status, 502);
        assert.deepEqual({ groq: groq.requests.length, openrouter: b.openrouter.requests.length }, before);
        // a model with no such provider: the request's own 400, naming the preference; nothing charged
        const spent = await b.usd(accountId);
        const none = await b.post(key, { ...hello, provider: { data_collection: 'deny' } });
        assert.equal(none.status, 400);
        const { error } = await none.json();
        assert.equal(error.code, 'no_fallback_available');
        assert.equal(error.param, 'provider');
        assert.match(error.message, /provider\.data_collection "deny"/);
        assert.deepEqual(await b.usd(accountId), spent);
      } finally {
        await restore();
        await groq.close();
        await fireworks.close();
      }
    });

    it('keeps the saved key restrictions binding', async () => {
      const { key } = await b.account('1', { providerDeny: ['openai'] });
      assert.equal((await (await b.post(key, hello)).json()).provider, 'openrouter');
      const { key: k2 } = await b.account('1', { providerAllow: ['groq'] });
      const res = await b.post(k2, hello);
      assert.equal(res.status, 403);
      assert.equal((await res.json()).error.code, 'model_not_allowed');
      const { key: k3 } = await b.account('1', { providerAllow: ['openai'] });
      const r3 = await b.post(k3, { ...hello, provider: 'openrouter' });
      assert.equal((await r3.json()).error.code, 'model_not_allowed');
    });

    it('parses model suffixes and refuses the ones this gateway does not offer', async () => {
      const { key } = await b.account();
      assert.equal((await b.post(key, { ...hello, model: 'gpt-4o-mini:cheap' })).status, 200);
      b.openai.reset();
      // a non-reasoning model gets no reasoning controls (its upstream would reject them)
      assert.equal((await b.post(key, { ...hello, model: 'gpt-4o-mini:reasoning-effort/high' })).status, 200);
      assert.equal(b.openai.last().body.reasoning_effort, undefined);
      for (const m of ['gpt-4o-mini:online/bing', 'gpt-4o-mini:cheap:fast', 'gpt-4o-mini:reasoning-effort/huge']) {
        const res = await b.post(key, { ...hello, model: m });
        assert.equal(res.status, 400, m);
        assert.equal((await res.json()).error.param, 'model');
      }
      const nf = await b.post(key, { ...hello, model: 'gpt-4o-mini:bogus' });
      assert.equal(nf.status, 404);
      assert.equal((await nf.json()).error.code, 'model_not_found');
    });
  });

  describe('bad input', () => {
    const cases: Array<[string, unknown, number, string, string?]> = [
      ['no model', { messages: [{ role: 'user', content: 'x' }] }, 400, 'missing_required_parameter', 'model'],
      ['no messages', { model: MODEL }, 400, 'missing_required_parameter', 'messages'],
      ['messages not an array', { model: MODEL, messages: 'hi' }, 400, 'invalid_parameter_value', 'messages'],
      [
        'bad role',
        { model: MODEL, messages: [{ role: 'wizard', content: 'x' }] },
        400,
        'invalid_parameter_value',
        'messages[0].role',
      ],
      ['temperature out of range', { ...hello, temperature: 3 }, 400, 'invalid_parameter_value', 'temperature'],
      ['unknown model', { ...hello, model: 'nope/never' }, 404, 'model_not_found', 'model'],
      ['embedding model', { ...hello, model: 'text-embedding-3-small' }, 400, 'invalid_parameter_value', 'model'],
      ['tool not a function', { ...hello, tools: [{ type: 'web_search' }] }, 400, 'invalid_tool_spec', 'tools[0].type'],
      ['tools not JSON', { ...hello, tools: '[{' }, 400, 'invalid_tool_spec_parse', 'tools'],
      [
        'tool_choice unknown tool',
        {
          ...hello,
          tools: [{ type: 'function', function: { name: 'a' } }],
          tool_choice: { type: 'function', function: { name: 'b' } },
        },
        400,
        'tool_choice_unsupported',
      ],
      ['tool_choice required without tools', { ...hello, tool_choice: 'required' }, 400, 'tool_choice_unsupported'],
      [
        'json_schema without name',
        { ...hello, response_format: { type: 'json_schema', json_schema: { schema: { type: 'object' } } } },
        400,
        'invalid_json_schema',
      ],
      [
        'strict schema not closed',
        {
          ...hello,
          response_format: {
            type: 'json_schema',
            json_schema: {
              name: 'x',
              strict: true,
              schema: { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] },
            },
          },
        },
        400,
        'invalid_json_schema',
      ],
      [
        'strict schema missing required',
        {
          ...hello,
          response_format: {
            type: 'json_schema',
            json_schema: {
              name: 'x',
              strict: true,
              schema: { type: 'object', properties: { a: { type: 'string' } }, additionalProperties: false },
            },
          },
        },
        400,
        'invalid_json_schema',
      ],
      [
        'image to a text-only model',
        {
          model: 'local/stories260k',
          messages: [
            { role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://example.com/a.png' } }] },
          ],
        },
        400,
        'image_input_not_supported',
      ],
      [
        'prompt beyond the context',
        { model: 'local/stories260k', messages: [{ role: 'user', content: 'word '.repeat(3000) }] },
        400,
        'context_length_exceeded',
      ],
      // no search provider is configured on this bench (test/web-search.test.ts has them)
      ['web search, none configured', { ...hello, web_search: true }, 503, 'model_not_available', 'web_search'],
      [
        'provider object unknown field',
        { ...hello, provider: { bogus: 1 } },
        400,
        'invalid_parameter_value',
        'provider',
      ],
      [
        'incompatible quantizations',
        { ...hello, provider: { quantizations: ['fp4'], min_quantization: 'fp8' } },
        400,
        'invalid_parameter_value',
        'provider.quantizations',
      ],
    ];
    for (const [what, body, status, code, param] of cases) {
      it(`${what} → ${status} ${code}`, async () => {
        const { key, accountId } = await b.account('1');
        const res = await b.post(key, body);
        const json = await res.json();
        assert.equal(res.status, status, JSON.stringify(json));
        assert.equal(json.error.code, code);
        if (param) assert.equal(json.error.param, param);
        assert.ok(json.error.message.length > 10);
        assert.equal((await b.usd(accountId)).amount, parseAmount('1', 'USD'));
      });
    }

    it('tools over TOOL_SPEC_MAX_BYTES → 413 tool_spec_too_large', async () => {
      const { key } = await b.account();
      process.env.TOOL_SPEC_MAX_BYTES = '200';
      try {
        const res = await b.post(key, {
          ...hello,
          tools: [{ type: 'function', function: { name: 'f', description: 'x'.repeat(300) } }],
        });
        assert.equal(res.status, 413);
        assert.equal((await res.json()).error.code, 'tool_spec_too_large');
      } finally {
        delete process.env.TOOL_SPEC_MAX_BYTES;
      }
    });

    it('402 with the amounts when the balance cannot cover the worst case', async () => {
      const { key } = await b.account('0.000001');
      const res = await b.post(key, hello);
      assert.equal(res.status, 402);
      const json = await res.json();
      assert.equal(json.error.code, 'insufficient_balance');
      assert.match(json.error.message, /lower max_tokens/);
    });

    it('a subscription-only key cannot make paid requests (no subscription covers them)', async () => {
      const { key } = await b.account('1', { billingMode: 'subscription_only' });
      const res = await b.post(key, hello);
      assert.equal(res.status, 402);
      assert.equal((await res.json()).error.code, 'subscription_required');
    });

    it('model_not_available for a model whose providers are not configured, naming the setting that enables it', async () => {
      const { key } = await b.account();
      const res = await b.post(key, { ...hello, model: 'anthropic/claude-sonnet-4' });
      assert.equal(res.status, 503);
      const { error } = await res.json();
      assert.equal(error.code, 'model_not_available');
      assert.match(error.message, /Set ANTHROPIC_API_KEY to enable it\.$/);
    });
  });

  describe('money under concurrency', () => {
    it('60 concurrent requests at a balance that covers a few: no overspend, books balance', async () => {
      const { key, accountId } = await b.account('0.02');
      // each reserves 16000 output tokens' worth (~$0.01): only one or two fit at once
      const results = await Promise.all(
        Array.from({ length: 60 }, () => b.post(key, { ...hello, max_tokens: 16000 }).then((r) => r.status)),
      );
      assert.ok(
        results.every((s) => s === 200 || s === 402),
        JSON.stringify(results),
      );
      assert.ok(results.includes(402) && results.includes(200));
      const bal = await b.usd(accountId);
      assert.equal(bal.held, 0n);
      assert.ok(bal.amount >= 0n);
      await assertBooksBalance(accountId);
    });
  });
});
