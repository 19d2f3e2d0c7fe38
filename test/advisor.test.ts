// biome-ignore-all lint/suspicious/noExplicitAny: wire JSON, read field by field
// The advisor on chat completions (activities/inference/addOns/advisor.ts, README "Advisor"): required mode (the advisor
// first, its guidance before the latest user turn), auto mode with and without the executor's call
// of `consult_advisor` (the advice goes back as that tool's result), against the loopback OpenAI
// and Anthropic upstreams and the built-in local model; every refusal (400, nothing charged,
// nothing sent); each phase charged once, exactly; a failed later phase gives the earlier back;
// concurrent requests on one account cannot overspend.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startOpenAIUpstream, type OpenAIUpstream } from './support/upstreams/openai.js';
import { startAnthropicUpstream, type AnthropicUpstream } from './support/upstreams/anthropic.js';
import { useProviderEnv } from './support/providerEnv.js';
import { newAccount, startApi, apiPost } from './support/api.js';
import { assertBooksBalance, settledBalances } from './support/books.js';
import { CLAUDE_HAIKU, GPT_4O_MINI, textCost } from './support/prices.js';
import { parseAmount } from '../activities/core/money.js';
import { db } from '../activities/db.js';
import { flushRequestRecords } from '../activities/metering/records.js';
import { forgetCoverage } from '../activities/ledger/allowance.js';
import { createUser } from '../activities/accounts/users.js';
import { createSession } from '../activities/accounts/sessions.js';
import { credit } from '../activities/ledger/ledger.js';
import { findLocalModel } from '../activities/providers/local/modelFiles.js';

const EXECUTOR = 'openai/gpt-4o-mini';
const ADVISOR = 'anthropic/claude-3-5-haiku';
const question = { role: 'user', content: 'Plan a database migration. What is the riskiest assumption?' };
const ask = (advisor: unknown, extra: Record<string, unknown> = {}) => ({
  model: EXECUTOR,
  messages: [{ role: 'system', content: 'You are terse.' }, question],
  advisor,
  ...extra,
});
const usd = (s: string) => parseAmount(s, 'USD');
const nano = (n: number) => BigInt(Math.round(n * 1e9));
const textOf = (content: any): string =>
  typeof content === 'string' ? content : (content ?? []).map((p: any) => p.text ?? '').join('');

