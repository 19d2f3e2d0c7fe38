// Moderation: POST /api/v1/moderations (and /v1/...) through the official `openai` SDK's
// `moderations.create`, and the `moderation` header's paid input-safety preflight on chat
// completions, against the loopback OpenAI upstream speaking OpenAI's moderations protocol. Every
// error code; the preflight is charged whatever it finds, a flagged request's answer is not; a
// failed moderation charges nothing; books balanced after each test; races against small balances.
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { useChatBench, type ChatBench } from './support/chatEnv.js';
import { assertBooksBalance } from './support/books.js';
import { perMillion } from './support/prices.js';
import { person } from './support/teams.js';
import { formatAmount, parseAmount } from '../activities/core/money.js';

const CHAT = 'openai/gpt-4o-mini';
/** the catalog's 0.10 USD per 1M tokens plus the default 5% markup, in nano-USD */
const MODERATION_PER_MILLION = 105_000_000n;
/** what moderating `texts` costs: a token per 4 bytes of UTF-8, at least one per text */
const preflightCost = (...texts: string[]) =>
  perMillion(
    texts.reduce((n, t) => n + Math.max(1, Math.ceil(Buffer.byteLength(t) / 4)), 0),
    MODERATION_PER_MILLION,
  );

const CLEAN = 'What is the capital of France?';
const VIOLENT = 'Tell me how to kill my neighbour';

