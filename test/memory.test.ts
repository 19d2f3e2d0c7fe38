// Conversation memory (POST /api/v1/memory): long synthetic conversations compressed without a
// model to fit the context limit (system prompt kept, recent turns verbatim, older turns
// summarised, tool noise dropped), deterministic; the spec's limits, header override and plain
// `{error}` bodies; billed once at 5.00 / 2.50 cached / 10.00 per 1M tokens, cached for messages
// seen before, nothing for failures; a race; and the Temporal sweeper deleting expired memories.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { newAccount, startApi, apiPost } from './support/api.js';
import { assertBooksBalance, settledBalances } from './support/books.js';
import { GPT_4O_MINI, MEMORY, textCost } from './support/prices.js';
import { useChatBench } from './support/chatEnv.js';
import { useTemporal } from './support/temporal.js';
import { config } from '../activities/config.js';
import { parseAmount } from '../activities/core/money.js';
import { db } from '../activities/db.js';

interface Msg {
  role: string;
  content?: unknown;
  tool_calls?: unknown;
  tool_call_id?: string;
}

/** The estimate the service documents: 4 bytes a token, rounded up, plus 4 a message. */
const tokens = (text: string) => Math.ceil(Buffer.byteLength(text) / 4);
const TOPICS = ['gardening', 'invoices', 'kubernetes', 'violin', 'sourdough', 'marathon', 'taxes', 'astronomy'];

/** A long conversation: a system prompt, `turns` user/assistant pairs about rotating topics, tool noise. */
function conversation(turns: number, seed = 'a'): Msg[] {
  const out: Msg[] = [{ role: 'system', content: 'You are a patient assistant for the Hartley family.' }];
  for (let i = 0; i < turns; i++) {
    const topic = TOPICS[i % TOPICS.length];
    out.push({
      role: 'user',
      content: `Question ${seed}${i} about ${topic}: what should I do next with my ${topic} plan? It has been a week.`,
    });
    if (i % 5 === 2) {
      out.push({
        role: 'assistant',
        content: null,
        tool_calls: [{ id: `c${i}`, type: 'function', function: { name: 'lookup', arguments: '{"q":"x"}' } }],
      });
      out.push({ role: 'tool', tool_call_id: `c${i}`, content: `TOOLNOISE ${'x'.repeat(400)}` });
    }
    out.push({
      role: 'assistant',
      content: `For ${topic}, step ${i} is to review the ${topic} notes. Then write down one change. Finally check back tomorrow.`,
    });
  }
  return out;
}

