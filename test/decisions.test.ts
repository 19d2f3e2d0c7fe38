// Decisions (POST /api/v1/decisions, /api/v1/systemone, chat's `response_format: {type:'questions'}`
// and messages' `output_config.format: {type:'questions'}`): the built-in local model's answers
// checked against next-token probabilities computed here, directly with node-llama-cpp, from the
// prompt layout the README documents; the remote family A path against the loopback OpenAI
// upstream's top_logprobs; structured generation; every error code; billing exactly once by input
// tokens, nothing for failures, books balanced after each test, and a race against a small balance.
import assert from 'node:assert/strict';
import { getLlama, type Llama, type LlamaContext, type LlamaModel, type Token } from 'node-llama-cpp';
import { newAccount, startApi, apiPost } from './support/api.js';
import { assertBooksBalance, settledBalances } from './support/books.js';
import { DECISION_PER_MILLION_TOKENS, perMillion } from './support/prices.js';
import { useProviderEnv } from './support/providerEnv.js';
import { type OpenAIUpstream, startOpenAIUpstream } from './support/upstreams/openai.js';
import { parseAmount } from '../activities/core/money.js';
import { softmax } from '../activities/decisions/questions.js';
import { findLocalModel } from '../activities/providers/local/modelFiles.js';

const LOCAL = 'local/decider-260k';
const NANO = 'openai/gpt-4.1-nano-decider';
const MINI = 'openai/gpt-4.1-mini-decisions';
const cost = (model: keyof typeof DECISION_PER_MILLION_TOKENS, tokens: number) =>
  perMillion(tokens, DECISION_PER_MILLION_TOKENS[model]);
/** the catalog's calibration temperature of the built-in model (copied, like the prices) */
const LOCAL_TEMPERATURE = 1;
/** the loopback's token count: words with their leading whitespace */
const words = (text: string) => (text.match(/\s*\S+/g) ?? []).length;
const close = (a: number, b: number, what: string) => assert.ok(Math.abs(a - b) < 1e-9, `${what}: ${a} vs ${b}`);
/**
 * How far two runs of the built-in model may differ. llama.cpp's logits differ in their last
 * float32 digits between a prompt evaluated whole and one continued from a cached prefix, and by
 * how much depends on the CPU's kernels: within 1e-6 on AVX-512 machines, up to ~2e-4 on AVX2
 * ones. A wrong letter, option or temperature moves these probabilities by far more.
 */
const LOCAL_TOLERANCE = 1e-3;
const near = (a: number, b: number, what: string) =>
  assert.ok(Math.abs(a - b) < LOCAL_TOLERANCE, `${what}: ${a} vs ${b}`);
/** Two answers of the built-in model alike: the same fields, numbers within LOCAL_TOLERANCE. */
function sameAnswers(a: unknown, b: unknown, at = 'answers'): void {
  if (typeof a === 'number' && typeof b === 'number') {
    near(a, b, at);
    return;
  }
  if (typeof a !== 'object' || a === null || typeof b !== 'object' || b === null) {
    assert.equal(a, b, at);
    return;
  }
  assert.deepEqual(Object.keys(a).sort(), Object.keys(b).sort(), at);
  for (const k of Object.keys(a)) sameAnswers((a as never)[k], (b as never)[k], `${at}.${k}`);
}

const STATE = 'The customer says the invoice charged them twice this month.';
const ROUTE = {
  type: 'choice',
  instructions: 'Which team handles this ticket?',
  criteria: { billing: 'Invoices and payments', technical: 'Bugs and outages', sales: null },
};
const REVIEW = { type: 'noul', instructions: 'Does a person need to review it?' };
const URGENCY = { type: 'score', instructions: 'How urgent is it?', criteria: ['not', 'a little', 'rather', 'very'] };

