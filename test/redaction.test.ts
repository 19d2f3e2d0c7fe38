// PII redaction (activities/redaction/): a message full of personal data reaches the loopback
// upstream masked, with stable placeholders, and the reply comes back restored, whole and streamed
// (a placeholder split across chunks included), on chat, completions and responses; credentials
// are labelled and never restored; the header, suffix and key/account default rules; the 0.0005 USD
// fee charged exactly once (and raced); and fail-closed. The detection figures on the labelled set:
// test/unit/redaction-detection.test.ts.
import assert from 'node:assert/strict';
import { readSse, useChatBench, type ChatBench } from './support/chatEnv.js';
import { keepConfig } from './support/keepConfig.js';
import { GPT_4O_MINI, textCost } from './support/prices.js';
import { config } from '../activities/config.js';
import { createKey, setAccountRedaction, setKeyRedaction } from '../activities/accounts/keys.js';
import { detect } from '../activities/redaction/detect.js';
import { Redactor } from '../activities/redaction/mask.js';
import type { StreamEvent } from '../activities/core/types.js';
import { startAnthropicUpstream, type AnthropicUpstream } from './support/upstreams/anthropic.js';
import { useProviderEnv } from './support/providerEnv.js';
import { type SearchUpstream, startSearchUpstream } from './support/upstreams/search.js';

const MODEL = 'openai/gpt-4o-mini';
const FEE = 500_000n; // 0.0005 USD in nano-USD

const PII = {
  name: 'Sarah Connor',
  email: 'sarah.connor@example.com',
  phone: '+1 415 555 0132',
  ssn: '219-09-9999',
  card: '4111 1111 1111 1111',
  ip: '203.0.113.45',
  address: '742 Evergreen Terrace, Springfield, IL 62704',
  dob: '03/04/1985',
};
const API_KEY = 'sk-proj-4fJx9QwLr2TzB7nKc1VmH8sA0pYeD3uG5iO6';
const MESSAGE =
  `Hi, my name is ${PII.name}, born ${PII.dob}. Write to ${PII.email} or call ${PII.phone}. ` +
  `My SSN is ${PII.ssn} and my card ${PII.card}. I live at ${PII.address} and log in from ${PII.ip}. ` +
  `Again: ${PII.email}. My key is ${API_KEY}.`;
/** What the caller gets back from the echoing upstream: everything restored but the key. */
const RESTORED = MESSAGE.replace(API_KEY, '[REDACTED_API_KEY]');

/** The upstream's view of a request: every personal value gone, placeholders in their place. */
function assertMasked(sent: string): void {
  for (const [category, value] of Object.entries(PII)) assert.ok(!sent.includes(value), `${category} leaked: ${sent}`);
  assert.ok(!sent.includes(API_KEY), 'the API key leaked');
  for (const p of ['[NAME_1]', '[EMAIL_1]', '[PHONE_1]', '[SSN_1]', '[CARD_1]', '[IP_1]', '[ADDRESS_1]', '[DOB_1]'])
    assert.ok(sent.includes(p), `${p} missing from: ${sent}`);
  // the same e-mail address twice is one placeholder
  assert.equal(sent.split('[EMAIL_1]').length - 1, 2, sent);
  assert.ok(!sent.includes('[EMAIL_2]'));
  assert.ok(sent.includes('[REDACTED_API_KEY]'));
}

/** Text cut every `n` characters: placeholders arrive split across chunks. */
const pieces = (text: string, n: number) => text.match(new RegExp(`[\\s\\S]{1,${n}}`, 'g')) ?? [];

/** The prompt the upstream read: a legacy `prompt`, or the last user turn. */
const lastUserText = (body: { prompt?: string; messages?: Array<{ role: string; content: unknown }> }) =>
  body.prompt ?? String(body.messages?.filter((m) => m.role === 'user').at(-1)?.content);

