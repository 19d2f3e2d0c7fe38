// POST /api/talk-to-gpt: plain text plus the <NanoGPT>{...}</NanoGPT> metadata block, billed
// like chat, errors in the legacy envelope.
import assert from 'node:assert/strict';
import { useChatBench, type ChatBench } from './support/chatEnv.js';
import { parseAmount } from '../activities/core/money.js';
import { GPT_4O_MINI, textCost, textPrices } from './support/prices.js';
import { serviceTag } from '../activities/surfaces/talkToGpt.js';
import { apiPost } from './support/api.js';

const MODEL = 'openai/gpt-4o-mini';
const costOf = (p: number, c: number) => textCost(GPT_4O_MINI, { input: p, output: c });

/** Splits a talk-to-gpt answer into its reply and its metadata (the block must end the body). */
function parse(text: string): {
  reply: string;
  meta: { cost: number; inputTokens: number; outputTokens: number; [k: string]: unknown };
} {
  const m = /^([\s\S]*)<NanoGPT>(.*)<\/NanoGPT>$/.exec(text);
  assert.ok(m, `no metadata block in: ${text}`);
  return { reply: m[1], meta: JSON.parse(m[2]) };
}

describe('talk-to-gpt (legacy)', function () {
  this.timeout(60_000);
  const bench = useChatBench();
  let b: ChatBench;
  before(() => (b = bench()));

  const talk = (headers: Record<string, string>, body: unknown) =>
    apiPost(b.base, '/api/talk-to-gpt', body, { headers });

  it('answers plain text followed by the metadata block; the cost is what was charged', async () => {
    const { key, accountId } = await b.account('1');
    const res = await talk({ 'x-api-key': key }, { model: MODEL, prompt: 'What is the capital of France?' });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type')!, /^text\/plain/);
    const { reply, meta } = parse(await res.text());
    assert.equal(reply, 'Echo: What is the capital of France?');
    assert.ok(meta.inputTokens > 0 && meta.outputTokens > 0);
    const cost = costOf(meta.inputTokens, meta.outputTokens);
    assert.equal(meta.cost, Number(cost) / 1e9);
    const bal = await b.usd(accountId);
    assert.equal(bal.amount, parseAmount('1', 'USD') - cost);
    assert.equal(bal.held, 0n);
    // the upstream saw exactly one user turn
    assert.deepEqual(b.openai.last().body.messages, [{ role: 'user', content: 'What is the capital of France?' }]);
  });

  it('puts the prompt after the previous messages, as the last user turn; Bearer works too', async () => {
    const { key } = await b.account('1');
    const history = [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: 'Hello!' },
    ];
    const res = await talk({ authorization: `Bearer ${key}` }, { model: MODEL, messages: history, prompt: 'And now?' });
    assert.equal(res.status, 200);
    assert.equal(parse(await res.text()).reply, 'Echo: And now?');
    assert.deepEqual(b.openai.last().body.messages, [...history, { role: 'user', content: 'And now?' }]);
  });

  it('takes messages alone', async () => {
    const { key } = await b.account('1');
    const res = await talk(
      { 'x-api-key': key },
      { model: MODEL, messages: [{ role: 'user', content: 'only history' }] },
    );
    assert.equal(parse(await res.text()).reply, 'Echo: only history');
  });

  it('takes model suffixes and X-Provider', async () => {
    const { key } = await b.account('1');
    const res = await talk(
      { 'x-api-key': key, 'X-Provider': 'openrouter' },
      { model: `${MODEL}:cheap`, prompt: 'hey' },
    );
    assert.equal(res.status, 200, await res.clone().text());
    assert.equal(b.openrouter.requests.length, 1);
    assert.equal(b.openai.requests.length, 0);
  });

  it('answers with the real local model, billed at its catalog price', async () => {
    const { key, accountId } = await b.account('1');
    const res = await talk({ 'x-api-key': key }, { model: 'local/stories260k', prompt: 'Once upon a time' });
    assert.equal(res.status, 200);
    const { reply, meta } = parse(await res.text());
    assert.ok(reply.length > 0);
    // $0.02 per 1M tokens, no markup
    const expected = textCost(textPrices('local/stories260k'), { input: meta.inputTokens, output: meta.outputTokens });
    assert.equal(parseAmount('1', 'USD') - (await b.usd(accountId)).amount, expected);
    assert.equal(meta.cost, Number(expected) / 1e9);
  });

  describe('errors, in the legacy envelope, never charged', () => {
    const cases: Array<[string, unknown, number, string]> = [
      ['no model', { prompt: 'x' }, 400, 'missing_required_parameter'],
      ['neither prompt nor messages', { model: MODEL }, 400, 'missing_required_parameter'],
      ['empty messages, no prompt', { model: MODEL, messages: [] }, 400, 'missing_required_parameter'],
      ['prompt not a string', { model: MODEL, prompt: 3 }, 400, 'invalid_parameter_value'],
      ['a message without content', { model: MODEL, messages: [{ role: 'user' }] }, 400, 'missing_required_parameter'],
      ['a bad role', { model: MODEL, messages: [{ role: 'wizard', content: 'x' }] }, 400, 'invalid_parameter_value'],
      ['unknown model', { model: 'nope/never', prompt: 'x' }, 404, 'model_not_found'],
      // offered here, but no search provider is configured on this bench (test/web-search.test.ts has them)
      ['web search suffix, none configured', { model: `${MODEL}:online`, prompt: 'x' }, 503, 'model_not_available'],
    ];
    for (const [what, body, status, code] of cases) {
      it(`${what} → ${status} ${code}`, async () => {
        const { key, accountId } = await b.account('1');
        const res = await talk({ 'x-api-key': key }, body);
        assert.equal(res.status, status);
        const json = await res.json();
        assert.equal(json.status, status, JSON.stringify(json));
        assert.equal(json.code, code);
        assert.equal(typeof json.error, 'string');
        assert.equal(json.error, json.message);
        assert.ok(json.message.length > 10);
        assert.equal(b.openai.requests.length, 0);
        assert.equal((await b.usd(accountId)).amount, parseAmount('1', 'USD'));
      });
    }

    it('401 without a key and with a bad one', async () => {
      for (const headers of [{}, { 'x-api-key': 'sk-nanogpt-00000000-0000-0000-0000-000000000000' }] as Array<
        Record<string, string>
      >) {
        const res = await talk(headers, { model: MODEL, prompt: 'x' });
        assert.equal(res.status, 401);
        const json = await res.json();
        assert.equal(json.status, 401);
        assert.match(json.code, /api_key/);
        assert.equal(typeof json.error, 'string');
      }
    });

    it('an upstream failure is passed on in the legacy envelope and nothing is charged', async () => {
      const { key, accountId } = await b.account('1');
      b.openai.script({ status: 500 });
      b.openrouter.script({ status: 500 });
      const res = await talk({ 'x-api-key': key }, { model: MODEL, prompt: 'x' });
      assert.equal(res.status, 502);
      const json = await res.json();
      assert.equal(json.code, 'all_fallbacks_failed');
      assert.deepEqual(await b.usd(accountId), {
        amount: parseAmount('1', 'USD'),
        held: 0n,
        available: parseAmount('1', 'USD'),
      });
    });

    it('402 with requiredBalance when the balance cannot cover the worst case', async () => {
      const { key } = await b.account('0.000001');
      const res = await talk({ 'x-api-key': key }, { model: MODEL, prompt: 'x' });
      assert.equal(res.status, 402);
      const json = await res.json();
      assert.equal(json.code, 'insufficient_balance');
      assert.ok(json.requiredBalance > 0);
    });
  });

  it('serviceTag: the default keeps <NanoGPT>; other names get a readable tag', () => {
    assert.equal(serviceTag('nanogpt'), 'NanoGPT');
    assert.equal(serviceTag('NanoGPT'), 'NanoGPT');
    assert.equal(serviceTag('mygpt'), 'MyGPT');
    assert.equal(serviceTag('acmeai'), 'AcmeAI');
    assert.equal(serviceTag('switchyard'), 'Switchyard');
    assert.equal(serviceTag('my service!'), 'Myservice');
    assert.equal(serviceTag(''), 'Service');
  });
});