describe('decisions (POST /api/v1/decisions)', function () {
  this.timeout(120_000);
  let api: Awaited<ReturnType<typeof startApi>>;
  let up: OpenAIUpstream;
  let restoreEnv: () => Promise<void>;
  let llama: Llama;
  let model: LlamaModel;
  let context: LlamaContext;

  before(async () => {
    up = await startOpenAIUpstream({ strict: true });
    restoreEnv = await useProviderEnv({ OPENAI_API_KEY: up.apiKey, OPENAI_BASE_URL: up.url }, ['OPENROUTER_API_KEY']);
    api = await startApi();
    llama = await getLlama({ build: 'never', gpu: false });
    model = await llama.loadModel({ modelPath: findLocalModel('stories260K.gguf')! });
    context = await model.createContext({ threads: 1, contextSize: 512 });
  });
  after(async () => {
    await context.dispose();
    await model.dispose();
    await api.close();
    await up.close();
    await restoreEnv();
  });
  afterEach(async () => {
    up.reset();
    await assertBooksBalance();
  });

  const post = (key: string | null, body: unknown, path = '/api/v1/decisions') =>
    apiPost(api.base, path, body, { key });
  const spent = async (accountId: string, start = '10') =>
    parseAmount(start, 'USD') - (await settledBalances(accountId)).USD.amount;

  async function expectError(res: Response, status: number, code: string, param?: string) {
    const text = await res.text();
    assert.equal(res.status, status, text);
    const j = JSON.parse(text) as { error: { code: string; message: string; param: string | null } };
    assert.equal(j.error.code, code, text);
    if (param !== undefined) assert.equal(j.error.param, param, text);
    return j.error;
  }

  /**
   * The model's own next-token probabilities after `prompt` (its start token first), for the
   * letters as they follow `(`, computed here without the gateway; and the prompt's token count.
   */
  async function letterProbabilities(prompt: string, letters: string[]): Promise<{ p: number[]; tokens: number }> {
    const tokens = [model.tokens.bos!, ...model.tokenize(prompt)];
    const seq = context.getSequence();
    try {
      const it = seq.evaluateWithMetadata(tokens, { probabilities: true }, { temperature: 0 });
      const first = await it.next();
      await it.return(undefined);
      const probabilities = (first.value as { probabilities: Map<Token, number> }).probabilities;
      const ids = letters.map((l) => model.tokenize(`(${l}`).at(-1)!);
      return { p: ids.map((id) => probabilities.get(id) ?? 0), tokens: tokens.length };
    } finally {
      seq.dispose();
    }
  }
  /** softmax of log p at the calibration temperature, written out */
  const calibrated = (p: number[], t: number) => {
    const e = p.map((x) => Math.exp(Math.log(x) / t));
    const sum = e.reduce((a, b) => a + b, 0);
    return e.map((x) => x / sum);
  };
  const head = (instructions: string) => `State:\n${STATE}\n\nQuestion: ${instructions}\n`;
  const slot = (body: string, options: string[]) =>
    `${body}${options.map((o, i) => `(${'ABCDEFGHIJ'[i]}) ${o}`).join('\n')}\nAnswer: (`;

  describe('the built-in local model (family A, real next-token probabilities)', () => {
    it('choice, noul, isolated and whole scores match the probabilities computed here; input tokens billed once', async () => {
      const { key, accountId } = await newAccount();
      const res = await post(key, {
        model: LOCAL,
        state: STATE,
        questions: {
          route: ROUTE,
          review: REVIEW,
          urgency: URGENCY,
          urgency_whole: { ...URGENCY, isolated: false },
        },
        independent: true,
        user: 'u-1',
        session_id: 's-1',
        trace: { ticket: 42 },
      });
      const text = await res.text();
      assert.equal(res.status, 200, text);
      const j = JSON.parse(text);
      assert.match(j.id, /^decision_/);
      assert.equal(j.model, LOCAL);
      assert.equal(j.provider, 'local');
      assert.equal(j.method, 'logprobs');

      let tokens = 0;
      // choice: one row, one letter per option
      const route = await letterProbabilities(
        slot(head(ROUTE.instructions), ['billing: Invoices and payments', 'technical: Bugs and outages', 'sales']),
        ['A', 'B', 'C'],
      );
      tokens += route.tokens;
      const pr = calibrated(route.p, LOCAL_TEMPERATURE);
      const labels = ['billing', 'technical', 'sales'];
      labels.forEach((l, i) => near(j.answers.route.probabilities[l], pr[i], `route ${l}`));
      const best = pr.indexOf(Math.max(...pr));
      assert.equal(j.answers.route.choice, labels[best]);
      near(j.answers.route.confidence, pr[best], 'route confidence');
      assert.equal(j.answers.route.type, 'choice');

      // noul: P(yes) over no/yes
      const review = await letterProbabilities(slot(head(REVIEW.instructions), ['no', 'yes']), ['A', 'B']);
      tokens += review.tokens;
      near(j.answers.review.noul, calibrated(review.p, LOCAL_TEMPERATURE)[1], 'noul');
      assert.deepEqual(Object.keys(j.answers.review).sort(), ['noul', 'type']);

      // isolated score: a yes/no row per level, the fits normalized
      const fits: number[] = [];
      for (const [i, d] of URGENCY.criteria.entries()) {
        const row = await letterProbabilities(
          slot(`${head(URGENCY.instructions)}Does this level fit? Level ${i} of 0-3: ${d}\n`, ['no', 'yes']),
          ['A', 'B'],
        );
        tokens += row.tokens;
        fits.push(calibrated(row.p, LOCAL_TEMPERATURE)[1]);
      }
      const fitSum = fits.reduce((a, b) => a + b, 0);
      const ps = fits.map((f) => f / fitSum);
      ps.forEach((p, i) => near(j.answers.urgency.probabilities[String(i)], p, `urgency ${i}`));
      const mean = ps.reduce((s, p, i) => s + i * p, 0);
      near(j.answers.urgency.score, mean, 'urgency score');
      const variance = ps.reduce((s, p, i) => s + p * (i - mean) ** 2, 0);
      near(j.answers.urgency.confidence, 1 - variance / 2.25, 'urgency confidence');
      assert.deepEqual(j.answers.urgency.legend, { 0: 'not', 1: 'a little', 2: 'rather', 3: 'very' });

      // a whole score: one row, one letter per level
      const whole = await letterProbabilities(
        slot(
          head(URGENCY.instructions),
          URGENCY.criteria.map((d, i) => `${i}: ${d}`),
        ),
        ['A', 'B', 'C', 'D'],
      );
      tokens += whole.tokens;
      calibrated(whole.p, LOCAL_TEMPERATURE).forEach((p, i) =>
        near(j.answers.urgency_whole.probabilities[String(i)], p, `urgency_whole ${i}`),
      );

      // usage: the real prompt tokens of the 7 rows, nothing generated; billed once, input only
      assert.deepEqual(j.usage, { input_tokens: tokens, output_tokens: 0 });
      assert.equal(await spent(accountId), cost(LOCAL, tokens));
      assert.equal(parseAmount(String(j.cost), 'USD'), cost(LOCAL, tokens));
      assert.equal(j.paymentSource, 'USD');
    });

    it('zero data retention asked for: served by the local model, which retains nothing', async () => {
      const { key } = await newAccount();
      const res = await post(key, {
        model: LOCAL,
        state: STATE,
        questions: { review: REVIEW },
        provider: { zdr: true, data_collection: 'deny' },
      });
      assert.equal(res.status, 200, await res.text());
    });

    it('is listed by /api/v1/models as a decision model, and /api/v1/systemone takes SDK-style names', async () => {
      const models = (await (await fetch(`${api.base}/api/v1/models?detailed=true`)).json()) as {
        data: Array<{ id: string; category: string; supported_endpoints: string[]; architecture: unknown }>;
      };
      const m = models.data.find((x) => x.id === LOCAL);
      assert.ok(m, 'the built-in decision model is listed');
      assert.equal(m.category, 'decision');
      assert.ok(m.supported_endpoints.includes('/v1/decisions'));
      assert.deepEqual((m.architecture as { output_modalities: string[] }).output_modalities, ['decisions']);

      const { key, accountId } = await newAccount();
      for (const name of ['decider-260k', 'decider-latest']) {
        const res = await post(key, { model: name, state: STATE, questions: { review: REVIEW } }, '/api/v1/systemone');
        const j = await res.json();
        assert.equal(res.status, 200, JSON.stringify(j));
        assert.equal(j.model, LOCAL);
        assert.equal(j.answers.review.type, 'noul');
        assert.equal(j.usage.output_tokens, 0);
      }
      // the same question twice: the same answer (nothing sampled)
      const a = await (await post(key, { model: LOCAL, state: STATE, questions: { review: REVIEW } })).json();
      const b = await (await post(key, { model: LOCAL, state: STATE, questions: { review: REVIEW } })).json();
      assert.equal(a.answers.review.noul, b.answers.review.noul);
      assert.ok(a.usage.input_tokens > 0);
      assert.equal(await spent(accountId), 4n * cost(LOCAL, a.usage.input_tokens));
    });

    it('a row longer than the model context: 400 context_length_exceeded, nothing charged', async () => {
      const { key, accountId } = await newAccount();
      const err = await expectError(
        await post(key, { model: LOCAL, state: 'once upon a time '.repeat(1500), questions: { review: REVIEW } }),
        400,
        'context_length_exceeded',
      );
      assert.match(err.message, /context/);
      assert.equal(await spent(accountId), 0n);
    });
  });

  describe('family A on an OpenAI-protocol upstream (top_logprobs)', () => {
    it('one 1-token chat completion a row; the letters read from top_logprobs; billed by the upstream token count', async () => {
      const { key, accountId } = await newAccount();
      // the loopback model: a reply distribution per row, chosen by what the row asks
      const lse = (...xs: number[]) => Math.log(xs.reduce((s, x) => s + Math.exp(x), 0));
      up.script(
        ...Array.from(
          { length: 3 },
          () =>
            (req: { body: { messages: Array<{ content: string }> } }): { nextTokens: Record<string, number> } => {
              const prompt = req.body.messages[0].content;
              if (prompt.includes('Which team'))
                // 'A' twice (" A" and "A"), 'D' not among the alternatives at all
                return { nextTokens: { B: -0.4, ' A': -1.6, A: -2.3, The: -2.9, C: -3.5, '(': -4.2 } };
              return { nextTokens: { B: -0.1, A: -2.4, I: -5 } };
            },
        ),
      );
      const res = await post(key, {
        model: NANO,
        state: STATE,
        questions: {
          route: { ...ROUTE, criteria: { ...ROUTE.criteria, other: 'Anything else' } },
          review: REVIEW,
          urgency: { ...URGENCY, isolated: false, criteria: ['low', 'high'] },
        },
      });
      const text = await res.text();
      assert.equal(res.status, 200, text);
      const j = JSON.parse(text);
      assert.equal(j.provider, 'openai');
      assert.equal(j.method, 'logprobs');
      assert.equal(up.requests.length, 3);
      for (const r of up.requests) {
        assert.equal(r.path, '/v1/chat/completions');
        assert.equal(r.body.max_tokens, 1);
        assert.equal(r.body.logprobs, true);
        assert.equal(r.body.top_logprobs, 20);
        assert.equal(r.body.temperature, 0);
        assert.equal(r.body.model, 'gpt-4.1-nano');
        assert.match(r.body.messages[0].content, /^State:\n.*\n\(A\) .*\nReply with the letter/s);
      }
      // choice: A = " A" + "A", D = the lowest logprob listed (its own is no higher)
      const p = softmax([lse(-1.6, -2.3), -0.4, -3.5, -4.2], 1);
      ['billing', 'technical', 'sales', 'other'].forEach((l, i) =>
        close(j.answers.route.probabilities[l], p[i], `route ${l}`),
      );
      assert.equal(j.answers.route.choice, 'technical');
      close(j.answers.review.noul, softmax([-2.4, -0.1], 1)[1], 'noul');
      close(j.answers.urgency.score, softmax([-2.4, -0.1], 1)[1], 'score of two levels');
      // usage and money: the upstream's own counts
      const input = up.requests.reduce((n, r) => n + words(r.body.messages[0].content), 0);
      assert.deepEqual(j.usage, { input_tokens: input, output_tokens: 3 });
      assert.equal(await spent(accountId), cost(NANO, input));
    });

    it('an upstream that reports no log probabilities, or fails: 502, nothing charged', async () => {
      const { key, accountId } = await newAccount();
      up.script({ text: 'B', omitLogprobs: true }); // logprobs asked for, none in the answer
      await expectError(
        await post(key, { model: NANO, state: STATE, questions: { review: REVIEW } }),
        502,
        'upstream_bad_response',
      );
      up.script({ nextTokens: { The: -0.5, It: -1.5 } }); // no option letter among the alternatives
      await expectError(
        await post(key, { model: NANO, state: STATE, questions: { review: REVIEW } }),
        502,
        'upstream_bad_response',
      );
      up.script({ status: 500 });
      await expectError(
        await post(key, { model: NANO, state: STATE, questions: { review: REVIEW } }),
        502,
        'upstream_error',
      );
      assert.equal(await spent(accountId), 0n);
    });
  });

  describe('structured generation (other decision models)', () => {
    it('one JSON-schema chat call states the probabilities; normalized; the answer says how it was made', async () => {
      const { key, accountId } = await newAccount();
      up.script({
        text: JSON.stringify({ route: { billing: 3, technical: 1, sales: 0 }, urgency: [0, 1, 1, 2], review: 0.8 }),
      });
      const res = await post(key, {
        model: MINI,
        state: STATE,
        questions: { route: ROUTE, urgency: URGENCY, review: { ...REVIEW, criteria: { true: 'yes', false: 'no' } } },
      });
      const text = await res.text();
      assert.equal(res.status, 200, text);
      const j = JSON.parse(text);
      assert.equal(j.method, 'structured_generation');
      const sent = up.last().body;
      assert.equal(sent.model, 'gpt-4.1-mini');
      assert.equal(sent.response_format.type, 'json_schema');
      assert.deepEqual(sent.response_format.json_schema.schema.required, ['route', 'urgency', 'review']);
      assert.deepEqual(j.answers.route.probabilities, { billing: 0.75, technical: 0.25, sales: 0 });
      assert.equal(j.answers.route.choice, 'billing');
      assert.deepEqual(j.answers.urgency.probabilities, { 0: 0, 1: 0.25, 2: 0.25, 3: 0.5 });
      close(j.answers.urgency.score, 2.25, 'score');
      assert.deepEqual(j.answers.review, { type: 'noul', noul: 0.8 });
      const input = sent.messages.reduce((n: number, m: { content: string }) => n + words(m.content), 0);
      assert.equal(j.usage.input_tokens, input);
      assert.equal(await spent(accountId), cost(MINI, input));
    });

    it('an answer that is not the asked shape: 502, nothing charged', async () => {
      const { key, accountId } = await newAccount();
      up.script({ text: '{"route": "billing"}' });
      await expectError(
        await post(key, { model: MINI, state: STATE, questions: { route: ROUTE } }),
        502,
        'upstream_bad_response',
      );
      assert.equal(await spent(accountId), 0n);
    });
  });

  describe('through chat completions and messages', () => {
    it('chat: response_format questions answers the JSON text in choices[0].message.content', async () => {
      const { key, accountId } = await newAccount();
      const direct = await (await post(key, { model: LOCAL, state: STATE, questions: { review: REVIEW } })).json();
      const res = await post(
        key,
        {
          model: LOCAL,
          messages: [{ role: 'user', content: STATE }],
          response_format: { type: 'questions', questions: { review: REVIEW } },
        },
        '/v1/chat/completions',
      );
      const j = await res.json();
      assert.equal(res.status, 200, JSON.stringify(j));
      assert.equal(j.object, 'chat.completion');
      sameAnswers(JSON.parse(j.choices[0].message.content), direct.answers);
      assert.equal(j.usage.prompt_tokens, direct.usage.input_tokens);
      assert.equal(j.usage.estimated_cost, direct.cost);
      // include_usage: the exact cost as usage.cost
      const exact = await (
        await post(
          key,
          {
            model: LOCAL,
            include_usage: true,
            messages: [{ role: 'user', content: STATE }],
            response_format: { type: 'questions', questions: { review: REVIEW } },
          },
          '/v1/chat/completions',
        )
      ).json();
      assert.equal(exact.usage.cost, direct.cost);
      assert.equal(await spent(accountId), 3n * cost(LOCAL, direct.usage.input_tokens));
      // streaming, other roles and images are refused in the OpenAI envelope
      const chat = (extra: Record<string, unknown>) =>
        post(
          key,
          {
            model: LOCAL,
            messages: [{ role: 'user', content: STATE }],
            response_format: { type: 'questions', questions: { review: REVIEW } },
            ...extra,
          },
          '/v1/chat/completions',
        );
      await expectError(await chat({ stream: true }), 400, 'unsupported_stream', 'stream');
      await expectError(
        await chat({
          messages: [
            { role: 'system', content: 'x' },
            { role: 'user', content: STATE },
          ],
        }),
        400,
        'invalid_parameter_value',
        'messages[0].role',
      );
      await expectError(
        await chat({
          messages: [
            { role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://example.com/a.png' } }] },
          ],
        }),
        400,
        'image_input_not_supported',
      );
      assert.equal(await spent(accountId), 3n * cost(LOCAL, direct.usage.input_tokens));
    });

    it('messages: output_config.format questions answers the JSON text in content[0].text', async () => {
      const { key, accountId } = await newAccount();
      const direct = await (await post(key, { model: LOCAL, state: STATE, questions: { route: ROUTE } })).json();
      const res = await post(
        key,
        {
          model: LOCAL,
          max_tokens: 16,
          messages: [{ role: 'user', content: [{ type: 'text', text: STATE }] }],
          output_config: { format: { type: 'questions', questions: { route: ROUTE } } },
        },
        '/v1/messages',
      );
      const j = await res.json();
      assert.equal(res.status, 200, JSON.stringify(j));
      assert.equal(j.type, 'message');
      assert.equal(j.content[0].type, 'text');
      sameAnswers(JSON.parse(j.content[0].text), direct.answers);
      assert.deepEqual(j.usage, { input_tokens: direct.usage.input_tokens, output_tokens: 0 });
      assert.equal(await spent(accountId), 2n * cost(LOCAL, direct.usage.input_tokens));
      // errors in the message envelope
      const bad = await post(
        key,
        {
          model: LOCAL,
          max_tokens: 16,
          stream: true,
          messages: [{ role: 'user', content: STATE }],
          output_config: { format: { type: 'questions', questions: { route: ROUTE } } },
        },
        '/v1/messages',
      );
      assert.equal(bad.status, 400);
      const e = await bad.json();
      assert.equal(e.type, 'error');
      assert.match(e.error.message, /stream/);
    });
  });

  it('responses: text.format questions answers the JSON text in output_text (not stored)', async () => {
    const { key, accountId } = await newAccount();
    const direct = await (await post(key, { model: LOCAL, state: STATE, questions: { review: REVIEW } })).json();
    const res = await post(
      key,
      { model: LOCAL, input: STATE, text: { format: { type: 'questions', questions: { review: REVIEW } } } },
      '/v1/responses',
    );
    const j = await res.json();
    assert.equal(res.status, 200, JSON.stringify(j));
    assert.equal(j.object, 'response');
    assert.equal(j.status, 'completed');
    assert.equal(j.store, false);
    sameAnswers(JSON.parse(j.output_text), direct.answers);
    assert.equal(j.output[0].content[0].text, j.output_text);
    assert.equal(j.usage.input_tokens, direct.usage.input_tokens);
    // message items of input_text parts are the same state; instructions are refused
    const items = await post(
      key,
      {
        model: LOCAL,
        input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: STATE }] }],
        text: { format: { type: 'questions', questions: { review: REVIEW } } },
      },
      '/v1/responses',
    );
    sameAnswers(JSON.parse((await items.json()).output_text), direct.answers);
    await expectError(
      await post(
        key,
        {
          model: LOCAL,
          input: STATE,
          instructions: 'Be brief.',
          text: { format: { type: 'questions', questions: { review: REVIEW } } },
        },
        '/v1/responses',
      ),
      400,
      'invalid_parameter_value',
      'instructions',
    );
    assert.equal(await spent(accountId), 3n * cost(LOCAL, direct.usage.input_tokens));
  });

  it('the questions format asked for with redaction or the moderation preflight: refused, not answered without them', async () => {
    const { key, accountId } = await newAccount();
    const always = await newAccount('10', { redaction: 'always' });
    const questions = { review: REVIEW };
    const send = (k: string, path: string, body: unknown, headers: Record<string, string> = {}) =>
      fetch(`${api.base}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${k}`, ...headers },
        body: JSON.stringify(body),
      });
    const chat = {
      model: LOCAL,
      messages: [{ role: 'user', content: STATE }],
      response_format: { type: 'questions', questions },
    };
    const responses = { model: LOCAL, input: STATE, text: { format: { type: 'questions', questions } } };
    type Case = [key: string, path: string, body: unknown, headers: Record<string, string>, param: string];
    const refused: Case[] = [
      [key, '/v1/chat/completions', chat, { redaction: 'true' }, 'redaction'],
      [key, '/v1/responses', responses, { piiredaction: 'on' }, 'redaction'],
      [always.key, '/v1/chat/completions', chat, {}, 'redaction'],
      [key, '/v1/chat/completions', chat, { moderation: 'true' }, 'moderation'],
      ...[':redaction', ':memory', ':online', ':cheap'].flatMap((suffix): Case[] => [
        [key, '/v1/chat/completions', { ...chat, model: `${LOCAL}${suffix}` }, {}, 'model'],
        [key, '/api/v1/decisions', { model: `${LOCAL}${suffix}`, state: STATE, questions }, {}, 'model'],
      ]),
    ];
    for (const [k, path, body, headers, param] of refused)
      await expectError(await send(k, path, body, headers), 400, 'invalid_parameter_value', param);
    assert.equal(await spent(accountId), 0n);
    assert.equal(await spent(always.accountId), 0n);
    // a falsy header overrides the key's default: answered, unredacted, as asked
    const answered = await send(always.key, '/v1/chat/completions', chat, { redaction: 'false' });
    assert.equal(answered.status, 200, await answered.clone().text());
    const plain = await send(key, '/v1/chat/completions', chat, { moderation: 'false' });
    assert.equal(plain.status, 200, await plain.clone().text());
  });

  describe('every refusal, before anything is held', () => {
    it("the spec's codes for each field and family rule", async () => {
      const { key, accountId } = await newAccount();
      const ok = { model: LOCAL, state: STATE, questions: { review: REVIEW } };
      const q = (questions: Record<string, unknown>, model = LOCAL) => post(key, { model, state: STATE, questions });

      await expectError(await post(null, ok), 401, 'missing_api_key');
      await expectError(await post(key, { state: STATE, questions: {} }), 400, 'missing_required_parameter', 'model');
      await expectError(await post(key, { model: LOCAL, questions: {} }), 400, 'missing_required_parameter', 'state');
      await expectError(
        await post(key, { model: LOCAL, state: STATE }),
        400,
        'missing_required_parameter',
        'questions',
      );
      await expectError(await post(key, { ...ok, state: 42 }), 400, 'invalid_parameter_value', 'state');
      await expectError(await q({}), 400, 'invalid_parameter_value', 'questions');
      await expectError(await q({ a: 'x' }), 400, 'invalid_parameter_value', 'questions.a');
      await expectError(await q({ a: { instructions: 'x' } }), 400, 'missing_required_parameter', 'questions.a.type');
      await expectError(
        await q({ a: { type: 'rank', instructions: 'x' } }),
        400,
        'invalid_parameter_value',
        'questions.a.type',
      );
      await expectError(await post(key, { ...ok, user: 'u'.repeat(257) }), 400, 'invalid_parameter_value', 'user');
      await expectError(
        await post(key, { ...ok, session_id: 's'.repeat(257) }),
        400,
        'invalid_parameter_value',
        'session_id',
      );
      await expectError(await post(key, { ...ok, trace: 'x' }), 400, 'invalid_parameter_value', 'trace');
      await expectError(await post(key, { ...ok, model: 'nope/none' }), 404, 'model_not_found', 'model');
      await expectError(
        await post(key, { ...ok, model: 'local/stories260k' }),
        400,
        'invalid_parameter_value',
        'model',
      );

      // choice
      await expectError(
        await q({ a: { type: 'choice', criteria: { x: null, y: null } } }),
        400,
        'missing_required_parameter',
        'questions.a.instructions',
      );
      await expectError(
        await q({ a: { type: 'choice', instructions: 'x' } }),
        400,
        'missing_required_parameter',
        'questions.a.criteria',
      );
      await expectError(
        await q({ a: { type: 'choice', instructions: 'x', criteria: {} } }),
        400,
        'invalid_parameter_value',
        'questions.a.criteria',
      );
      await expectError(
        await q({ a: { type: 'choice', instructions: 'x', criteria: { only: null } } }),
        400,
        'invalid_parameter_value',
        'questions.a.criteria',
      );
      const many = Object.fromEntries(Array.from({ length: 256 }, (_, i) => [`o${i}`, null]));
      await expectError(
        await q({ a: { type: 'choice', instructions: 'x', criteria: many } }),
        400,
        'invalid_parameter_value',
        'questions.a.criteria',
      );
      await expectError(
        await q({ a: { type: 'choice', instructions: {}, criteria: { x: null, y: null } } }),
        400,
        'invalid_parameter_value',
        'questions.a.instructions',
      );
      await expectError(
        await q({ a: { type: 'choice', instructions: 'x', criteria: { x: [], y: null } } }),
        400,
        'invalid_parameter_value',
        'questions.a.criteria.x',
      );
      // score
      await expectError(
        await q({ a: { type: 'score', instructions: 'x', criteria: ['one'] } }),
        400,
        'invalid_parameter_value',
        'questions.a.criteria',
      );
      await expectError(
        await q({ a: { type: 'score', instructions: 'x', criteria: Array(11).fill('l') } }),
        400,
        'invalid_parameter_value',
        'questions.a.criteria',
      );
      await expectError(
        await q({ a: { type: 'score', instructions: 'x', criteria: { a: 1 } } }),
        400,
        'invalid_parameter_value',
        'questions.a.criteria',
      );
      await expectError(
        await q({ a: { type: 'score', instructions: 'x', criteria: ['a', 'b'], isolated: 'no' } }),
        400,
        'invalid_parameter_value',
        'questions.a.isolated',
      );
      await expectError(
        await q({ a: { type: 'noul', instructions: 'x', isolated: true } }),
        400,
        'invalid_parameter_value',
        'questions.a.isolated',
      );
      // noul, family A: instructions may be left out when a criterion describes it; not both
      await expectError(
        await q({ a: { type: 'noul' } }),
        400,
        'missing_required_parameter',
        'questions.a.instructions',
      );
      await expectError(
        await q({ a: { type: 'noul', instructions: 'x', criteria: { maybe: 'y' } } }),
        400,
        'invalid_parameter_value',
        'questions.a.criteria.maybe',
      );
      // independent: family A takes true or nothing
      await expectError(await post(key, { ...ok, independent: false }), 400, 'invalid_parameter_value', 'independent');
      // provider: family A takes only zdr and data_collection; unknown fields are refused
      for (const field of ['order', 'only', 'ignore', 'allow_fallbacks', 'require_parameters', 'max_price']) {
        const value =
          field === 'max_price'
            ? { prompt: 1 }
            : field.startsWith('allow') || field.startsWith('req')
              ? true
              : ['local'];
        await expectError(
          await post(key, { ...ok, provider: { [field]: value } }),
          400,
          'unsupported_provider_options',
          `provider.${field}`,
        );
      }
      await expectError(
        await post(key, { ...ok, provider: { sort: 'price' } }),
        400,
        'invalid_parameter_value',
        'provider.sort',
      );
      await expectError(await post(key, { ...ok, provider: 'local' }), 400, 'invalid_parameter_value', 'provider');
      // zero data retention: the local model retains nothing; OpenAI's route does not qualify
      await expectError(await post(key, { ...ok, model: NANO, provider: { zdr: true } }), 400, 'no_fallback_available');
      // other models: noul needs instructions and both criteria; no independent, no isolated
      await expectError(
        await q({ a: { type: 'noul', criteria: { true: 'y' } } }, MINI),
        400,
        'missing_required_parameter',
        'questions.a.instructions',
      );
      await expectError(
        await q({ a: { type: 'noul', instructions: 'x', criteria: { true: 'y' } } }, MINI),
        400,
        'invalid_parameter_value',
        'questions.a.criteria',
      );
      await expectError(
        await q({ a: { type: 'score', instructions: 'x', criteria: ['a', 'b'], isolated: true } }, MINI),
        400,
        'invalid_parameter_value',
        'questions.a.isolated',
      );
      await expectError(
        await post(key, { ...ok, model: MINI, independent: true }),
        400,
        'invalid_parameter_value',
        'independent',
      );
      // 1,024 scoring rows: an isolated score is one per level, a choice past 26 options one per option
      const rows = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`q${i}`, REVIEW]));
      const tooMany = await expectError(await q(rows(1025)), 413, 'too_many_questions', 'questions');
      assert.match(tooMany.message, /1025 scoring rows.*1024/);
      const scores = Object.fromEntries(
        Array.from({ length: 103 }, (_, i) => [`s${i}`, { ...URGENCY, criteria: Array(10).fill('l') }]),
      );
      await expectError(await q(scores), 413, 'too_many_questions');
      const wide = Object.fromEntries(Array.from({ length: 255 }, (_, i) => [`o${i}`, null]));
      const choices = Object.fromEntries(
        Array.from({ length: 5 }, (_, i) => [`c${i}`, { type: 'choice', instructions: 'x', criteria: wide }]),
      );
      await expectError(await q(choices), 413, 'too_many_questions');
      // the balance: 402 before anything is sent
      const poor = await newAccount('0');
      await expectError(await post(poor.key, ok), 402, 'insufficient_balance');
      assert.equal(await spent(accountId), 0n);
      assert.equal(up.requests.length, 0);
    });
  });

  it('a race: many requests against a small balance never overspend, and each success is charged once', async () => {
    const body = { model: LOCAL, state: 'A cat.', questions: { review: REVIEW } };
    const probe = await newAccount();
    const one = (await (await post(probe.key, body)).json()).usage.input_tokens as number;
    // each request reserves a token per byte of its prompt and is charged its real tokens (fewer):
    // a balance of a few worst cases lets some through and refuses the rest, however they interleave
    const start = '0.00001';
    const { key, accountId } = await newAccount(start);
    const n = 16;
    const results = await Promise.all(Array.from({ length: n }, () => post(key, body).then((r) => r.status)));
    const ok = results.filter((s) => s === 200).length;
    assert.equal(ok + results.filter((s) => s === 402).length, n, results.join(','));
    assert.ok(ok > 0 && ok < n, `successes: ${ok}`);
    assert.equal(await spent(accountId, start), BigInt(ok) * cost(LOCAL, one));
    await assertBooksBalance(accountId);
  });
});
