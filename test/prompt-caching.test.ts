// biome-ignore-all lint/suspicious/noExplicitAny: response JSON, read field by field
// Prompt caching on chat completions (README, Prompt caching): `caching: true` and `:caching`
// route to cache-capable providers only; a conversation's next turn goes back to the provider
// that served its prefix (soft affinity, per account); `stickyprovider` turns a failure there into
// 503 `fallback_blocked_for_cache_consistency` instead of a fallback; `prompt_caching.enabled`
// puts a breakpoint into an Anthropic request; cached reads and cache writes the upstream reports
// are shown and billed at the route's cached and cache-write prices, exactly and once. Loopback
// upstreams cache prompts as OpenAI (implicitly, by prefix) and Anthropic (at breakpoints) do.
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startApi, newAccount, apiPost } from './support/api.js';
import { readSse } from './support/chatEnv.js';
import { startOpenAIUpstream, type OpenAIUpstream } from './support/upstreams/openai.js';
import { startAnthropicUpstream, type AnthropicUpstream } from './support/upstreams/anthropic.js';
import { CLAUDE_HAIKU, GPT_4O_MINI, perMillion, textCost } from './support/prices.js';
import { assertBooksBalance, settledBalances } from './support/books.js';
import { useProviderEnv } from './support/providerEnv.js';
import { promptPrefixes, rememberedRoute, rememberRoute } from '../activities/routing/cacheAffinity.js';
import type { Route } from '../activities/catalog/catalog.js';

const GPT = 'openai/gpt-4o-mini';
const HAIKU = 'anthropic/claude-3-5-haiku';
const SYSTEM = 'You are a patient geography tutor. Answer in one short sentence, and name your sources.';

