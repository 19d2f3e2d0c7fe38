// POST /api/v1/completions: the official SDK (plain, streaming) against the OpenAI loopback and
// the real local model, logprobs in the legacy shape, every range check, billing modes, money.
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { useChatBench, readSse, readUntil, type ChatBench } from './support/chatEnv.js';
import { parseAmount } from '../activities/core/money.js';
import { GPT_4O_MINI, textCost, textPrices } from './support/prices.js';
import { waitFor } from './support/wait.js';

const MODEL = 'openai/gpt-4o-mini';
const PATH = '/api/v1/completions';
const hello = { model: MODEL, prompt: 'Say hello' };
/** gpt-4o-mini and the local model at their catalog prices (test/support/prices.ts) */
const costOf = (p: number, c: number) => textCost(GPT_4O_MINI, { input: p, output: c });
const localCost = (p: number, c: number) => textCost(textPrices('local/stories260k'), { input: p, output: c });

interface Legacy {
  tokens: string[];
  token_logprobs: number[];
  top_logprobs: Array<Record<string, number>>;
  text_offset: number[];
}

/** The legacy logprobs' invariants: parallel arrays, real log probabilities, at most n+1 alternatives. */
function checkLogprobs(lp: Legacy, n: number, promptLength: number, text?: string) {
  assert.ok(lp.tokens.length > 0);
  assert.equal(lp.token_logprobs.length, lp.tokens.length);
  assert.equal(lp.top_logprobs.length, lp.tokens.length);
  assert.equal(lp.text_offset.length, lp.tokens.length);
  for (const l of lp.token_logprobs) assert.ok(Number.isFinite(l) && l <= 0, `logprob ${l}`);
  lp.top_logprobs.forEach((m, i) => {
    const entries = Object.entries(m);
    assert.ok(entries.length >= 1 && entries.length <= n + 1, `top_logprobs[${i}] has ${entries.length}`);
    assert.ok(lp.tokens[i] in m, 'the chosen token is among the alternatives');
    for (const [, v] of entries) assert.ok(Number.isFinite(v) && v <= 0);
  });
  assert.equal(lp.text_offset[0], promptLength);
  for (let i = 1; i < lp.text_offset.length; i++) assert.ok(lp.text_offset[i] >= lp.text_offset[i - 1]);
  if (text !== undefined) assert.equal(lp.tokens.join(''), text);
}