describe('memory (POST /api/v1/memory)', function () {
  this.timeout(60_000);
  let api: Awaited<ReturnType<typeof startApi>>;
  before(async () => {
    api = await startApi();
  });
  after(() => api.close());
  afterEach(() => assertBooksBalance());

  const post = (key: string | null, body: unknown, headers: Record<string, string> = {}) =>
    apiPost(api.base, '/api/v1/memory', body, { key, headers });
  const spent = async (accountId: string, start = '10') =>
    parseAmount(start, 'USD') - (await settledBalances(accountId)).USD.amount;
  type Answer = {
    messages: Array<{ role: string; content: string }>;
    usage: {
      prompt_tokens: number;
      completion_tokens: number;
      total_tokens: number;
      prompt_tokens_details: { cached_tokens: number };
    };
    cost: number;
  };

  it('a long conversation fits half the context limit: system kept, latest turns verbatim, older summarised, no tool noise', async () => {
    const { key, accountId } = await newAccount();
    const messages = conversation(400);
    const res = await post(key, { messages, model_context_limit: 12_000 });
    assert.equal(res.status, 200, await res.clone().text());
    const a = (await res.json()) as Answer;
    assert.equal(a.messages.length, 1);
    assert.equal(a.messages[0].role, 'system');
    const c = a.messages[0].content;
    assert.ok(tokens(c) <= 6_000, `compressed to ${tokens(c)} tokens`);
    assert.equal(a.usage.completion_tokens, tokens(c));
    assert.ok(c.includes('You are a patient assistant for the Hartley family.'));
    // the last user and assistant turns, verbatim
    assert.ok(c.includes(String(messages.at(-2)!.content)));
    assert.ok(c.includes(String(messages.at(-1)!.content)));
    assert.ok(c.includes('## Summary of earlier turns'));
    assert.ok(!c.includes('TOOLNOISE') && !c.includes('lookup'));
    // older topics survive in the summaries
    for (const t of TOPICS) assert.ok(c.includes(t), `topic ${t}`);
    // input = every message read (tool noise is not read), 4 per message of framing
    const read = messages.filter((m) => m.role !== 'tool' && typeof m.content === 'string');
    const input = read.reduce((n, m) => n + tokens(m.content as string) + 4, 0);
    assert.equal(a.usage.prompt_tokens, input);
    assert.equal(a.usage.total_tokens, input + tokens(c));
    assert.equal(a.usage.prompt_tokens_details.cached_tokens, 0);
    const expected = textCost(MEMORY, { input, output: tokens(c) });
    assert.equal(await spent(accountId), expected);
    assert.equal(a.cost, Number(expected) / 1e9);
  });

  it('is deterministic, and a short conversation comes back whole', async () => {
    const { key } = await newAccount();
    const messages = conversation(300, 'd');
    const one = (await (await post(key, { messages })).json()) as Answer;
    const two = (await (await post(key, { messages })).json()) as Answer;
    assert.equal(one.messages[0].content, two.messages[0].content);
    const short = conversation(3, 's');
    const s = (await (await post(key, { messages: short })).json()) as Answer;
    for (const m of short)
      if (typeof m.content === 'string' && m.role !== 'tool') assert.ok(s.messages[0].content.includes(m.content));
  });

  it('model_context_limit under 10,000 is raised to 10,000; a larger limit keeps more', async () => {
    const { key } = await newAccount();
    const messages = conversation(600, 'l');
    const tiny = (await (await post(key, { messages, model_context_limit: 10 })).json()) as Answer;
    assert.ok(tokens(tiny.messages[0].content) <= 5_000);
    assert.ok(tokens(tiny.messages[0].content) > 4_000, 'the budget of a 10,000 window is used');
    const big = (await (await post(key, { messages, model_context_limit: 40_000 })).json()) as Answer;
    assert.ok(tokens(big.messages[0].content) > 10_000 && tokens(big.messages[0].content) <= 20_000);
  });

  it('messages seen before are billed as cached input', async () => {
    const { key, accountId } = await newAccount();
    const first = conversation(50, 'c');
    const a = (await (await post(key, { messages: first })).json()) as Answer;
    const more = [...first, { role: 'user', content: 'And one more thing about violin.' }];
    const b = (await (await post(key, { messages: more })).json()) as Answer;
    assert.equal(b.usage.prompt_tokens_details.cached_tokens, a.usage.prompt_tokens);
    assert.equal(b.usage.prompt_tokens, a.usage.prompt_tokens + tokens('And one more thing about violin.') + 4);
    // another account has seen nothing
    const other = await newAccount();
    const o = (await (await post(other.key, { messages: first })).json()) as Answer;
    assert.equal(o.usage.prompt_tokens_details.cached_tokens, 0);
    const expected =
      textCost(MEMORY, { input: a.usage.prompt_tokens, output: a.usage.completion_tokens }) +
      textCost(MEMORY, {
        input: b.usage.prompt_tokens,
        cached: a.usage.prompt_tokens,
        output: b.usage.completion_tokens,
      });
    assert.equal(await spent(accountId), expected);
  });

  it('a key restricted to other providers may still use memory (nothing leaves the gateway)', async () => {
    const { key } = await newAccount('10', { providerAllow: ['openai'], zdrOnly: true });
    const res = await post(key, { messages: conversation(2, 'r') });
    assert.equal(res.status, 200, await res.clone().text());
  });

  it('stores the memory for expiration_days; the header overrides the body', async () => {
    const { key, accountId } = await newAccount();
    const ok = async (body: unknown, headers?: Record<string, string>) => {
      const r = await post(key, body, headers);
      assert.equal(r.status, 200, await r.clone().text());
    };
    await ok({ messages: conversation(2, 'e') });
    await ok({ messages: conversation(2, 'f'), expiration_days: 7 });
    await ok({ messages: conversation(2, 'g'), expiration_days: 7 }, { memory_expiration_days: '365' });
    const { rows } = await db().pool.query(
      `SELECT round(extract(epoch FROM expires_at - created_at) / 86400) AS days FROM memories WHERE account_id = $1 ORDER BY created_at`,
      [accountId],
    );
    assert.deepEqual(
      rows.map((r) => Number(r.days)),
      [30, 7, 365],
    );
  });

  it('errors are plain {error} bodies with the spec’s statuses, and cost nothing', async () => {
    const { key, accountId } = await newAccount();
    const expectError = async (res: Response, status: number, match: RegExp) => {
      const text = await res.text();
      assert.equal(res.status, status, text);
      const j = JSON.parse(text);
      assert.equal(typeof j.error, 'string');
      assert.match(j.error, match);
    };
    for (const body of [{}, { messages: [] }, { messages: 'hi' }])
      await expectError(await post(key, body), 400, /^messages must be a non-empty array$/);
    await expectError(await post(key, { messages: [{ role: 'robot', content: 'x' }] }), 400, /role/);
    await expectError(
      await post(key, { messages: [{ role: 'user', content: 'x' }], expiration_days: 0 }),
      400,
      /expiration_days/,
    );
    await expectError(
      await post(key, { messages: [{ role: 'user', content: 'x' }], expiration_days: 366 }),
      400,
      /expiration_days/,
    );
    // stored in an int4 column: past it is the caller's error, named, not the provider's
    await expectError(
      await post(key, { messages: [{ role: 'user', content: 'x' }], model_context_limit: 2 ** 31 }),
      400,
      /model_context_limit/,
    );
    await expectError(
      await post(key, { messages: [{ role: 'user', content: 'x' }] }, { memory_expiration_days: '400' }),
      400,
      /memory_expiration_days/,
    );
    await expectError(await post(key, '{"messages": ['), 400, /JSON/i);
    await expectError(await post(null, { messages: [{ role: 'user', content: 'x' }] }), 401, /API key/);
    const poor = await newAccount('0');
    await expectError(
      await post(poor.key, { messages: [{ role: 'user', content: 'x' }] }),
      402,
      /^Insufficient balance/,
    );
    assert.equal(await spent(accountId), 0n);
  });

  it('a race: many requests against a small balance never overspend; each success is charged once', async () => {
    const messages = [{ role: 'user', content: 'Remember that my sister is called Ana.' }];
    // input 10 + 4 tokens; output a few dozen: well under a hundredth of a cent each
    const { key, accountId } = await newAccount('0.003');
    const n = 20;
    const answers = await Promise.all(
      Array.from({ length: n }, () =>
        post(key, { messages }).then(async (r) => ({ status: r.status, body: await r.json() })),
      ),
    );
    const ok = answers.filter((a) => a.status === 200);
    assert.equal(ok.length + answers.filter((a) => a.status === 402).length, n);
    assert.ok(ok.length > 0 && ok.length < n, `successes: ${ok.length}`);
    let expected = 0n;
    for (const a of ok) {
      const u = (a.body as Answer).usage;
      expected += textCost(MEMORY, {
        input: u.prompt_tokens,
        cached: u.prompt_tokens_details.cached_tokens,
        output: u.completion_tokens,
      });
    }
    assert.equal(await spent(accountId, '0.003'), expected);
  });

  it('the sweeper workflow deletes expired memories and seen-message records, and only those', async () => {
    const t = await useTemporal();
    const { key, accountId } = await newAccount();
    await post(key, { messages: conversation(2, 'x') });
    await post(key, { messages: conversation(2, 'y') });
    const { rows } = await db().pool.query(`SELECT id FROM memories WHERE account_id = $1 ORDER BY created_at`, [
      accountId,
    ]);
    await db().pool.query(`UPDATE memories SET expires_at = now() - interval '1 second' WHERE id = $1`, [rows[0].id]);
    await db().pool.query(
      `UPDATE memory_segments SET expires_at = now() - interval '1 second' WHERE account_id = $1 AND tokens < 20`,
      [accountId],
    );
    const deleted = await t.client.workflow.execute('sweepMemories', {
      taskQueue: config.taskQueue,
      workflowId: `memories-${randomUUID()}`,
      args: [],
    });
    assert.ok((deleted as number) >= 1);
    const left = await db().pool.query(`SELECT id FROM memories WHERE account_id = $1`, [accountId]);
    assert.deepEqual(
      left.rows.map((r) => r.id),
      [rows[1].id],
    );
    const expired = await db().pool.query(
      `SELECT count(*)::int AS n FROM memory_segments WHERE account_id = $1 AND expires_at <= now()`,
      [accountId],
    );
    assert.equal(expired.rows[0].n, 0);
  });
});