describe('chat completions: the advisor', function () {
  this.timeout(90_000);
  let openai: OpenAIUpstream;
  let openrouter: OpenAIUpstream;
  let anthropic: AnthropicUpstream;
  let api: Awaited<ReturnType<typeof startApi>>;
  let restoreEnv: () => Promise<void>;

  before(async () => {
    openai = await startOpenAIUpstream({ strict: true });
    openrouter = await startOpenAIUpstream({ basePath: '/api/v1', apiKey: 'sk-or-loopback' });
    anthropic = await startAnthropicUpstream();
    restoreEnv = await useProviderEnv({
      OPENAI_API_KEY: openai.apiKey,
      OPENAI_BASE_URL: openai.url,
      OPENROUTER_API_KEY: openrouter.apiKey,
      OPENROUTER_BASE_URL: openrouter.url,
      ANTHROPIC_API_KEY: anthropic.apiKey,
      ANTHROPIC_BASE_URL: anthropic.url,
    });
    api = await startApi();
  });
  after(async () => {
    await api.close();
    await openai.close();
    await openrouter.close();
    await anthropic.close();
    await restoreEnv();
  });
  beforeEach(() => {
    openai.reset();
    openrouter.reset();
    anthropic.requests.length = 0;
    anthropic.always(undefined);
  });
  afterEach(() => assertBooksBalance());

  const post = (key: string, body: unknown, headers: Record<string, string> = {}, path = '/api/v1/chat/completions') =>
    apiPost(api.base, path, body, { key, headers });
  const balance = async (accountId: string) => (await settledBalances(accountId)).USD;

  /** The record of each phase, by request id. */
  async function records(requestId: string) {
    await flushRequestRecords();
    const rows = await db().prisma.requestRecord.findMany({ where: { id: { startsWith: requestId } } });
    return new Map(rows.map((r) => [r.id, r]));
  }

  describe('required mode', () => {
    it('asks the advisor first, puts its guidance before the latest user turn, and bills each phase exactly once', async () => {
      const { key, accountId } = await newAccount('1');
      anthropic.script({ text: 'Check the rollback path first.', usage: { input_tokens: 120, output_tokens: 9 } });
      openai.script({
        text: 'The riskiest assumption is the rollback.',
        usage: { prompt_tokens: 210, completion_tokens: 8 },
      });
      const res = await post(key, ask({ model: ADVISOR, mode: 'required' }));
      const body = await res.json();
      assert.equal(res.status, 200, JSON.stringify(body));

      // the advisor read its instructions, the conversation and a request for guidance
      assert.equal(anthropic.requests.length, 1);
      const sentToAdvisor = anthropic.last().body;
      assert.match(textOf(sentToAdvisor.system), /advisor to another AI model/);
      assert.match(textOf(sentToAdvisor.system), /You are terse\./);
      assert.match(JSON.stringify(sentToAdvisor.messages), /riskiest assumption/);
      assert.match(textOf(sentToAdvisor.messages.at(-1).content), /Write your guidance for the executor/);
      assert.ok(sentToAdvisor.max_tokens <= 1024);
      // the executor got the advice as a system message just before the user's question
      assert.equal(openai.requests.length, 1);
      const sent = openai.last().body;
      const at = sent.messages.findIndex((m: any) => m.role === 'user');
      assert.equal(sent.messages[at - 1].role, 'system');
      assert.match(
        textOf(sent.messages[at - 1].content),
        /Guidance from an advisor model \(anthropic\/claude-3-5-haiku\)/,
      );
      assert.match(textOf(sent.messages[at - 1].content), /Check the rollback path first\./);
      assert.equal(sent.tools, undefined);
      assert.equal(sent.advisor, undefined);

      // the answer is the executor's, in the standard shape
      assert.equal(body.object, 'chat.completion');
      assert.equal(body.model, EXECUTOR);
      assert.equal(body.provider, 'openai');
      assert.equal(body.choices[0].message.content, 'The riskiest assumption is the rollback.');
      assert.equal(body.choices[0].finish_reason, 'stop');
      // each phase shown and charged on its own; the top-level bill is their sum
      const advisorCost = textCost(CLAUDE_HAIKU, { input: 120, output: 9 });
      const executorCost = textCost(GPT_4O_MINI, { input: 210, output: 8 });
      const requestId = res.headers.get('x-request-id')!;
      assert.deepEqual(
        body.advisor.phases.map((p: any) => [
          p.phase,
          p.model,
          p.provider,
          p.request_id,
          p.usage.prompt_tokens,
          nano(p.cost),
        ]),
        [
          ['advisor', ADVISOR, 'anthropic', `${requestId}:1`, 120, advisorCost],
          ['executor', EXECUTOR, 'openai', requestId, 210, executorCost],
        ],
      );
      assert.equal(body.advisor.model, ADVISOR);
      assert.equal(body.advisor.mode, 'required');
      assert.equal(body.advisor.consulted, true);
      assert.equal(nano(body.cost), advisorCost + executorCost);
      assert.equal(body.usage.prompt_tokens, 330);
      assert.equal(body.usage.completion_tokens, 17);
      const bal = await balance(accountId);
      assert.equal(bal.amount, usd('1') - advisorCost - executorCost);
      assert.equal(bal.held, 0n);
      const recs = await records(requestId);
      assert.equal(recs.get(`${requestId}:1`)?.status, 'completed');
      assert.equal(recs.get(`${requestId}:1`)?.providerId, 'anthropic');
      assert.equal(recs.get(requestId)?.status, 'completed');
      // each phase's cost can be looked up by its own request id (GET /api/v1/billing/{requestId})
      for (const [id, cost] of [
        [`${requestId}:1`, advisorCost],
        [requestId, executorCost],
      ] as const) {
        const looked = await fetch(`${api.base}/api/v1/billing/${id}`, { headers: { authorization: `Bearer ${key}` } });
        assert.equal(looked.status, 200);
        assert.equal(usd((await looked.json()).cost), cost);
      }
    });

    it('the built-in local model can advise (its own route and price)', async function () {
      if (!findLocalModel('stories260K.gguf')) this.skip();
      const { key, accountId } = await newAccount('1');
      openai.script({ text: 'Done.', usage: { prompt_tokens: 300, completion_tokens: 2 } });
      const res = await post(key, {
        model: EXECUTOR,
        messages: [{ role: 'user', content: 'Once upon a time' }],
        advisor: { model: 'local/stories260k', mode: 'required' },
      });
      const body = await res.json();
      assert.equal(res.status, 200, JSON.stringify(body));
      const [advice, answer] = body.advisor.phases;
      assert.equal(advice.provider, 'local');
      assert.ok(advice.usage.completion_tokens > 0 && advice.usage.completion_tokens <= 256);
      // the local model's price: 0.02 USD per 1M tokens either way, no markup
      const localCost = BigInt(advice.usage.prompt_tokens + advice.usage.completion_tokens) * 20n;
      assert.equal(nano(advice.cost), localCost);
      assert.equal(nano(answer.cost), textCost(GPT_4O_MINI, { input: 300, output: 2 }));
      assert.equal((await balance(accountId)).amount, usd('1') - localCost - nano(answer.cost));
      // what the local model wrote reached the executor
      assert.match(
        JSON.stringify(openai.last().body.messages),
        /Guidance from an advisor model \(local\/stories260k\)/,
      );
    });

    it('a failed executor phase fails the request and gives the advisor phase back: nothing is charged', async () => {
      const { key, accountId } = await newAccount('1');
      anthropic.script({ text: 'Advice.', usage: { input_tokens: 50, output_tokens: 2 } });
      openai.script({ status: 400, error: { message: 'bad things' } });
      const res = await post(key, ask({ model: ADVISOR, mode: 'required' }));
      assert.equal(res.status, 400);
      assert.equal(anthropic.requests.length, 1);
      const bal = await balance(accountId);
      assert.equal(bal.amount, usd('1'));
      assert.equal(bal.held, 0n);
      const requestId = res.headers.get('x-request-id')!;
      const recs = await records(requestId);
      assert.equal(recs.get(`${requestId}:1`)?.status, 'failed');
      assert.equal(recs.get(requestId)?.status, 'failed');
    });

    it('an advisor that fails: the executor never runs, nothing is charged', async () => {
      const { key, accountId } = await newAccount('1');
      anthropic.script({ error: { status: 400, message: 'no' } });
      const res = await post(key, ask({ model: ADVISOR, mode: 'required' }));
      assert.equal(res.status, 400);
      assert.equal(openai.requests.length, 0);
      assert.equal((await balance(accountId)).amount, usd('1'));
    });

    it('402 before any model runs when the balance cannot cover every phase', async () => {
      const { key, accountId } = await newAccount('0.003');
      const res = await post(key, ask({ model: ADVISOR, mode: 'required' }));
      assert.equal(res.status, 402);
      assert.equal((await res.json()).error.code, 'insufficient_balance');
      assert.equal(anthropic.requests.length, 0);
      assert.equal(openai.requests.length, 0);
      assert.equal((await balance(accountId)).amount, usd('0.003'));
    });
  });

  describe('auto mode', () => {
    it("the executor calls consult_advisor: the advice comes back as the tool's result, three phases billed", async () => {
      const { key, accountId } = await newAccount('1');
      openai.script(
        (req) => {
          assert.deepEqual(
            req.body.tools.map((t: any) => t.function.name),
            ['consult_advisor'],
          );
          assert.equal(req.body.tool_choice, 'auto');
          return {
            text: 'Let me check.',
            toolCalls: [{ id: 'call_adv', name: 'consult_advisor', arguments: '{"question":"Is a rollback needed?"}' }],
            usage: { prompt_tokens: 150, completion_tokens: 12 },
          };
        },
        { text: 'Yes: plan the rollback first.', usage: { prompt_tokens: 260, completion_tokens: 7 } },
      );
      anthropic.script({ text: 'Always rehearse the rollback.', usage: { input_tokens: 140, output_tokens: 5 } });
      const res = await post(key, ask({ model: ADVISOR, mode: 'auto' }));
      const body = await res.json();
      assert.equal(res.status, 200, JSON.stringify(body));

      // the advisor was asked the executor's question
      assert.match(
        textOf(anthropic.last().body.messages.at(-1).content),
        /The executor asks you: Is a rollback needed\?/,
      );
      // the continuation: the tool call and its result, the tool still declared but not to be called
      assert.equal(openai.requests.length, 2);
      const cont = openai.last().body;
      assert.equal(cont.tool_choice, 'none');
      const [call, result] = cont.messages.slice(-2);
      assert.equal(call.role, 'assistant');
      assert.equal(call.tool_calls[0].id, 'call_adv');
      assert.equal(call.tool_calls[0].function.name, 'consult_advisor');
      assert.equal(result.role, 'tool');
      assert.equal(result.tool_call_id, 'call_adv');
      assert.equal(textOf(result.content), 'Always rehearse the rollback.');

      // the caller sees the final text, never the gateway's tool call
      assert.equal(body.choices[0].message.content, 'Yes: plan the rollback first.');
      assert.equal(body.choices[0].message.tool_calls, undefined);
      assert.equal(body.choices[0].finish_reason, 'stop');
      const costs = [
        textCost(GPT_4O_MINI, { input: 150, output: 12 }),
        textCost(CLAUDE_HAIKU, { input: 140, output: 5 }),
        textCost(GPT_4O_MINI, { input: 260, output: 7 }),
      ];
      const requestId = res.headers.get('x-request-id')!;
      assert.deepEqual(
        body.advisor.phases.map((p: any) => [p.phase, p.request_id, nano(p.cost)]),
        [
          ['executor', requestId, costs[0]],
          ['advisor', `${requestId}:1`, costs[1]],
          ['executor', `${requestId}:2`, costs[2]],
        ],
      );
      assert.equal(body.advisor.consulted, true);
      const total = costs.reduce((a, c) => a + c, 0n);
      assert.equal(nano(body.cost), total);
      const bal = await balance(accountId);
      assert.equal(bal.amount, usd('1') - total);
      assert.equal(bal.held, 0n);
    });

    it('an Anthropic executor consults an OpenAI advisor: tool_use, then tool_result with tool_choice none', async () => {
      const { key, accountId } = await newAccount('1');
      anthropic.script(
        {
          toolCalls: [{ id: 'toolu_1', name: 'consult_advisor', input: { question: 'Rollback or not?' } }],
          usage: { input_tokens: 300, output_tokens: 20 },
        },
        { text: 'Rehearse the rollback.', usage: { input_tokens: 380, output_tokens: 6 } },
      );
      openai.script({ text: 'Yes, rehearse it.', usage: { prompt_tokens: 90, completion_tokens: 5 } });
      const res = await post(key, { ...ask({ model: EXECUTOR, mode: 'auto' }), model: ADVISOR });
      const body = await res.json();
      assert.equal(res.status, 200, JSON.stringify(body));
      assert.equal(anthropic.requests.length, 2);
      const [opening, cont] = anthropic.requests.map((r) => r.body);
      assert.deepEqual(
        opening.tools.map((t: any) => t.name),
        ['consult_advisor'],
      );
      assert.deepEqual(cont.tool_choice, { type: 'none' });
      const use = cont.messages.at(-2).content.find((b: any) => b.type === 'tool_use');
      const result = cont.messages.at(-1).content.find((b: any) => b.type === 'tool_result');
      assert.deepEqual(use.input, { question: 'Rollback or not?' });
      assert.equal(result.tool_use_id, 'toolu_1');
      assert.match(JSON.stringify(result.content), /Yes, rehearse it\./);
      assert.match(textOf(openai.last().body.messages.at(-1).content), /The executor asks you: Rollback or not\?/);
      assert.equal(body.choices[0].message.content, 'Rehearse the rollback.');
      const total =
        textCost(CLAUDE_HAIKU, { input: 300, output: 20 }) +
        textCost(GPT_4O_MINI, { input: 90, output: 5 }) +
        textCost(CLAUDE_HAIKU, { input: 380, output: 6 });
      assert.equal(nano(body.cost), total);
      assert.equal((await balance(accountId)).amount, usd('1') - total);
    });

    it('the executor answers without consulting: one phase charged, the others released', async () => {
      const { key, accountId } = await newAccount('1');
      openai.script({ text: 'Straight answer.', usage: { prompt_tokens: 150, completion_tokens: 3 } });
      const res = await post(key, ask({ model: ADVISOR, mode: 'auto' }));
      const body = await res.json();
      assert.equal(res.status, 200, JSON.stringify(body));
      assert.equal(anthropic.requests.length, 0);
      assert.equal(openai.requests.length, 1);
      assert.equal(body.choices[0].message.content, 'Straight answer.');
      assert.equal(body.advisor.consulted, false);
      assert.deepEqual(
        body.advisor.phases.map((p: any) => p.phase),
        ['executor'],
      );
      const cost = textCost(GPT_4O_MINI, { input: 150, output: 3 });
      assert.equal(nano(body.cost), cost);
      const bal = await balance(accountId);
      assert.equal(bal.amount, usd('1') - cost);
      assert.equal(bal.held, 0n);
      const requestId = res.headers.get('x-request-id')!;
      const recs = await records(requestId);
      assert.equal(recs.get(`${requestId}:1`)?.errorCode, 'unused');
      assert.equal(recs.get(`${requestId}:2`)?.errorCode, 'unused');
    });

    it('a continuation that calls the tool again instead of answering: not charged, and neither is the rest', async () => {
      const { key, accountId } = await newAccount('1');
      const again = { toolCalls: [{ id: 'c', name: 'consult_advisor', arguments: '{"question":"?"}' }] };
      openai.script(again, again);
      anthropic.script({ text: 'Advice.' });
      const res = await post(key, ask({ model: ADVISOR, mode: 'auto' }));
      assert.equal(res.status, 502);
      assert.equal((await res.json()).error.code, 'empty_response');
      assert.equal((await balance(accountId)).amount, usd('1'));
    });
  });

  describe('refusals: 400, nothing sent, nothing charged', () => {
    const cases: Array<[string, Record<string, unknown>, string, string]> = [
      ['streaming', ask({ model: ADVISOR, mode: 'required' }, { stream: true }), 'invalid_parameter_value', 'stream'],
      ['the same model', ask({ model: EXECUTOR, mode: 'required' }), 'invalid_parameter_value', 'advisor.model'],
      [
        'the same model by an alias',
        ask({ model: 'gpt-4o-mini', mode: 'auto' }),
        'invalid_parameter_value',
        'advisor.model',
      ],
      ['an unknown model', ask({ model: 'nope/never', mode: 'auto' }), 'invalid_parameter_value', 'advisor.model'],
      [
        'a model with a suffix',
        ask({ model: `${ADVISOR}:online`, mode: 'auto' }),
        'invalid_parameter_value',
        'advisor.model',
      ],
      [
        'an embedding model',
        ask({ model: 'openai/text-embedding-3-small', mode: 'auto' }),
        'invalid_parameter_value',
        'advisor.model',
      ],
      ['a bad mode', ask({ model: ADVISOR, mode: 'sometimes' }), 'invalid_parameter_value', 'advisor.mode'],
      ['no mode', ask({ model: ADVISOR }), 'missing_required_parameter', 'advisor.mode'],
      ['no model', ask({ mode: 'auto' }), 'missing_required_parameter', 'advisor.model'],
      [
        'an unknown field',
        ask({ model: ADVISOR, mode: 'auto', effort: 'high' }),
        'invalid_parameter_value',
        'advisor.effort',
      ],
      ['not an object', ask('anthropic/claude-3-5-haiku'), 'invalid_parameter_value', 'advisor'],
      [
        'client tools',
        ask({ model: ADVISOR, mode: 'auto' }, { tools: [{ type: 'function', function: { name: 'f' } }] }),
        'invalid_parameter_value',
        'tools',
      ],
      [
        'tool_choice',
        ask({ model: ADVISOR, mode: 'auto' }, { tool_choice: 'none' }),
        'invalid_parameter_value',
        'tool_choice',
      ],
      [
        'json_object',
        ask({ model: ADVISOR, mode: 'required' }, { response_format: { type: 'json_object' } }),
        'invalid_parameter_value',
        'response_format',
      ],
      [
        'json_schema',
        ask(
          { model: ADVISOR, mode: 'required' },
          { response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object' } } } },
        ),
        'invalid_parameter_value',
        'response_format',
      ],
      [
        'the questions format',
        ask(
          { model: ADVISOR, mode: 'required' },
          { response_format: { type: 'questions', questions: { ok: { type: 'noul', instructions: 'ok?' } } } },
        ),
        'invalid_parameter_value',
        'response_format',
      ],
      ['n > 1', ask({ model: ADVISOR, mode: 'required' }, { n: 2 }), 'invalid_parameter_value', 'n'],
      [
        'web search',
        ask({ model: ADVISOR, mode: 'required' }, { web_search: true }),
        'invalid_parameter_value',
        'web_search',
      ],
      [
        'auto mode with an executor that cannot call tools',
        { ...ask({ model: ADVISOR, mode: 'auto' }), model: 'local/stories260k' },
        'invalid_parameter_value',
        'advisor.mode',
      ],
      [
        'a TEE executor',
        { ...ask({ model: ADVISOR, mode: 'required' }), model: 'TEE/llama-3.3-70b-instruct' },
        'invalid_parameter_value',
        'advisor',
      ],
    ];
    for (const [what, body, code, param] of cases) {
      it(`${what} → 400 ${code} (${param})`, async () => {
        const { key, accountId } = await newAccount('1');
        const res = await post(key, body);
        const json = await res.json();
        assert.equal(res.status, 400, JSON.stringify(json));
        assert.equal(json.error.code, code, JSON.stringify(json));
        assert.equal(json.error.param, param, JSON.stringify(json));
        assert.ok(json.error.message.length > 20);
        assert.equal(openai.requests.length + openrouter.requests.length + anthropic.requests.length, 0);
        assert.equal((await balance(accountId)).amount, usd('1'));
      });
    }

    it('PII redaction (header or key default) → 400, nothing sent', async () => {
      const { key, accountId } = await newAccount('1');
      const res = await post(key, ask({ model: ADVISOR, mode: 'required' }), { redaction: 'true' });
      const json = await res.json();
      assert.equal(res.status, 400);
      assert.equal(json.error.param, 'advisor');
      assert.match(json.error.message, /redaction/);
      assert.equal(openai.requests.length + anthropic.requests.length, 0);
      assert.equal((await balance(accountId)).amount, usd('1'));
    });

    it('a session (not an API key) → 400 advisor_requires_api_key', async () => {
      const user = await createUser({
        email: `advisor-${process.pid}-${randomUUID().slice(0, 8)}@example.test`,
        name: 'Advised',
        password: 'advised password',
      });
      await credit({
        accountId: user.accountId,
        currency: 'USD',
        amount: usd('1'),
        reason: 'test funds',
        idempotencyKey: `test-funds:${user.accountId}`,
      });
      const session = await createSession(user.id, { method: 'password' });
      const res = await fetch(`${api.base}/api/v1/chat/completions`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          cookie: `switchyard_session=${session.token}`,
          origin: api.base,
        },
        body: JSON.stringify(ask({ model: ADVISOR, mode: 'required' })),
      });
      const json = await res.json();
      assert.equal(res.status, 400, JSON.stringify(json));
      assert.equal(json.error.code, 'advisor_requires_api_key');
      assert.equal(openai.requests.length + anthropic.requests.length, 0);
      assert.equal((await balance(user.accountId)).amount, usd('1'));
    });

    it('subscription billing → 400 advisor_requires_paygo; X-Billing-Mode: paygo pays from the balance', async () => {
      // a key limited to subscription billing
      const limited = await newAccount('1', { billingMode: 'subscription_only' });
      let res = await post(limited.key, ask({ model: ADVISOR, mode: 'required' }));
      assert.equal(res.status, 400);
      assert.equal((await res.json()).error.code, 'advisor_requires_paygo');
      // the subscription's own path
      const { key, accountId } = await newAccount('1');
      res = await post(key, ask({ model: ADVISOR, mode: 'required' }), {}, '/api/subscription/v1/chat/completions');
      assert.equal(res.status, 400);
      assert.equal((await res.json()).error.code, 'advisor_requires_paygo');
      // an account whose subscription covers the executor
      await db().pool.query(
        `INSERT INTO subscriptions (id, account_id, plan_id, period_start, period_end, price, daily_limit, monthly_limit, models)
         VALUES ($1, $2, 'local-starter', now(), now() + interval '1 hour', 0, 100, 100, $3)`,
        [`sub_${randomUUID()}`, accountId, [EXECUTOR]],
      );
      forgetCoverage([accountId]);
      res = await post(key, ask({ model: ADVISOR, mode: 'required' }));
      const json = await res.json();
      assert.equal(res.status, 400);
      assert.equal(json.error.code, 'advisor_requires_paygo');
      assert.match(json.error.message, /X-Billing-Mode: paygo/);
      assert.equal(openai.requests.length + anthropic.requests.length, 0);
      assert.equal((await balance(accountId)).amount, usd('1'));
      // asked for pay-as-you-go: both phases from the balance, no operation of the allowance spent
      anthropic.script({ text: 'Advice.', usage: { input_tokens: 10, output_tokens: 1 } });
      openai.script({ text: 'Answer.', usage: { prompt_tokens: 20, completion_tokens: 1 } });
      res = await post(key, ask({ model: ADVISOR, mode: 'required' }), { 'x-billing-mode': 'paygo' });
      assert.equal(res.status, 200);
      const cost = textCost(CLAUDE_HAIKU, { input: 10, output: 1 }) + textCost(GPT_4O_MINI, { input: 20, output: 1 });
      assert.equal((await balance(accountId)).amount, usd('1') - cost);
      const { rows } = await db().pool.query('SELECT daily_used FROM subscriptions WHERE account_id = $1', [accountId]);
      assert.equal(rows[0].daily_used, 0);
    });

    it("other surfaces refuse 'advisor' (offered on chat completions only)", async () => {
      const { key, accountId } = await newAccount('1');
      const advisor = { model: ADVISOR, mode: 'auto' };
      const elsewhere: Array<[string, Record<string, unknown>]> = [
        ['/api/v1/responses', { model: EXECUTOR, input: 'hi', advisor }],
        ['/api/v1/completions', { model: EXECUTOR, prompt: 'hi', advisor }],
        ['/api/talk-to-gpt', { model: EXECUTOR, prompt: 'hi', advisor }],
      ];
      for (const [path, body] of elsewhere) {
        const res = await post(key, body, { 'x-api-key': key }, path);
        const text = await res.text();
        assert.equal(res.status, 400, `${path}: ${text}`);
        assert.match(text, /'advisor' is offered on chat completions only/);
      }
      assert.equal(openai.requests.length, 0);
      assert.equal((await balance(accountId)).amount, usd('1'));
    });
  });

  describe('money under concurrency', () => {
    it('concurrent advisor requests on one account with just enough balance: each charged exactly, never negative', async () => {
      const { key: probeKey, accountId: probe } = await newAccount('1');
      const script = () => {
        anthropic.always({ text: 'Advice.', usage: { input_tokens: 100, output_tokens: 10 } });
        openai.defaults({ usage: { prompt_tokens: 100, completion_tokens: 10 } });
      };
      script();
      // what one request reserves: the balance it needs before it may run
      const body = ask({ model: ADVISOR, mode: 'required' }, { max_tokens: 20 });
      const one = await post(probeKey, body);
      assert.equal(one.status, 200);
      const perRequest = nano((await one.json()).cost);
      assert.equal((await balance(probe)).amount, usd('1') - perRequest);
      // a balance that holds about three requests' reservations, and twelve at once
      const { key, accountId } = await newAccount('0.015');
      const answers = await Promise.all(
        Array.from({ length: 12 }, () =>
          post(key, body).then(async (r) => ({ status: r.status, body: await r.json() })),
        ),
      );
      const ok = answers.filter((a) => a.status === 200);
      assert.ok(
        answers.every((a) => a.status === 200 || a.status === 402),
        JSON.stringify(answers.map((a) => a.status)),
      );
      assert.ok(ok.length >= 1 && ok.length < 12, `${ok.length} answered`);
      for (const a of ok) assert.equal(nano(a.body.cost), perRequest);
      const bal = await balance(accountId);
      assert.equal(bal.held, 0n);
      assert.equal(bal.amount, usd('0.015') - perRequest * BigInt(ok.length));
      assert.ok(bal.amount >= 0n);
      await assertBooksBalance(accountId);
      openai.defaults({});
    });
  });
});