describe('legacy completions', function () {
  this.timeout(60_000);
  const bench = useChatBench();
  let b: ChatBench;
  before(() => (b = bench()));

  const client = (key: string) => new OpenAI({ apiKey: key, baseURL: `${b.base}/v1`, maxRetries: 0 });

  describe('through the official openai SDK', () => {
    it('completes a prompt in the text_completion shape, billed exactly like chat', async () => {
      const { key, accountId } = await b.account('1');
      const r = await client(key).completions.create({ model: MODEL, prompt: 'Say hello', max_tokens: 20 });
      assert.equal(r.object, 'text_completion');
      assert.match(r.id, /^cmpl-/);
      assert.equal(r.model, MODEL);
      assert.equal(r.choices[0].index, 0);
      assert.equal(r.choices[0].text, 'Echo: Say hello');
      assert.equal(r.choices[0].finish_reason, 'stop');
      assert.equal(r.choices[0].logprobs, null);
      const u = r.usage!;
      assert.ok(u.prompt_tokens > 0 && u.completion_tokens > 0);
      assert.equal(u.total_tokens, u.prompt_tokens + u.completion_tokens);
      const cost = costOf(u.prompt_tokens, u.completion_tokens);
      const x = r as unknown as Record<string, any>;
      assert.deepEqual(x.x_nanogpt_pricing, {
        amount: Number(cost) / 1e9,
        currency: 'USD',
        cost: Number(cost) / 1e9,
        paymentSource: 'USD',
        inputTokens: u.prompt_tokens,
        outputTokens: u.completion_tokens,
      });
      assert.equal(x.provider, 'openai');
      const bal = await b.usd(accountId);
      assert.equal(bal.amount, parseAmount('1', 'USD') - cost);
      assert.equal(bal.held, 0n);
      assert.equal(x.remainingBalance, Number(bal.available) / 1e9);
      // OpenAI's /completions serves only instruct models: the prompt went as a user turn
      const sent = b.openai.last();
      assert.match(sent.path, /\/chat\/completions$/);
      assert.deepEqual(sent.body.messages, [{ role: 'user', content: 'Say hello' }]);
      assert.equal(sent.body.max_completion_tokens, 20);
    });

    it('streams text frames, then a final frame with finish_reason, usage and pricing', async () => {
      const { key, accountId } = await b.account('1');
      const stream = await client(key).completions.create({
        model: MODEL,
        prompt: 'Say hello there',
        stream: true,
        stream_options: { include_usage: true },
      });
      let text = '';
      let usage;
      let finish;
      let last;
      for await (const c of stream) {
        text += c.choices[0]?.text ?? '';
        if (c.choices[0]?.finish_reason) finish = c.choices[0].finish_reason;
        if (c.usage) usage = c.usage;
        last = c;
        assert.equal(c.object, 'text_completion');
      }
      assert.equal(text, 'Echo: Say hello there');
      assert.equal(finish, 'stop');
      assert.ok(usage!.completion_tokens > 0);
      assert.deepEqual(last?.choices, [], 'usage comes on a last frame of its own, as OpenAI sends it');
      const cost = costOf(usage!.prompt_tokens, usage!.completion_tokens);
      assert.equal(
        (last as unknown as { x_nanogpt_pricing: { cost: number } }).x_nanogpt_pricing.cost,
        Number(cost) / 1e9,
      );
      assert.equal((await b.usd(accountId)).amount, parseAmount('1', 'USD') - cost);
    });

    it('raw stream: every frame is a text_completion, the last carries the pricing, then [DONE]', async () => {
      const { key } = await b.account('1');
      const frames = await readSse(await b.post(key, { ...hello, stream: true }, {}, PATH));
      assert.equal(frames.at(-1), '[DONE]');
      const chunks = frames.slice(0, -1);
      assert.ok(chunks.every((c) => c.object === 'text_completion' && c.choices[0].index === 0));
      assert.ok(chunks.slice(0, -1).every((c) => c.choices[0].finish_reason === null));
      const final = chunks.at(-1);
      assert.equal(final.choices[0].finish_reason, 'stop');
      assert.equal(final.usage, undefined, 'usage only when include_usage');
      assert.ok(final.x_nanogpt_pricing.cost > 0);
    });

    // A broken or abandoned stream's usage is unknown: the bill is the README's estimate, worked
    // out by hand. The prompt "Say hello" is 9 bytes, one token per 3 rounded up = 3 tokens (a
    // legacy prompt has no message framing); the output is one token per 4 bytes produced.
    const HELLO_PROMPT_TOKENS = 3;

    it('bills exactly what was produced when the upstream stream breaks midway, with an error frame', async () => {
      const { key, accountId } = await b.account('1');
      // the upstream is asked for chat: its role chunk, "one", " two", then the body ends
      b.openai.script({ text: 'one two three four five six seven eight', cutAfter: 3 });
      const frames = await readSse(await b.post(key, { ...hello, stream: true }, {}, PATH));
      const errorFrame = frames.find((f) => f !== '[DONE]' && f.error);
      assert.equal(errorFrame?.error.code, 'upstream_stream_cut');
      assert.equal(frames.at(-1), '[DONE]');
      // "one two": 7 bytes, 2 tokens
      const expected = textCost(GPT_4O_MINI, { input: HELLO_PROMPT_TOKENS, output: 2 });
      assert.equal(expected, 473n + 1260n);
      assert.equal(parseAmount('1', 'USD') - (await b.usd(accountId)).amount, expected);
    });

    it('aborts the upstream and bills exactly what was produced when the caller disconnects', async () => {
      const { key, accountId } = await b.account('1');
      // the role chunk and four words, then the upstream stalls
      b.openai.script({ text: 'alpha beta gamma delta epsilon zeta', hangAfter: 5 });
      const ac = new AbortController();
      const res = await fetch(`${b.base}${PATH}`, {
        method: 'POST',
        signal: ac.signal,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({ ...hello, stream: true }),
      });
      await readUntil(res, '" delta"');
      ac.abort();
      await waitFor(() => b.openai.last().aborted, 5_000, 'the upstream to see the abort');
      await waitFor(async () => (await b.usd(accountId)).held === 0n, 5_000, 'the reservation to be settled');
      const bal = await b.usd(accountId);
      assert.equal(bal.held, 0n);
      // "alpha beta gamma delta": 22 bytes, 6 tokens
      const expected = textCost(GPT_4O_MINI, { input: HELLO_PROMPT_TOKENS, output: 6 });
      assert.equal(expected, 473n + 3780n);
      assert.equal(parseAmount('1', 'USD') - bal.amount, expected);
    });

    it('returns legacy logprobs from an OpenAI upstream (asked of it as chat logprobs)', async () => {
      const { key } = await b.account('1');
      const r = await client(key).completions.create({ model: MODEL, prompt: 'Say hello', logprobs: 2 });
      const sent = b.openai.last().body;
      assert.equal(sent.logprobs, true);
      assert.equal(sent.top_logprobs, 2);
      checkLogprobs(r.choices[0].logprobs as Legacy, 2, 'Say hello'.length, r.choices[0].text);
    });

    it('reads `logprobs: true` as 0 alternatives (only the chosen token)', async () => {
      const { key } = await b.account('1');
      const body = await (await b.post(key, { ...hello, logprobs: true }, {}, PATH)).json();
      checkLogprobs(body.choices[0].logprobs, 0, 'Say hello'.length, body.choices[0].text);
      assert.equal(b.openai.last().body.top_logprobs, 0);
    });

    it('on an upstream with a /completions endpoint (openrouter, after openai fails) sends the prompt as a prompt', async () => {
      const { key, accountId } = await b.account('1');
      b.openai.script({ status: 503 });
      const r = await client(key).completions.create({ model: MODEL, prompt: 'Say hello', logprobs: 1 });
      assert.equal((r as unknown as { provider: string }).provider, 'openrouter');
      const sent = b.openrouter.last();
      assert.match(sent.path, /\/completions$/);
      assert.doesNotMatch(sent.path, /chat/);
      assert.equal(sent.body.prompt, 'Say hello');
      assert.equal(sent.body.logprobs, 1);
      assert.equal(r.choices[0].text, ' Echo: Say hello');
      checkLogprobs(r.choices[0].logprobs as Legacy, 1, 'Say hello'.length, r.choices[0].text);
      assert.ok((await b.usd(accountId)).amount < parseAmount('1', 'USD'));
    });

    it('streams logprobs from the /completions upstream with running text offsets', async () => {
      const { key } = await b.account('1');
      b.openai.script({ status: 503 });
      const frames = await readSse(await b.post(key, { ...hello, stream: true, logprobs: 2 }, {}, PATH));
      const withLp = frames.filter((f) => f !== '[DONE]' && f.choices[0].logprobs);
      assert.ok(withLp.length > 0);
      const merged: Legacy = { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] };
      for (const f of withLp)
        for (const k of Object.keys(merged) as Array<keyof Legacy>)
          (merged[k] as unknown[]).push(...f.choices[0].logprobs[k]);
      const text = frames
        .filter((f) => f !== '[DONE]')
        .map((f) => f.choices[0].text)
        .join('');
      checkLogprobs(merged, 2, 'Say hello'.length, text);
      for (let i = 1; i < merged.tokens.length; i++)
        assert.equal(merged.text_offset[i], merged.text_offset[i - 1] + merged.tokens[i - 1].length);
    });
  });

  describe('the local model (real logprobs)', () => {
    it('completes with logprobs: 2, each a real log probability, billed at its catalog price', async () => {
      const { key, accountId } = await b.account('1');
      const prompt = 'Once upon a time';
      const r = await client(key).completions.create({
        model: 'local/stories260k',
        prompt,
        max_tokens: 16,
        temperature: 0,
        logprobs: 2,
      });
      assert.equal((r as unknown as { provider: string }).provider, 'local');
      assert.ok(r.choices[0].text.length > 0);
      const lp = r.choices[0].logprobs as Legacy;
      checkLogprobs(lp, 2, prompt.length, r.choices[0].text);
      assert.ok(
        lp.top_logprobs.some((m) => Object.keys(m).length > 1),
        'alternatives are given',
      );
      const u = r.usage!;
      assert.ok(u.completion_tokens > 0 && u.completion_tokens <= 16);
      assert.equal(
        parseAmount('1', 'USD') - (await b.usd(accountId)).amount,
        localCost(u.prompt_tokens, u.completion_tokens),
      );
    });

    it('streams with logprobs through the SDK', async () => {
      const { key } = await b.account('1');
      const stream = await client(key).completions.create({
        model: 'local/stories260k',
        prompt: ['Once upon a time'],
        max_tokens: 12,
        logprobs: 2,
        stream: true,
        stream_options: { include_usage: true },
      });
      let text = '';
      const lps: number[] = [];
      let usage;
      for await (const c of stream) {
        text += c.choices[0]?.text ?? '';
        lps.push(...(c.choices[0]?.logprobs?.token_logprobs ?? []));
        if (c.usage) usage = c.usage;
      }
      assert.ok(text.length > 0);
      assert.ok(lps.length > 0 && lps.every((l) => Number.isFinite(l) && l <= 0));
      assert.ok(usage!.completion_tokens > 0);
    });
  });

  describe('parameters', () => {
    it('forwards what the internal request knows; validates and does not forward the rest', async () => {
      const { key } = await b.account('1');
      const res = await b.post(
        key,
        {
          ...hello,
          max_tokens: 30,
          temperature: 0.5,
          top_p: 0.9,
          stop: ['\n\n'],
          seed: 7,
          frequency_penalty: 0.1,
          presence_penalty: -0.1,
          user: 'u1',
          top_k: 40,
          top_a: 0.2,
          min_p: 0.05,
          tfs: 0.9,
          eta_cutoff: 0.001,
          epsilon_cutoff: 0.0003,
          typical_p: 0.95,
          mirostat_mode: 2,
          mirostat_tau: 5,
          mirostat_eta: 0.1,
          min_tokens: 1,
          stop_token_ids: [2],
          include_stop_str_in_output: false,
          ignore_eos: false,
          no_repeat_ngram_size: 3,
          custom_token_bans: [13],
          logit_bias: { '50256': -100 },
          prompt_logprobs: null,
          repetition_penalty: 1.1,
        },
        {},
        PATH,
      );
      assert.equal(res.status, 200, await res.clone().text());
      // the strict loopback (api.openai.com's own checks) would 400 on anything it does not know
      const sent = b.openai.last().body;
      assert.equal(sent.temperature, 0.5);
      assert.equal(sent.top_p, 0.9);
      assert.deepEqual(sent.stop, ['\n\n']);
      assert.equal(sent.seed, 7);
      assert.deepEqual(sent.logit_bias, { '50256': -100 });
      for (const k of ['top_a', 'tfs', 'mirostat_mode', 'min_tokens', 'custom_token_bans', 'top_k'])
        assert.equal(sent[k], undefined, k);
    });

    it('accepts a one-string prompt array', async () => {
      const { key } = await b.account('1');
      const body = await (await b.post(key, { model: MODEL, prompt: ['Say hi'] }, {}, PATH)).json();
      assert.equal(body.choices[0].text, 'Echo: Say hi');
    });

    it('routes to the provider named in X-Provider', async () => {
      const { key } = await b.account('1');
      const body = await (await b.post(key, hello, { 'X-Provider': 'openrouter' }, PATH)).json();
      assert.equal(body.provider, 'openrouter');
      assert.equal(b.openai.requests.length, 0);
    });

    for (const mode of ['paygo', 'pay-as-you-go', 'pay_as_you_go', 'paid', 'payg']) {
      it(`billing_mode '${mode}' is accepted and billed pay-as-you-go`, async () => {
        const { key, accountId } = await b.account('1');
        const res = await b.post(key, { ...hello, billing_mode: mode }, {}, PATH);
        assert.equal(res.status, 200);
        const body = await res.json();
        assert.equal(
          (await b.usd(accountId)).amount,
          parseAmount('1', 'USD') - costOf(body.usage.prompt_tokens, body.usage.completion_tokens),
        );
        assert.equal((await b.post(key, { ...hello, billingMode: mode }, {}, PATH)).status, 200);
      });
    }
  });

  describe('bad input', () => {
    const cases: Array<[string, unknown, number, string, string?]> = [
      ['no model', { prompt: 'x' }, 400, 'missing_required_parameter', 'model'],
      ['no prompt', { model: MODEL }, 400, 'missing_required_parameter', 'prompt'],
      ['prompt a number', { model: MODEL, prompt: 5 }, 400, 'invalid_parameter_value', 'prompt'],
      ['two prompts', { model: MODEL, prompt: ['a', 'b'] }, 400, 'invalid_parameter_value', 'prompt'],
      ['empty prompt array', { model: MODEL, prompt: [] }, 400, 'invalid_parameter_value', 'prompt'],
      ['token-id prompt', { model: MODEL, prompt: [1, 2, 3] }, 400, 'invalid_parameter_value', 'prompt'],
      ['max_tokens 0', { ...hello, max_tokens: 0 }, 400, 'invalid_parameter_value', 'max_tokens'],
      ['max_tokens not an integer', { ...hello, max_tokens: 1.5 }, 400, 'invalid_parameter_value', 'max_tokens'],
      ['temperature 2.5', { ...hello, temperature: 2.5 }, 400, 'invalid_parameter_value', 'temperature'],
      ['temperature -0.1', { ...hello, temperature: -0.1 }, 400, 'invalid_parameter_value', 'temperature'],
      ['top_p 1.1', { ...hello, top_p: 1.1 }, 400, 'invalid_parameter_value', 'top_p'],
      ['stream not boolean', { ...hello, stream: 'yes' }, 400, 'invalid_parameter_value', 'stream'],
      ['stop a number', { ...hello, stop: 3 }, 400, 'invalid_parameter_value', 'stop'],
      [
        'frequency_penalty 2.5',
        { ...hello, frequency_penalty: 2.5 },
        400,
        'invalid_parameter_value',
        'frequency_penalty',
      ],
      ['presence_penalty -3', { ...hello, presence_penalty: -3 }, 400, 'invalid_parameter_value', 'presence_penalty'],
      [
        'repetition_penalty 3',
        { ...hello, repetition_penalty: 3 },
        400,
        'invalid_parameter_value',
        'repetition_penalty',
      ],
      ['top_k -1', { ...hello, top_k: -1 }, 400, 'invalid_parameter_value', 'top_k'],
      ['top_k 1.5', { ...hello, top_k: 1.5 }, 400, 'invalid_parameter_value', 'top_k'],
      ['top_a -1', { ...hello, top_a: -1 }, 400, 'invalid_parameter_value', 'top_a'],
      ['min_p 1.5', { ...hello, min_p: 1.5 }, 400, 'invalid_parameter_value', 'min_p'],
      ['tfs 2', { ...hello, tfs: 2 }, 400, 'invalid_parameter_value', 'tfs'],
      ['eta_cutoff -1', { ...hello, eta_cutoff: -1 }, 400, 'invalid_parameter_value', 'eta_cutoff'],
      ['epsilon_cutoff -1', { ...hello, epsilon_cutoff: -1 }, 400, 'invalid_parameter_value', 'epsilon_cutoff'],
      ['typical_p 1.2', { ...hello, typical_p: 1.2 }, 400, 'invalid_parameter_value', 'typical_p'],
      ['mirostat_mode 3', { ...hello, mirostat_mode: 3 }, 400, 'invalid_parameter_value', 'mirostat_mode'],
      ['mirostat_tau -1', { ...hello, mirostat_tau: -1 }, 400, 'invalid_parameter_value', 'mirostat_tau'],
      ['mirostat_eta -1', { ...hello, mirostat_eta: -1 }, 400, 'invalid_parameter_value', 'mirostat_eta'],
      ['min_tokens -1', { ...hello, min_tokens: -1 }, 400, 'invalid_parameter_value', 'min_tokens'],
      [
        'min_tokens above max_tokens',
        { ...hello, min_tokens: 10, max_tokens: 5 },
        400,
        'invalid_parameter_value',
        'min_tokens',
      ],
      [
        'stop_token_ids not integers',
        { ...hello, stop_token_ids: ['a'] },
        400,
        'invalid_parameter_value',
        'stop_token_ids[0]',
      ],
      [
        'include_stop_str_in_output not boolean',
        { ...hello, include_stop_str_in_output: 1 },
        400,
        'invalid_parameter_value',
        'include_stop_str_in_output',
      ],
      ['ignore_eos not boolean', { ...hello, ignore_eos: 'no' }, 400, 'invalid_parameter_value', 'ignore_eos'],
      [
        'no_repeat_ngram_size -1',
        { ...hello, no_repeat_ngram_size: -1 },
        400,
        'invalid_parameter_value',
        'no_repeat_ngram_size',
      ],
      [
        'custom_token_bans not integers',
        { ...hello, custom_token_bans: [1.5] },
        400,
        'invalid_parameter_value',
        'custom_token_bans[0]',
      ],
      ['logit_bias not an object', { ...hello, logit_bias: [1] }, 400, 'invalid_parameter_value', 'logit_bias'],
      ['logit_bias value 200', { ...hello, logit_bias: { '1': 200 } }, 400, 'invalid_parameter_value', 'logit_bias[1]'],
      ['logprobs 6', { ...hello, logprobs: 6 }, 400, 'invalid_parameter_value', 'logprobs'],
      ['logprobs -1', { ...hello, logprobs: -1 }, 400, 'invalid_parameter_value', 'logprobs'],
      ['prompt_logprobs -1', { ...hello, prompt_logprobs: -1 }, 400, 'invalid_parameter_value', 'prompt_logprobs'],
      ['seed not an integer', { ...hello, seed: 'x' }, 400, 'invalid_parameter_value', 'seed'],
      [
        'billing_mode unknown',
        { ...hello, billing_mode: 'subscription' },
        400,
        'invalid_parameter_value',
        'billing_mode',
      ],
      ['billingMode unknown', { ...hello, billingMode: 'free' }, 400, 'invalid_parameter_value', 'billingMode'],
      ['n 2', { ...hello, n: 2 }, 400, 'invalid_parameter_value', 'n'],
      ['echo true', { ...hello, echo: true }, 400, 'invalid_parameter_value', 'echo'],
      [
        'provider object unknown field',
        { ...hello, provider: { bogus: 1 } },
        400,
        'invalid_parameter_value',
        'provider',
      ],
      ['unknown model', { ...hello, model: 'nope/never' }, 404, 'model_not_found', 'model'],
      ['embedding model', { ...hello, model: 'text-embedding-3-small' }, 400, 'invalid_parameter_value', 'model'],
      ['web search suffix', { ...hello, model: `${MODEL}:online` }, 400, 'invalid_parameter_value', 'model'],
      [
        'max_tokens above the output limit',
        { model: 'local/stories260k', prompt: 'x', max_tokens: 100000 },
        400,
        'context_length_exceeded',
      ],
      [
        'prompt beyond the context',
        { model: 'local/stories260k', prompt: 'word '.repeat(3000) },
        400,
        'context_length_exceeded',
      ],
    ];
    for (const [what, body, status, code, param] of cases) {
      it(`${what} → ${status} ${code}`, async () => {
        const { key, accountId } = await b.account('1');
        const res = await b.post(key, body, {}, PATH);
        const json = await res.json();
        assert.equal(res.status, status, JSON.stringify(json));
        assert.equal(json.error.code, code, JSON.stringify(json));
        if (param) assert.equal(json.error.param, param, JSON.stringify(json));
        assert.ok(json.error.message.length > 10);
        assert.equal(b.openai.requests.length, 0, 'nothing reached the upstream');
        assert.equal((await b.usd(accountId)).amount, parseAmount('1', 'USD'));
      });
    }

    it('401 in the OpenAI envelope without a key, and the SDK raises its typed error', async () => {
      const res = await fetch(`${b.base}${PATH}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(hello),
      });
      assert.equal(res.status, 401);
      const json = await res.json();
      assert.equal(json.error.type, 'authentication_error');
      await assert.rejects(
        client('sk-nanogpt-00000000-0000-0000-0000-000000000000').completions.create(hello),
        OpenAI.AuthenticationError,
      );
    });

    it('an upstream failure is passed on and nothing is charged', async () => {
      const { key, accountId } = await b.account('1');
      b.openai.script({ status: 400, error: { message: 'bad thing', type: 'invalid_request_error' } });
      const res = await b.post(key, hello, {}, PATH);
      assert.equal(res.status, 400);
      assert.match((await res.json()).error.message, /bad thing/);
      assert.deepEqual(await b.usd(accountId), {
        amount: parseAmount('1', 'USD'),
        held: 0n,
        available: parseAmount('1', 'USD'),
      });
    });

    it('402 when the balance cannot cover the worst case', async () => {
      const { key } = await b.account('0.000001');
      const res = await b.post(key, hello, {}, PATH);
      assert.equal(res.status, 402);
      assert.equal((await res.json()).error.code, 'insufficient_balance');
    });
  });
});