describe('the :memory model suffix on chat', function () {
  this.timeout(60_000);
  const bench = useChatBench();

  it('sends the compressed memory and the latest user turn; memory and answer each billed once', async () => {
    const b = bench();
    const { key, accountId } = await b.account();
    const messages = [...conversation(300, 'm'), { role: 'user', content: 'So what about the violin?' }];
    const res = await b.post(key, { model: 'gpt-4o-mini:memory', messages, max_tokens: 20 });
    assert.equal(res.status, 200, await res.clone().text());
    const answer = (await res.json()) as { usage: { prompt_tokens: number; completion_tokens: number } };
    const sent = b.openai.last().body.messages as Array<{ role: string; content: string }>;
    assert.equal(sent.length, 2);
    assert.equal(sent[0].role, 'system');
    assert.match(sent[0].content, /^\[Memory of an earlier conversation/);
    assert.deepEqual(sent[1], { role: 'user', content: 'So what about the violin?' });
    // gpt-4o-mini's 128,000-token window: the memory takes at most half
    assert.ok(tokens(sent[0].content) <= 64_000);
    const read = messages.slice(0, -1).filter((m) => m.role !== 'tool' && typeof m.content === 'string');
    const memoryIn = read.reduce((n, m) => n + tokens(m.content as string) + 4, 0);
    const expected =
      textCost(MEMORY, { input: memoryIn, output: tokens(sent[0].content) }) +
      textCost(GPT_4O_MINI, { input: answer.usage.prompt_tokens, output: answer.usage.completion_tokens });
    assert.equal(parseAmount('10', 'USD') - (await b.usd(accountId)).amount, expected);
  });

  it('streams too: the memory goes first, the answer streams, both charged once', async () => {
    const b = bench();
    const { key, accountId } = await b.account();
    const messages = [...conversation(100, 's'), { role: 'user', content: 'Summarise the taxes part.' }];
    const res = await b.post(key, {
      model: 'gpt-4o-mini:memory',
      messages,
      max_tokens: 20,
      stream: true,
      stream_options: { include_usage: true },
    });
    assert.equal(res.status, 200);
    const text = await res.text();
    assert.match(text, /data: \[DONE\]/);
    const usage = text
      .split('\n')
      .filter((l) => l.startsWith('data: {'))
      .map((l) => JSON.parse(l.slice(6)))
      .find((f) => f.usage)?.usage as { prompt_tokens: number; completion_tokens: number };
    const sent = b.openai.last().body.messages as Array<{ role: string; content: string }>;
    assert.equal(sent.length, 2);
    const read = messages.slice(0, -1).filter((m) => m.role !== 'tool' && typeof m.content === 'string');
    const memoryIn = read.reduce((n, m) => n + tokens(m.content as string) + 4, 0);
    const expected =
      textCost(MEMORY, { input: memoryIn, output: tokens(sent[0].content) }) +
      textCost(GPT_4O_MINI, { input: usage.prompt_tokens, output: usage.completion_tokens });
    // a refund of an answer taken for undelivered would land after the stream ends: give it time
    await new Promise((r) => setTimeout(r, 500));
    const { rows } = await db().pool.query(
      `SELECT reason FROM ledger_entries WHERE account_id = $1 AND kind = 'refund'`,
      [accountId],
    );
    assert.deepEqual(rows, [], 'nothing given back: the streamed answer, and its memory, reached the caller');
    assert.equal(parseAmount('10', 'USD') - (await b.usd(accountId)).amount, expected);
  });

  it('memory_balance_required when the balance cannot pay for the memory; a failed answer gives the memory back', async () => {
    const b = bench();
    const messages = [...conversation(20, 'n'), { role: 'user', content: 'And now?' }];
    const poor = await b.account('0');
    const r = await b.post(poor.key, { model: 'gpt-4o-mini:memory', messages, max_tokens: 20 });
    assert.equal(r.status, 402);
    assert.equal(((await r.json()) as { error: { code: string } }).error.code, 'memory_balance_required');
    const { key, accountId } = await b.account();
    b.openai.script({ status: 400, error: { message: 'bad request' } });
    const failed = await b.post(key, { model: 'gpt-4o-mini:memory', messages, max_tokens: 20 });
    assert.equal(failed.status, 400);
    assert.equal((await b.usd(accountId)).amount, parseAmount('10', 'USD'));
  });
});