describe('moderation (POST /api/v1/moderations and the moderation header)', function () {
  this.timeout(60_000);
  const bench = useChatBench();
  let b: ChatBench;
  before(() => (b = bench()));

  const client = (key: string) => new OpenAI({ apiKey: key, baseURL: `${b.base}/v1`, maxRetries: 0 });
  const spent = async (accountId: string, start = '10') => parseAmount(start, 'USD') - (await b.usd(accountId)).amount;
  const moderations = () => b.openai.requests.filter((r) => r.path === '/v1/moderations');
  const chats = () => b.openai.requests.filter((r) => r.path === '/v1/chat/completions');
  const chat = (text: string, extra: Record<string, unknown> = {}) => ({
    model: CHAT,
    messages: [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: text },
    ],
    ...extra,
  });
  const errorOf = async (res: Response) => (await res.json()).error;

  describe('POST /api/v1/moderations', () => {
    it("answers the openai SDK's moderations.create in OpenAI's shape, one verdict per input, billed once", async () => {
      const { key, accountId } = await b.account();
      const out = await client(key).moderations.create({
        model: 'omni-moderation-latest',
        input: [CLEAN, VIOLENT],
      });
      assert.match(out.id, /^modr-/);
      assert.equal(out.model, 'openai/omni-moderation-latest');
      assert.equal(out.results.length, 2);
      assert.equal(out.results[0].flagged, false);
      assert.equal(out.results[1].flagged, true);
      assert.equal(out.results[1].categories.violence, true);
      assert.ok(out.results[1].category_scores.violence > 0.5);
      assert.deepEqual(out.results[1].category_applied_input_types?.violence, ['text']);
      // the upstream was asked in its own terms, once
      assert.equal(moderations().length, 1);
      assert.deepEqual(moderations()[0].body, { model: 'omni-moderation-latest', input: [CLEAN, VIOLENT] });
      assert.equal(moderations()[0].headers.authorization, `Bearer ${b.openai.apiKey}`);
      const expected = preflightCost(CLEAN, VIOLENT);
      assert.equal(await spent(accountId), expected, 'flagged or not, the moderation is charged');
      const bill = out as unknown as { cost: number; paymentSource: string };
      assert.equal(parseAmount(String(bill.cost), 'USD'), expected);
      assert.equal(bill.paymentSource, 'USD');
    });

    it('defaults to omni-moderation-latest, takes text parts, and is served under /api/v1 too', async () => {
      const { key, accountId } = await b.account();
      const res = await b.post(key, { input: [{ type: 'text', text: CLEAN }] }, {}, '/api/v1/moderations');
      assert.equal(res.status, 200);
      const body = await res.json();
      assert.equal(body.model, 'openai/omni-moderation-latest');
      assert.equal(body.results[0].flagged, false);
      assert.deepEqual(moderations()[0].body.input, [CLEAN]);
      const legacy = await client(key).moderations.create({ model: 'text-moderation-latest', input: 'hello' });
      assert.equal(legacy.model, 'openai/text-moderation-latest');
      assert.equal(moderations()[1].body.model, 'text-moderation-latest');
      assert.equal(await spent(accountId), preflightCost(CLEAN) + preflightCost('hello'));
    });

    it('refuses empty and non-text input and non-moderation models with 400, nothing sent or charged', async () => {
      const { key, accountId } = await b.account();
      const cases: Array<[unknown, string, string]> = [
        [{ input: '' }, 'empty_moderation_input', 'input'],
        [{ input: '   ' }, 'empty_moderation_input', 'input'],
        [{ input: [] }, 'empty_moderation_input', 'input'],
        [{ input: [CLEAN, ''] }, 'empty_moderation_input', 'input'],
        [
          { input: [{ type: 'image_url', image_url: { url: 'https://example.com/a.png' } }] },
          'unsupported_moderation_input',
          'input',
        ],
        [{ input: [42] }, 'unsupported_moderation_input', 'input'],
        [{ model: CHAT, input: CLEAN }, 'invalid_parameter_value', 'model'],
        [{ model: 'openai/no-such-moderation', input: CLEAN }, 'model_not_found', 'model'],
        [{ model: 'omni-moderation-latest' }, 'missing_required_parameter', 'input'],
      ];
      for (const [body, code, param] of cases) {
        const res = await b.post(key, body, {}, '/v1/moderations');
        const error = await errorOf(res);
        assert.equal(error.code, code, JSON.stringify(body));
        assert.equal(res.status, code === 'model_not_found' ? 404 : 400, JSON.stringify(body));
        assert.equal(error.param, param, JSON.stringify(body));
      }
      assert.equal(moderations().length, 0);
      assert.equal(await spent(accountId), 0n);
    });

    it('an upstream failure or a malformed answer is a 502 and charges nothing', async () => {
      const { key, accountId } = await b.account();
      b.openai.script(
        { status: 500, error: { message: 'boom' } },
        { moderationResults: [] },
        { moderationResults: [{ categories: {}, category_scores: {} }] },
      );
      for (let i = 0; i < 3; i++) {
        const res = await b.post(key, { input: VIOLENT }, {}, '/v1/moderations');
        assert.equal(res.status, 502, await res.clone().text());
      }
      assert.equal(moderations().length, 3);
      assert.equal(await spent(accountId), 0n);
      assert.equal((await b.usd(accountId)).held, 0n);
    });

    it('a race: many moderations against a small balance never overspend, each success charged once', async () => {
      const cost = preflightCost(CLEAN); // 30 bytes = 8 tokens = 840 nano-USD
      const start = '0.000005'; // 5,000 nano-USD: five moderations
      const { key, accountId } = await b.account(start);
      const results = await Promise.all(
        Array.from({ length: 16 }, () => b.post(key, { input: CLEAN }, {}, '/v1/moderations').then((r) => r.status)),
      );
      const ok = results.filter((s) => s === 200).length;
      assert.equal(ok + results.filter((s) => s === 402).length, 16, results.join(','));
      assert.equal(ok, 5, results.join(','));
      assert.equal(await spent(accountId, start), BigInt(ok) * cost);
      await assertBooksBalance(accountId);
    });
  });

  describe('the moderation header on chat completions', () => {
    it('a clean request: the preflight runs first, then the answer; both charged, each once', async () => {
      const { key, accountId } = await b.account();
      const res = await b.post(key, chat(CLEAN), { moderation: 'true' });
      assert.equal(res.status, 200, await res.clone().text());
      assert.equal(res.headers.get('x-moderation'), 'passed');
      const body = await res.json();
      const order = b.openai.requests.map((r) => r.path);
      assert.deepEqual(order, ['/v1/moderations', '/v1/chat/completions']);
      assert.deepEqual(moderations()[0].body, {
        model: 'omni-moderation-latest',
        input: [`Be brief.\n\n${CLEAN}`],
      });
      const answerCost = parseAmount(String(body.cost), 'USD');
      assert.ok(answerCost > 0n);
      assert.equal(await spent(accountId), answerCost + preflightCost(`Be brief.\n\n${CLEAN}`));
    });

    it('names a moderation model by id; falsy values send the request without a preflight', async () => {
      const { key } = await b.account();
      const res = await b.post(key, chat(CLEAN), { moderation: 'openai/text-moderation-latest' });
      assert.equal(res.status, 200);
      assert.equal(moderations()[0].body.model, 'text-moderation-latest');
      const off = await b.post(key, chat(VIOLENT), { moderation: 'false' });
      assert.equal(off.status, 200);
      assert.equal(moderations().length, 1);
    });

    it('a flagged request: 400 content_policy_violation, the preflight charged, the answer neither sent nor charged', async () => {
      const { key, accountId } = await b.account();
      const res = await b.post(key, chat(VIOLENT), { moderation: 'yes' });
      assert.equal(res.status, 400);
      assert.equal(res.headers.get('x-moderation'), 'flagged; categories=violence');
      const error = await errorOf(res);
      assert.equal(error.code, 'content_policy_violation');
      assert.match(error.message, /flagged this request \(violence\)/);
      assert.equal(moderations().length, 1);
      assert.equal(chats().length, 0, 'the chat request never left');
      assert.equal(await spent(accountId), preflightCost(`Be brief.\n\n${VIOLENT}`));
      assert.equal((await b.usd(accountId)).held, 0n, 'nothing left reserved');
    });

    it('every refusal code, before anything is sent or charged', async () => {
      const { key, accountId } = await b.account();
      const image = { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } };
      const cases: Array<[Record<string, unknown>, Record<string, string>, string]> = [
        [chat(CLEAN), { moderation: 'omni-moderation-latest, text-moderation-latest' }, 'conflicting_moderation_model'],
        [chat(CLEAN), { moderation: 'true, false' }, 'conflicting_moderation_model'],
        [
          { model: CHAT, messages: [{ role: 'user', content: [{ type: 'text', text: ' ' }] }] },
          { moderation: 'true' },
          'empty_moderation_input',
        ],
        [
          { model: CHAT, messages: [{ role: 'user', content: [{ type: 'text', text: 'what is this?' }, image] }] },
          { moderation: 'true' },
          'unsupported_moderation_input',
        ],
        [chat(CLEAN), { moderation: CHAT }, 'invalid_parameter_value'],
      ];
      for (const [body, headers, code] of cases) {
        const res = await b.post(key, body, headers);
        assert.equal(res.status, 400, `${code}: ${await res.clone().text()}`);
        const error = await errorOf(res);
        assert.equal(error.code, code);
        assert.equal(error.param, 'moderation');
      }
      assert.equal(b.openai.requests.length, 0);
      assert.equal(await spent(accountId), 0n);
    });

    it('a request no route can answer (unknown provider, too long a prompt) is refused before the preflight is run or charged', async () => {
      const { key, accountId } = await b.account();
      const unknown = await b.post(key, chat(CLEAN), { moderation: 'true', 'x-provider': 'no-such-provider' });
      assert.equal(unknown.status, 400, await unknown.clone().text());
      assert.equal((await errorOf(unknown)).code, 'provider_unknown_provider');
      const long = await b.post(key, chat(CLEAN, { max_tokens: 100_000_000 }), { moderation: 'true' });
      assert.equal(long.status, 400, await long.clone().text());
      assert.equal((await errorOf(long)).code, 'context_length_exceeded');
      assert.equal(b.openai.requests.length, 0, 'neither the preflight nor the answer was sent');
      assert.equal(await spent(accountId), 0n);
      await assertBooksBalance(accountId);
    });

    it('inline_moderation_requires_api_key: a session or an x402 payment may not ask for the preflight', async () => {
      const p = await person(b.base);
      const res = await p.b.post('/api/v1/chat/completions', chat(CLEAN), { moderation: 'true' });
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.equal(res.body.error.code, 'inline_moderation_requires_api_key');
      // an accountless x402 request is refused before it is quoted
      const quote = await fetch(`${b.base}/api/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-x402': 'true', moderation: 'true' },
        body: JSON.stringify(chat(CLEAN)),
      });
      assert.equal(quote.status, 400, await quote.clone().text());
      assert.equal((await errorOf(quote)).code, 'inline_moderation_requires_api_key');
      assert.equal(b.openai.requests.length, 0);
    });

    it('moderation fails: 502, nothing charged, the chat request not sent', async () => {
      const { key, accountId } = await b.account();
      b.openai.script({ status: 503, error: { message: 'overloaded' } });
      const res = await b.post(key, chat(CLEAN), { moderation: 'true' });
      assert.equal(res.status, 502, await res.clone().text());
      assert.equal(chats().length, 0);
      assert.equal(await spent(accountId), 0n);
    });

    it('a balance that pays the preflight but not the answer: 402, nothing sent or charged', async () => {
      const { key, accountId } = await b.account('0.000004'); // 4,000 nano-USD: a few preflights, no answer
      const res = await b.post(key, chat(VIOLENT), { moderation: 'true' });
      assert.equal(res.status, 402, await res.clone().text());
      assert.equal(b.openai.requests.length, 0);
      assert.equal(await spent(accountId, '0.000004'), 0n);
      assert.equal((await b.usd(accountId)).held, 0n);
      await assertBooksBalance(accountId);
    });

    it('n > 1: every answer is reserved before the preflight runs, which runs once', async () => {
      const body = chat(VIOLENT, { max_tokens: 8 });
      const probe = await b.account('0');
      const refused = await b.post(probe.key, body, { moderation: 'true' });
      assert.equal(refused.status, 402);
      const worst = parseAmount(/cost up to \$([\d.]+)/.exec((await errorOf(refused)).message)![1], 'USD');
      const cost = preflightCost(`Be brief.\n\n${VIOLENT}`);
      // room for the preflight and one answer, not two
      const start = formatAmount(worst + cost + worst / 2n, 'USD');
      const { key, accountId } = await b.account(start);
      const short = await b.post(key, { ...body, n: 2 }, { moderation: 'true' });
      assert.equal(short.status, 402, await short.clone().text());
      assert.equal(b.openai.requests.length, 0, 'no preflight for a request refused at reservation');
      assert.equal(await spent(accountId, start), 0n);
      const flagged = await b.post(key, { ...body, n: 1 }, { moderation: 'true' });
      assert.equal((await errorOf(flagged)).code, 'content_policy_violation');
      const rich = await b.account();
      const both = await b.post(rich.key, { ...body, n: 2 }, { moderation: 'true' });
      assert.equal((await errorOf(both)).code, 'content_policy_violation');
      assert.equal(moderations().length, 2, 'one preflight per request');
      assert.equal(chats().length, 0);
      assert.equal(await spent(accountId, start), cost);
      assert.equal(await spent(rich.accountId), cost);
      for (const id of [accountId, rich.accountId]) {
        assert.equal((await b.usd(id)).held, 0n);
        await assertBooksBalance(id);
      }
    });

    it('a race: flagged requests against a small balance pay each preflight once and never overspend', async () => {
      const cost = preflightCost(`Be brief.\n\n${VIOLENT}`);
      // room for a few answers' worst cases (8 tokens out) at once, each released when its request is flagged
      const start = '0.00002';
      const { key, accountId } = await b.account(start);
      const results = await Promise.all(
        Array.from({ length: 12 }, () =>
          b
            .post(key, chat(VIOLENT, { max_tokens: 8 }), { moderation: 'true' })
            .then(async (r) => `${r.status} ${(await errorOf(r)).code}`),
        ),
      );
      const flagged = results.filter((s) => s === '400 content_policy_violation').length;
      assert.ok(flagged > 0 && flagged < 12, `some flagged, some refused: ${results.join(',')}`);
      assert.equal(flagged + results.filter((s) => s.startsWith('402')).length, 12, results.join(','));
      assert.equal(await spent(accountId, start), BigInt(flagged) * cost);
      assert.equal((await b.usd(accountId)).held, 0n);
      assert.equal(chats().length, 0);
      await assertBooksBalance(accountId);
    });
  });
});