describe('PII redaction', function () {
  this.timeout(120_000);
  const saved = keepConfig();
  const bench = useChatBench();
  let b: ChatBench;
  before(() => (b = bench()));
  afterEach(() => {
    config.redactionTimeoutMs = saved.redactionTimeoutMs;
  });

  const chat = (key: string, headers: Record<string, string> = { redaction: 'true' }, extra = {}) =>
    b.post(key, { model: MODEL, messages: [{ role: 'user', content: MESSAGE }], ...extra }, headers);

  it('chat: the upstream reads placeholders, the caller reads the values back; the key stays a label', async () => {
    const { key } = await b.account();
    const res = await chat(key);
    const body = await res.json();
    assert.equal(res.status, 200, JSON.stringify(body));
    assertMasked(lastUserText(b.openai.last().body));
    assert.equal(body.choices[0].message.content, `Echo: ${RESTORED}`);
    assert.match(res.headers.get('x-redaction') ?? '', /^applied; pii=8; credentials=1$/);
  });

  it('chat streaming: placeholders split across chunks are held back and restored', async () => {
    const { key } = await b.account();
    for (const n of [1, 3, 7]) {
      b.openai.script((req) => ({ pieces: pieces(`Echo: ${lastUserText(req.body)}`, n) }));
      const res = await chat(key, { redaction: 'true' }, { stream: true });
      assert.equal(res.status, 200);
      const frames = await readSse(res);
      const text = frames
        .filter((f) => f !== '[DONE]' && f.choices?.length)
        .map((f) => f.choices[0].delta?.content ?? '')
        .join('');
      assertMasked(lastUserText(b.openai.last().body));
      assert.equal(text, `Echo: ${RESTORED}`, `pieces of ${n}`);
      // no frame carries a placeholder, whole or in part
      for (const f of frames) assert.ok(!/\[(?:EMAIL|NAME|PHONE)_\d/.test(JSON.stringify(f)), JSON.stringify(f));
    }
  });

  describe('a stream restored at every split point', () => {
    // Two e-mail addresses, two names: placeholders side by side, two and more in one chunk, and one
    // placeholder next to the start of another's prefix ("[EMAIL_1][EMA").
    const ORIGINAL =
      'Dear Sarah Connor, write to sarah.connor@example.com and to kyle.reese@example.org, or ask John Smith.';
    let redactor: Redactor;
    let masked: string;
    let reply: string;
    before(async () => {
      redactor = new Redactor(ORIGINAL, detect);
      masked = await redactor.mask(ORIGINAL);
      for (const p of ['[EMAIL_1]', '[EMAIL_2]', '[NAME_1]', '[NAME_2]']) assert.ok(masked.includes(p), masked);
      reply = `${masked} [EMAIL_1][EMAIL_2][NAME_2]. [EMAIL_2][EMAIL_1]`;
    });
    const expected = () =>
      `${ORIGINAL} sarah.connor@example.comkyle.reese@example.orgJohn Smith. ` +
      'kyle.reese@example.orgsarah.connor@example.com';
    async function restored(chunks: string[]): Promise<string> {
      async function* upstream(): AsyncGenerator<StreamEvent> {
        for (const text of chunks) yield { type: 'text', text };
        yield { type: 'finish', reason: 'stop' };
      }
      let out = '';
      for await (const e of redactor.restoreStream(upstream())) {
        if (e.type === 'text') {
          assert.ok(!/\[(?:EMAIL|NAME)_\d/.test(e.text), `a placeholder reached the caller: ${e.text}`);
          out += e.text;
        }
      }
      return out;
    }

    it('one cut anywhere', async () => {
      for (let i = 0; i <= reply.length; i++)
        assert.equal(await restored([reply.slice(0, i), reply.slice(i)]), expected(), `cut at ${i}`);
    });

    it('two cuts anywhere near the placeholders side by side', async () => {
      const from = reply.indexOf(' [EMAIL_1][EMAIL_2]');
      for (let i = from; i <= reply.length; i++)
        for (let j = i; j <= reply.length; j++) {
          const chunks = [reply.slice(0, i), reply.slice(i, j), reply.slice(j)];
          assert.equal(await restored(chunks), expected(), `cuts at ${i} and ${j}`);
        }
    });

    it('chunks of every size, each holding up to the whole reply', async () => {
      for (let n = 1; n <= reply.length; n++)
        assert.equal(await restored(pieces(reply, n)), expected(), `pieces of ${n}`);
    });
  });

  it('completions and responses, whole and streamed', async () => {
    const { key } = await b.account();
    const headers = { redaction: 'true' };
    const completion = await (await b.post(key, { model: MODEL, prompt: MESSAGE }, headers, '/v1/completions')).json();
    assertMasked(lastUserText(b.openai.last().body));
    assert.equal(completion.choices[0].text.trim(), `Echo: ${RESTORED}`);

    b.openai.script((req) => ({ pieces: pieces(` Echo: ${lastUserText(req.body)}`, 4) }));
    const streamed = await readSse(
      await b.post(key, { model: MODEL, prompt: MESSAGE, stream: true }, headers, '/v1/completions'),
    );
    const text = streamed
      .filter((f) => f !== '[DONE]' && f.choices?.length)
      .map((f) => f.choices[0].text)
      .join('');
    assert.equal(text, ` Echo: ${RESTORED}`);

    const response = await (await b.post(key, { model: MODEL, input: MESSAGE }, headers, '/v1/responses')).json();
    assertMasked(lastUserText(b.openai.last().body));
    assert.equal(response.output_text, `Echo: ${RESTORED}`);

    b.openai.script((req) => ({ pieces: pieces(`Echo: ${lastUserText(req.body)}`, 5) }));
    const events = await readSse(
      await b.post(key, { model: MODEL, input: MESSAGE, stream: true }, headers, '/v1/responses'),
    );
    const deltas = events.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta);
    assert.equal(deltas.join(''), `Echo: ${RESTORED}`);
    assert.equal(events.find((e) => e.type === 'response.completed').response.output_text, `Echo: ${RESTORED}`);
  });

  it('credentials are never restored, and a placeholder the request never had stays as written', async () => {
    const { key } = await b.account();
    const secrets =
      'Connect with postgres://app:Tr0ub4dor3x@db.internal:5432/prod using Bearer abc123def456ghi789jkl012mno345pq';
    b.openai.script((req) => ({ text: `${lastUserText(req.body)} [EMAIL_9] [REDACTED_PASSWORD]` }));
    const res = await b.post(
      key,
      { model: MODEL, messages: [{ role: 'user', content: secrets }] },
      { redaction: 'true' },
    );
    const sent = lastUserText(b.openai.last().body);
    assert.ok(!sent.includes('Tr0ub4dor3x') && !sent.includes('abc123def456ghi789jkl012mno345pq'), sent);
    const content = (await res.json()).choices[0].message.content;
    assert.equal(
      content,
      'Connect with postgres://app:[REDACTED_PASSWORD]@db.internal:5432/prod using Bearer [REDACTED_TOKEN] [EMAIL_9] [REDACTED_PASSWORD]',
    );
  });

  it('tool calls: arguments masked as JSON going out, restored (JSON-escaped) coming back', async () => {
    const { key } = await b.account();
    b.openai.script({ toolCalls: [{ name: 'send_mail', arguments: '{"to":"[EMAIL_1]","name":"[NAME_1]"}' }] });
    const res = await b.post(
      key,
      {
        model: MODEL,
        messages: [{ role: 'user', content: `Mail ${PII.name} at ${PII.email}, please.` }],
        tools: [{ type: 'function', function: { name: 'send_mail', parameters: { type: 'object' } } }],
      },
      { redaction: 'true' },
    );
    const call = (await res.json()).choices[0].message.tool_calls[0];
    assert.deepEqual(JSON.parse(call.function.arguments), { to: PII.email, name: PII.name });
  });

  describe('when it applies: header, suffix, key and account defaults', () => {
    /** Was the last request sent masked? */
    const masked = () => !lastUserText(b.openai.last().body).includes(PII.email);

    it('the header and its aliases turn it on, a falsy value off; nothing said = off', async () => {
      const { key } = await b.account();
      const on: Array<Record<string, string>> = [
        { redaction: 'true' },
        { Redacted: 'yes' },
        { piiredaction: '1' },
        { PIIREDACTED: 'on' },
      ];
      for (const headers of on) {
        assert.equal((await chat(key, headers)).status, 200);
        assert.ok(masked(), JSON.stringify(headers));
      }
      for (const headers of [{}, { redaction: 'false' }, { redacted: '0' }, { piiredaction: 'off' }] as Array<
        Record<string, string>
      >) {
        const res = await chat(key, headers);
        assert.equal(res.status, 200);
        assert.ok(!masked(), JSON.stringify(headers));
        assert.equal(res.headers.get('x-redaction'), null);
      }
    });

    it('a suffix turns it on, and a falsy header does not turn it off again', async () => {
      const { key } = await b.account();
      for (const suffix of [':redaction', ':redacted', ':piiredaction', ':piiredacted', ':cheap:redaction']) {
        const res = await b.post(
          key,
          { model: `${MODEL}${suffix}`, messages: [{ role: 'user', content: MESSAGE }] },
          { redaction: 'false' },
        );
        assert.equal(res.status, 200, suffix);
        assert.ok(masked(), suffix);
        assert.equal((await res.json()).choices[0].message.content, `Echo: ${RESTORED}`);
      }
    });

    it("a key's default (always / never) and its account's (when the key inherits); the header overrides both; changes hold at once", async () => {
      const always = await b.account('10', { redaction: 'always' });
      await chat(always.key, {});
      assert.ok(masked(), 'key always');
      await chat(always.key, { redaction: 'false' });
      assert.ok(!masked(), 'key always, header false');

      const { accountId } = await b.account();
      await setAccountRedaction(accountId, 'always');
      const inheriting = await createKey(accountId);
      const never = await createKey(accountId, { redaction: 'never' });
      await chat(inheriting.key, {});
      assert.ok(masked(), 'account always, key inherits');
      await chat(never.key, {});
      assert.ok(!masked(), 'account always, key never');
      await chat(never.key, { redaction: 'true' });
      assert.ok(masked(), 'key never, header true');

      // changed while the keys are in use (and cached): it holds from the next request on
      await setAccountRedaction(accountId, 'never');
      await chat(inheriting.key, {});
      assert.ok(!masked(), 'account changed to never');
      assert.equal(await setKeyRedaction(never.record.id, 'always'), 1);
      await chat(never.key, {});
      assert.ok(masked(), 'key changed to always');
    });

    it('refused, with nothing sent or charged: a value neither true nor false, background responses', async () => {
      const { key, accountId } = await b.account();
      const before = await b.usd(accountId);
      const calls = b.openai.requests.length;
      const bad = await chat(key, { redaction: 'maybe' });
      assert.equal(bad.status, 400);
      assert.equal((await bad.json()).error.param, 'redaction');
      const background = await b.post(
        key,
        { model: MODEL, input: MESSAGE, background: true },
        { redaction: 'true' },
        '/v1/responses',
      );
      assert.equal(background.status, 400);
      assert.match((await background.json()).error.message, /not offered for background responses/);
      assert.equal(b.openai.requests.length, calls, 'nothing was sent upstream');
      assert.deepEqual(await b.usd(accountId), before);
    });
  });

  describe('messages and talk-to-gpt: applied, by a key or account default too', () => {
    const CLAUDE = 'anthropic/claude-3-5-haiku';
    let anthropic: AnthropicUpstream;
    let restoreEnv: () => Promise<void>;
    before(async () => {
      anthropic = await startAnthropicUpstream();
      restoreEnv = await useProviderEnv({ ANTHROPIC_API_KEY: anthropic.apiKey, ANTHROPIC_BASE_URL: anthropic.url });
    });
    after(async () => {
      await restoreEnv();
      await anthropic.close();
    });
    const messages = (key: string, model: string, extra = {}, headers: Record<string, string> = {}) =>
      b.post(
        key,
        { model, max_tokens: 400, messages: [{ role: 'user', content: MESSAGE }], ...extra },
        { 'x-api-key': key, ...headers },
        '/v1/messages',
      );
    /** The text of a message-style stream's deltas. */
    const streamedText = async (res: Response) =>
      (await readSse(res))
        .filter((f) => f.type === 'content_block_delta')
        .map((f) => f.delta.text ?? '')
        .join('');

    it('messages, whole and streamed, never passed through: an Anthropic model and an OpenAI one', async () => {
      const always = await b.account('10', { redaction: 'always' });
      const before = await b.usd(always.accountId);
      const whole = await messages(always.key, CLAUDE);
      const body = await whole.json();
      assert.equal(whole.status, 200, JSON.stringify(body));
      assertMasked(JSON.stringify(anthropic.last().body));
      assert.equal(body.content[0].text, `Echo: ${RESTORED}`);
      assert.match(whole.headers.get('x-redaction') ?? '', /^applied; pii=8; credentials=1$/);
      const paid = before.amount - (await b.usd(always.accountId)).amount;
      assert.ok(paid > FEE, `the fee is part of the charge (${paid})`);

      const streamed = await messages(always.key, CLAUDE, { stream: true });
      assert.equal(streamed.status, 200);
      assert.equal(await streamedText(streamed), `Echo: ${RESTORED}`);
      assertMasked(JSON.stringify(anthropic.last().body));

      b.openai.script((req) => ({ pieces: pieces(`Echo: ${lastUserText(req.body)}`, 3) }));
      const viaOpenAI = await messages(always.key, MODEL, { stream: true });
      assert.equal(await streamedText(viaOpenAI), `Echo: ${RESTORED}`);
      assertMasked(JSON.stringify(b.openai.last().body));
    });

    it('talk-to-gpt by an account default; the header turns it off; the suffix turns it on', async () => {
      const { accountId } = await b.account();
      await setAccountRedaction(accountId, 'always');
      const { key } = await createKey(accountId);
      const talk = (headers: Record<string, string> = {}, model = MODEL) =>
        b.post(key, { model, messages: [{ role: 'user', content: MESSAGE }] }, headers, '/api/talk-to-gpt');
      const res = await talk();
      assert.equal(res.status, 200);
      assertMasked(lastUserText(b.openai.last().body));
      assert.ok((await res.text()).startsWith(`Echo: ${RESTORED}<`), 'restored before the cost tag');
      await (await talk({ redaction: 'false' })).text();
      assert.ok(lastUserText(b.openai.last().body).includes(PII.email), 'the header opted out');
      await setAccountRedaction(accountId, 'never');
      await (await talk({}, `${MODEL}:redaction`)).text();
      assertMasked(lastUserText(b.openai.last().body));
    });
  });

  describe('everything that leaves is masked: the search query, tool descriptions, names', () => {
    let linkup: SearchUpstream;
    let restoreEnv: () => Promise<void>;
    before(async () => {
      linkup = await startSearchUpstream('linkup', [
        { title: 'Evergreen Terrace', url: 'https://example.org/evergreen', content: 'Springfield streets.' },
      ]);
      restoreEnv = await useProviderEnv({ LINKUP_API_KEY: linkup.apiKey, LINKUP_BASE_URL: linkup.url });
    });
    after(async () => {
      await restoreEnv();
      await linkup.close();
    });

    it(':online: the search provider gets the masked query, the model the masked turn, the caller the values', async () => {
      const { key } = await b.account();
      const res = await b.post(
        key,
        { model: `${MODEL}:online`, messages: [{ role: 'user', content: MESSAGE }] },
        { redaction: 'true' },
      );
      const body = await res.json();
      assert.equal(res.status, 200, JSON.stringify(body));
      assert.equal(linkup.requests.length, 1, 'searched once');
      const query = JSON.stringify(linkup.requests[0].body);
      for (const [category, value] of Object.entries(PII)) assert.ok(!query.includes(value), `${category}: ${query}`);
      assert.ok(query.includes('[EMAIL_1]'), query);
      const sent = JSON.stringify(b.openai.last().body);
      for (const [category, value] of Object.entries(PII)) assert.ok(!sent.includes(value), `${category}: ${sent}`);
      assert.ok(body.choices[0].message.content.includes(PII.email), 'restored in the answer');
    });

    it("tools' and a response format's descriptions, turn names and the end-user id are masked", async () => {
      const { key } = await b.account();
      const res = await b.post(
        key,
        {
          model: MODEL,
          user: PII.email,
          messages: [
            { role: 'system', name: PII.email, content: 'Be brief.' },
            { role: 'user', content: 'Hello' },
          ],
          response_format: {
            type: 'json_schema',
            json_schema: {
              name: 'reply',
              description: `A reply to ${PII.email}`,
              schema: { type: 'object', properties: { text: { type: 'string', description: `Call ${PII.phone}` } } },
            },
          },
          tools: [
            {
              type: 'function',
              function: {
                name: 'send_mail',
                description: `Mail ${PII.email} or call ${PII.phone}.`,
                parameters: {
                  type: 'object',
                  properties: { to: { type: 'string', description: `for example ${PII.email}` } },
                },
              },
            },
          ],
        },
        { redaction: 'true' },
      );
      assert.equal(res.status, 200, await res.clone().text());
      const sent = JSON.stringify(b.openai.last().body);
      assert.ok(!sent.includes(PII.email) && !sent.includes(PII.phone), sent);
      assert.ok(sent.includes('[EMAIL_1]') && sent.includes('[PHONE_1]'), sent);
    });
  });

  describe('money', () => {
    const spent = async (accountId: string, start = '10') =>
      BigInt(Number(start) * 1e9) - (await b.usd(accountId)).amount;

    it('the fee is 0.0005 USD on top of the tokens, charged once; a failed request pays nothing', async () => {
      const { key, accountId } = await b.account();
      const res = await chat(key);
      const body = await res.json();
      const tokens = textCost(GPT_4O_MINI, { input: body.usage.prompt_tokens, output: body.usage.completion_tokens });
      assert.equal(await spent(accountId), tokens + FEE);
      assert.equal(BigInt(Math.round(body.x_nanogpt_pricing.cost * 1e9)), tokens + FEE);
      const plain = await (await chat(key, {})).json();
      const plainTokens = textCost(GPT_4O_MINI, {
        input: plain.usage.prompt_tokens,
        output: plain.usage.completion_tokens,
      });
      assert.equal(await spent(accountId), tokens + FEE + plainTokens, 'an unredacted request pays no fee');

      b.openai.script({ status: 500 }, { status: 500 });
      b.openrouter.script({ status: 500 }, { status: 500 });
      const failed = await chat(key);
      assert.equal(failed.status, 502);
      assert.equal(await spent(accountId), tokens + FEE + plainTokens, 'nothing for a failed request');
    });

    it('a race: concurrent redacted requests against a small balance never overspend, each pays the fee once', async () => {
      // each costs the fee and about 200 tokens (~0.00057 USD): at most 7 of 16 fit in 0.004 USD, however
      // they interleave; each reserves its worst case (200 output tokens, the prompt, the fee) first
      const start = '0.004';
      const { key, accountId } = await b.account(start);
      const n = 16;
      const answers = await Promise.all(
        Array.from({ length: n }, () =>
          chat(key, { redaction: 'true' }, { max_tokens: 200 }).then(async (r) => ({
            status: r.status,
            body: await r.json(),
          })),
        ),
      );
      const ok = answers.filter((a) => a.status === 200);
      assert.equal(ok.length + answers.filter((a) => a.status === 402).length, n);
      assert.ok(ok.length > 0 && ok.length < n, `successes: ${ok.length}`);
      let expected = 0n;
      for (const a of ok)
        expected +=
          textCost(GPT_4O_MINI, { input: a.body.usage.prompt_tokens, output: a.body.usage.completion_tokens }) + FEE;
      assert.equal(await spent(accountId, start), expected);
    });
  });

  it('fail-closed: when masking cannot finish in time the request is refused, not sent, not charged', async () => {
    const { key, accountId } = await b.account();
    const before = await b.usd(accountId);
    const calls = b.openai.requests.length;
    config.redactionTimeoutMs = 1;
    const long = Array.from({ length: 40 }, () => MESSAGE).join('\n');
    const res = await b.post(key, { model: MODEL, messages: [{ role: 'user', content: long }] }, { redaction: 'true' });
    assert.equal(res.status, 503);
    assert.equal((await res.json()).error.code, 'redaction_unavailable');
    assert.equal(b.openai.requests.length, calls, 'nothing was sent upstream');
    assert.deepEqual(await b.usd(accountId), before);
  });
});