describe('prompt caching: affinity, stickiness, breakpoints and cached-token billing', function () {
  this.timeout(60_000);
  let api: Awaited<ReturnType<typeof startApi>>;
  let openai: OpenAIUpstream;
  let openrouter: OpenAIUpstream;
  let anthropic: AnthropicUpstream;
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
    anthropic.promptCache(false);
    // both OpenAI-protocol upstreams cache every prefix they saw, to the token
    openai.promptCache({ minTokens: 1, increment: 1 });
    openrouter.promptCache({ minTokens: 1, increment: 1 });
  });
  afterEach(() => assertBooksBalance());

  const post = (key: string, body: unknown) => apiPost(api.base, '/api/v1/chat/completions', body, { key });
  const usd = async (accountId: string) => (await settledBalances(accountId)).USD.amount;
  const turn1 = [
    { role: 'system', content: SYSTEM },
    { role: 'user', content: 'What is the capital of France?' },
  ];
  const turn2 = (answer: string) => [
    ...turn1,
    { role: 'assistant', content: answer },
    { role: 'user', content: 'And the capital of Italy?' },
  ];
  /** What an OpenAI-style usage costs at gpt-4o-mini's prices, computed apart from the gateway's code. */
  const gptCost = (u: any) =>
    textCost(GPT_4O_MINI, {
      input: u.prompt_tokens,
      cached: u.prompt_tokens_details?.cached_tokens ?? 0,
      output: u.completion_tokens,
    });

  describe('affinity', () => {
    it("a conversation's next turn goes back to the provider that served its first (OpenAI SDK), and its cached tokens are billed at the cached price", async () => {
      const { key, accountId } = await newAccount('1');
      const client = new OpenAI({ apiKey: key, baseURL: `${api.base}/api/v1`, maxRetries: 0 });
      openai.script({ status: 503 }); // the first turn falls back to openrouter
      // `caching: true` puts caching in play: the route that serves the turn is remembered
      const first: any = await client.chat.completions.create({ model: GPT, messages: turn1, caching: true } as any);
      assert.equal(first.provider, 'openrouter');

      const before = await usd(accountId);
      // openai is first in the catalog's order and healthy now; the prefix's cache is on openrouter
      const second: any = await client.chat.completions.create({
        model: GPT,
        messages: turn2(first.choices[0].message.content) as any,
      });
      assert.equal(second.provider, 'openrouter', 'the turn went back to the provider holding its prefix');
      assert.equal(openai.requests.length, 1, 'openai saw only the failed first turn');
      assert.equal(openrouter.requests.length, 2);
      // openrouter's cache held the whole first turn's prompt
      assert.equal(second.usage.prompt_tokens_details.cached_tokens, first.usage.prompt_tokens);
      assert.ok(second.usage.prompt_tokens_details.cached_tokens > 0);
      const charged = before - (await usd(accountId));
      assert.equal(charged, gptCost(second.usage), 'cached tokens at the cached price, the rest at the input price');
      const uncached = textCost(GPT_4O_MINI, {
        input: second.usage.prompt_tokens,
        output: second.usage.completion_tokens,
      });
      assert.ok(charged < uncached, 'cheaper than the same turn without the cache');
      // the pricing extension shows the cache's share (reads at the cached price); none without the cache
      const reads = perMillion(second.usage.prompt_tokens_details.cached_tokens, GPT_4O_MINI.cachedInput);
      assert.equal(second.x_nanogpt_pricing.cacheCost, Number(reads) / 1e9);
      assert.equal(first.x_nanogpt_pricing.cacheCost, undefined);
    });

    it('is per account: another account sending the same turn is routed by the catalog order', async () => {
      const a = await newAccount('1');
      openai.script({ status: 503 });
      const first: any = await (await post(a.key, { model: GPT, messages: turn1, caching: true })).json();
      assert.equal(first.provider, 'openrouter');
      const b = await newAccount('1');
      const other: any = await (
        await post(b.key, { model: GPT, messages: turn2(first.choices[0].message.content) })
      ).json();
      assert.equal(other.provider, 'openai');
    });

    it("gives way to the caller's provider.order", async () => {
      const { key } = await newAccount('1');
      openai.script({ status: 503 });
      const first: any = await (await post(key, { model: GPT, messages: turn1, caching: true })).json();
      assert.equal(first.provider, 'openrouter');
      const res = await post(key, {
        model: GPT,
        messages: turn2(first.choices[0].message.content),
        provider: { order: ['openai', 'openrouter'] },
      });
      assert.equal(((await res.json()) as any).provider, 'openai');
    });

    it('is remembered only with caching in play: asked for, or cache reads or writes reported', async () => {
      const { key } = await newAccount('1');
      openai.script({ status: 503 });
      // no flag, and openrouter has not seen this prompt: it reports nothing cached, nothing is remembered
      const plain: any = await (await post(key, { model: GPT, messages: turn1 })).json();
      assert.equal(plain.provider, 'openrouter');
      assert.equal(plain.usage.prompt_tokens_details.cached_tokens, 0);
      const next = turn2(plain.choices[0].message.content);
      const routed: any = await (await post(key, { model: GPT, messages: next })).json();
      assert.equal(routed.provider, 'openai', 'routed by the catalog order');
      // the same prompt again on openrouter (named by the caller): it reports cached tokens, so it is remembered
      const again = await fetch(`${api.base}/api/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, 'x-provider': 'openrouter' },
        body: JSON.stringify({ model: GPT, messages: turn1 }),
      });
      assert.ok(((await again.json()) as any).usage.prompt_tokens_details.cached_tokens > 0);
      const sticks: any = await (await post(key, { model: GPT, messages: next })).json();
      assert.equal(sticks.provider, 'openrouter');
    });

    it('is remembered for an hour from its last use, then forgotten', () => {
      const route = { id: 'r1', supportsCaching: true } as Route;
      const prefixes = promptPrefixes('acct', 'm', {
        messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
      });
      const t0 = 1_000_000;
      rememberRoute(prefixes, route, t0);
      assert.equal(rememberedRoute(prefixes, [route], t0 + 59 * 60_000), route);
      // that use renewed it: an hour from then it is still there, an hour and a second later gone
      assert.equal(rememberedRoute(prefixes, [route], t0 + 118 * 60_000), route);
      assert.equal(rememberedRoute(prefixes, [route], t0 + 178 * 60_000 + 1_000), undefined);
    });
  });

  describe('stickiness', () => {
    for (const [label, sticky] of [
      ['stickyprovider: true', { stickyprovider: true }],
      ['stickyProvider: true', { stickyProvider: true }],
      ['prompt_caching.stickyProvider', { prompt_caching: { stickyProvider: true } }],
    ] as const) {
      it(`${label}: a failure of the remembered provider is 503 fallback_blocked_for_cache_consistency, nothing charged; without it the request fails over`, async () => {
        const { key, accountId } = await newAccount('1');
        openai.script({ status: 503 });
        // nothing is remembered yet: a sticky request may still fall back
        const first: any = await (await post(key, { model: GPT, messages: turn1, ...sticky })).json();
        assert.equal(first.provider, 'openrouter');
        const next = turn2(first.choices[0].message.content);

        const before = await usd(accountId);
        openrouter.script({ status: 503 });
        const blocked = await post(key, { model: GPT, messages: next, ...sticky });
        assert.equal(blocked.status, 503);
        const { error } = (await blocked.json()) as any;
        assert.equal(error.code, 'fallback_blocked_for_cache_consistency');
        assert.equal(error.type, 'service_unavailable');
        assert.match(error.message, /prompt cache is on openrouter.*not sent to openai/);
        assert.equal(openai.requests.length, 1, 'no fallback to openai');
        assert.equal(await usd(accountId), before, 'nothing charged');

        openrouter.script({ status: 503 });
        const fellOver: any = await (await post(key, { model: GPT, messages: next })).json();
        assert.equal(fellOver.provider, 'openai', 'not sticky: the request fails over');
        assert.equal(before - (await usd(accountId)), gptCost(fellOver.usage));
      });
    }

    it('streaming: the 503 comes as a JSON error before any byte of a stream', async () => {
      const { key } = await newAccount('1');
      openai.script({ status: 503 });
      const first: any = await (await post(key, { model: GPT, messages: turn1, stickyprovider: true })).json();
      openrouter.script({ status: 503 });
      const res = await post(key, {
        model: GPT,
        messages: turn2(first.choices[0].message.content),
        stream: true,
        stickyprovider: true,
      });
      assert.equal(res.status, 503);
      assert.match(res.headers.get('content-type') ?? '', /json/);
      assert.equal(((await res.json()) as any).error.code, 'fallback_blocked_for_cache_consistency');
    });

    it('a sticky request whose remembered provider answers is served there', async () => {
      const { key } = await newAccount('1');
      openai.script({ status: 503 });
      const first: any = await (await post(key, { model: GPT, messages: turn1, stickyprovider: true })).json();
      const res = await post(key, {
        model: GPT,
        messages: turn2(first.choices[0].message.content),
        stickyprovider: true,
      });
      assert.equal(res.status, 200);
      assert.equal(((await res.json()) as any).provider, 'openrouter');
      assert.equal(openai.requests.length, 1);
    });
  });

  describe('responses and the message-style API', () => {
    const to = (path: string, key: string, body: unknown) => apiPost(api.base, path, body, { key });

    it('responses: stickyprovider blocks the fallback the same way', async () => {
      const { key, accountId } = await newAccount('1');
      openai.script({ status: 503 });
      const body = { model: GPT, instructions: SYSTEM, input: 'What is the capital of France?', stickyprovider: true };
      const first: any = await (await to('/api/v1/responses', key, body)).json();
      assert.equal(first.status, 'completed');
      const before = await usd(accountId);
      openrouter.script({ status: 503 });
      const res = await to('/api/v1/responses', key, body);
      assert.equal(res.status, 503);
      assert.equal(((await res.json()) as any).error.code, 'fallback_blocked_for_cache_consistency');
      assert.equal(openai.requests.length, 1);
      assert.equal(await usd(accountId), before);
    });

    it('messages: stickyprovider blocks the fallback (message-style envelope); prompt_caching is refused, naming cache_control', async () => {
      const { key } = await newAccount('1');
      const body = { model: HAIKU, max_tokens: 64, messages: [{ role: 'user', content: 'Capital of France?' }] };
      anthropic.script({ error: { status: 529 } });
      const first: any = await (await to('/api/v1/messages', key, { ...body, stickyprovider: true })).json();
      assert.equal(first.provider, 'openrouter');
      openrouter.script({ status: 503 });
      const blocked = await to('/api/v1/messages', key, { ...body, stickyprovider: true });
      assert.equal(blocked.status, 503);
      const json: any = await blocked.json();
      assert.equal(json.type, 'error');
      assert.match(json.error.message, /prompt cache is on openrouter.*not sent to anthropic/);
      const refused = await to('/api/v1/messages', key, { ...body, prompt_caching: { enabled: true } });
      assert.equal(refused.status, 400);
      assert.match(((await refused.json()) as any).error.message, /cache_control/);
    });
  });

  it("messages: a 1-hour breakpoint adds the extended-cache beta beside the caller's own betas", async () => {
    const { key } = await newAccount('1');
    const res = await fetch(`${api.base}/api/v1/messages`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${key}`,
        'anthropic-beta': 'token-efficient-tools-2025-02-19',
      },
      body: JSON.stringify({
        model: HAIKU,
        max_tokens: 64,
        messages: [
          { role: 'user', content: [{ type: 'text', text: 'Hi', cache_control: { type: 'ephemeral', ttl: '1h' } }] },
        ],
      }),
    });
    assert.equal(res.status, 200);
    assert.equal(
      anthropic.last().headers['anthropic-beta'],
      'token-efficient-tools-2025-02-19,extended-cache-ttl-2025-04-11',
    );
  });

  describe('caching: true and :caching', () => {
    it('route to cache-capable providers, and fail clearly when a model has none', async () => {
      const { key } = await newAccount('1');
      const ok = await post(key, { model: GPT, messages: turn1, caching: true });
      assert.equal(ok.status, 200);
      for (const body of [
        { model: 'meta-llama/llama-3.3-70b-instruct', messages: turn1, caching: true },
        { model: 'meta-llama/llama-3.3-70b-instruct:caching', messages: turn1 },
        { model: 'meta-llama/llama-3.3-70b-instruct:cached', messages: turn1 },
      ]) {
        const res = await post(key, body);
        assert.equal(res.status, 400, JSON.stringify(body));
        const { error } = (await res.json()) as any;
        assert.equal(error.code, 'no_fallback_available');
        assert.match(error.message, /openrouter.*prompt caching \(caching: true or a :caching suffix\)/);
      }
      assert.equal(openrouter.requests.length, 0, 'nothing was sent to a provider that does not cache');
    });
  });

  describe('prompt_caching on an Anthropic route', () => {
    it('puts a breakpoint after the last message; the next turn reads it; writes and reads are billed at their prices', async () => {
      const { key, accountId } = await newAccount('1');
      anthropic.promptCache(true);
      let before = await usd(accountId);
      const first: any = await (
        await post(key, { model: HAIKU, messages: turn1, prompt_caching: { enabled: true } })
      ).json();
      assert.equal(first.provider, 'anthropic');
      const sent = anthropic.last().body;
      assert.deepEqual(sent.messages.at(-1).content.at(-1).cache_control, { type: 'ephemeral' });
      assert.equal(typeof sent.system, 'string', 'no breakpoint on the system prompt');
      assert.equal(anthropic.last().headers['anthropic-beta'], undefined, 'no beta for 5-minute breakpoints');
      const written = first.usage.cache_creation_input_tokens;
      assert.ok(written > 0, 'the first turn wrote the cache');
      assert.equal(first.usage.prompt_tokens_details.cached_tokens, 0);
      assert.equal(
        before - (await usd(accountId)),
        textCost(CLAUDE_HAIKU, {
          input: first.usage.prompt_tokens,
          written,
          output: first.usage.completion_tokens,
        }),
        'cache writes at the cache-write price',
      );
      // the pricing extension's cacheCost: the writes' share of the cost (USD), exactly
      const writes = perMillion(written, CLAUDE_HAIKU.cacheWrite ?? CLAUDE_HAIKU.input);
      assert.ok(writes > 0n);
      assert.equal(first.x_nanogpt_pricing.cacheCost, Number(writes) / 1e9);

      before = await usd(accountId);
      const second: any = await (
        await post(key, {
          model: HAIKU,
          messages: turn2(first.choices[0].message.content),
          prompt_caching: { enabled: true },
        })
      ).json();
      const read = second.usage.prompt_tokens_details.cached_tokens;
      assert.equal(read, written, 'the second turn read what the first wrote');
      assert.equal(
        before - (await usd(accountId)),
        textCost(CLAUDE_HAIKU, {
          input: second.usage.prompt_tokens,
          cached: read,
          written: second.usage.cache_creation_input_tokens ?? 0,
          output: second.usage.completion_tokens,
        }),
      );
      const cacheShare =
        perMillion(read, CLAUDE_HAIKU.cachedInput) +
        perMillion(second.usage.cache_creation_input_tokens ?? 0, CLAUDE_HAIKU.cacheWrite ?? CLAUDE_HAIKU.input);
      assert.equal(second.x_nanogpt_pricing.cacheCost, Number(cacheShare) / 1e9);
    });

    it('cut_after_message_index and ttl 1h: the breakpoint on that message, writes at the 1-hour price (streaming)', async () => {
      const { key, accountId } = await newAccount('1');
      anthropic.promptCache(true);
      const before = await usd(accountId);
      const res = await post(key, {
        model: HAIKU,
        messages: turn1,
        stream: true,
        stream_options: { include_usage: true },
        promptCaching: { enabled: true, ttl: '1h', cut_after_message_index: 0 },
      });
      const frames = await readSse(res);
      const usage = frames.filter((f) => f !== '[DONE]' && f.usage).at(-1).usage;
      const sent = anthropic.last().body;
      assert.deepEqual(sent.system, [{ type: 'text', text: SYSTEM, cache_control: { type: 'ephemeral', ttl: '1h' } }]);
      assert.equal(anthropic.last().headers['anthropic-beta'], 'extended-cache-ttl-2025-04-11');
      assert.equal(sent.messages.at(-1).content.at(-1).cache_control, undefined);
      assert.ok(usage.cache_creation_input_tokens > 0);
      assert.equal(
        before - (await usd(accountId)),
        textCost(CLAUDE_HAIKU, {
          input: usage.prompt_tokens,
          written1h: usage.cache_creation_input_tokens,
          output: usage.completion_tokens,
        }),
      );
    });

    it("the caller's own breakpoint stays, and none is added past Anthropic's four", async () => {
      const { key } = await newAccount('1');
      const part = (text: string, ttl?: string) => ({
        type: 'text',
        text,
        cache_control: ttl ? { type: 'ephemeral', ttl } : { type: 'ephemeral' },
      });
      const messages = [
        { role: 'system', content: [part('one', '1h'), part('two', '1h'), part('three', '1h'), part('four', '1h')] },
        { role: 'user', content: 'Hello' },
      ];
      const res = await post(key, { model: HAIKU, messages, prompt_caching: { enabled: true } });
      assert.equal(res.status, 200);
      assert.equal(anthropic.last().body.messages.at(-1).content.at(-1).cache_control, undefined);
    });

    it('on an OpenAI route caching is implicit: nothing is added, the gateway fields do not reach the upstream', async () => {
      const { key } = await newAccount('1');
      const res = await post(key, {
        model: GPT,
        messages: turn1,
        prompt_caching: { enabled: true, ttl: '1h' },
        stickyprovider: false,
      });
      assert.equal(res.status, 200);
      const sent = openai.last().body;
      assert.equal(sent.prompt_caching, undefined);
      assert.equal(sent.stickyprovider, undefined);
      assert.deepEqual(sent.messages, turn1);
    });
  });

  it('provider discovery shows the cache prices, per 1k tokens with the markup', async () => {
    const body: any = await (await fetch(`${api.base}/api/models/${encodeURIComponent(HAIKU)}/providers`)).json();
    const route = body.providers.find((p: any) => p.provider === 'anthropic');
    assert.equal(route.supportsCaching, true);
    // 0.08 / 1.00 / 1.60 USD per 1M, +5%
    assert.equal(route.pricing.cachedInputPer1kTokens, 0.000084);
    assert.equal(route.pricing.cacheWritePer1kTokens, 0.00105);
    assert.equal(route.pricing.cacheWrite1hPer1kTokens, 0.00168);
  });

  describe('validation', () => {
    const cases: Array<[string, Record<string, unknown>, string, RegExp?]> = [
      ['ttl not 5m or 1h', { prompt_caching: { enabled: true, ttl: '2h' } }, 'prompt_caching.ttl'],
      [
        'negative cut',
        { prompt_caching: { enabled: true, cut_after_message_index: -1 } },
        'prompt_caching.cut_after_message_index',
      ],
      [
        'fractional cut',
        { prompt_caching: { enabled: true, cut_after_message_index: 0.5 } },
        'prompt_caching.cut_after_message_index',
      ],
      [
        'cut past the messages',
        { prompt_caching: { enabled: true, cut_after_message_index: 2 } },
        'prompt_caching.cut_after_message_index',
        /'messages' has 2 \(indexes 0-1\)/,
      ],
      [
        'ttl without enabled',
        { promptCaching: { ttl: '1h' } },
        'promptCaching.ttl',
        /only promptCaching.enabled: true/,
      ],
      ['enabled not a boolean', { prompt_caching: { enabled: 'yes' } }, 'prompt_caching.enabled'],
      [
        'unknown prompt_caching field',
        { prompt_caching: { enabled: true, ttl_seconds: 60 } },
        'prompt_caching.ttl_seconds',
      ],
      ['prompt_caching not an object', { prompt_caching: true }, 'prompt_caching'],
      ['stickyprovider not a boolean', { stickyprovider: 'yes' }, 'stickyprovider'],
      [
        'both spellings, disagreeing',
        { stickyprovider: true, stickyProvider: false },
        'stickyProvider',
        /spelled twice/,
      ],
      [
        'both prompt_caching spellings, disagreeing',
        { prompt_caching: { enabled: true }, promptCaching: { enabled: false } },
        'promptCaching',
        /spelled twice/,
      ],
      ['caching not a boolean', { caching: 'on' }, 'caching'],
      [
        'inline cache_control with a bad ttl',
        {
          messages: [
            { role: 'user', content: [{ type: 'text', text: 'x', cache_control: { type: 'ephemeral', ttl: '2h' } }] },
          ],
        },
        'messages[0].content[0].cache_control.ttl',
      ],
    ];
    for (const [label, extra, param, message] of cases) {
      it(`${label} → 400 invalid_parameter_value naming ${param}`, async () => {
        const { key, accountId } = await newAccount('1');
        const before = await usd(accountId);
        const res = await post(key, { model: GPT, messages: turn1, ...extra });
        assert.equal(res.status, 400);
        const { error } = (await res.json()) as any;
        assert.equal(error.code, 'invalid_parameter_value');
        assert.equal(error.type, 'invalid_request_error');
        assert.equal(error.param, param);
        if (message) assert.match(error.message, message);
        assert.equal(openai.requests.length + openrouter.requests.length, 0);
        assert.equal(await usd(accountId), before);
      });
    }
  });

  it('race: concurrent turns sharing a prefix are each charged exactly once, at their own cached tokens', async () => {
    const { key, accountId } = await newAccount('1');
    const first: any = await (await post(key, { model: GPT, messages: turn1 })).json();
    const next = turn2(first.choices[0].message.content);
    const before = await usd(accountId);
    const answers: any[] = await Promise.all(
      Array.from({ length: 12 }, async (_, i) => {
        const messages = [...next.slice(0, -1), { role: 'user', content: `And the capital of country number ${i}?` }];
        const res = await post(key, { model: GPT, messages, stickyprovider: true });
        assert.equal(res.status, 200);
        return res.json();
      }),
    );
    for (const a of answers) {
      assert.equal(a.provider, 'openai');
      assert.ok(a.usage.prompt_tokens_details.cached_tokens >= first.usage.prompt_tokens);
    }
    const expected = answers.reduce((n, a) => n + gptCost(a.usage), 0n);
    assert.equal(before - (await usd(accountId)), expected);
    await assertBooksBalance(accountId);
  });
});
