// biome-ignore-all lint/suspicious/noExplicitAny: wire JSON
// Web search: POST /api/web and `:online` / `web_search` / `web_search_options` on chat, responses
// and talk-to-gpt, against loopback Linkup, Tavily and SearXNG upstreams speaking their real JSON
// (test/support/upstreams/search.ts), failures included. The spec's flat fee (standard 0.006 USD,
// deep 0.06 USD) charged once on the provider that answered, nothing for a failure; results put
// before the model as a numbered system message, and the answer's [n] markers returned as
// `url_citation` annotations (the openai SDK reads them); every error code; a race.
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { useChatBench, readSse } from './support/chatEnv.js';
import { useProviderEnv } from './support/providerEnv.js';
import { type Doc, type SearchUpstream, startPages, startSearchUpstream } from './support/upstreams/search.js';
import { CLAUDE_HAIKU, GPT_4O_MINI, textCost, textPrices } from './support/prices.js';
import { type AnthropicUpstream, startAnthropicUpstream } from './support/upstreams/anthropic.js';
import { db } from '../activities/db.js';
import { assertBooksBalance } from './support/books.js';

const STANDARD = 6_000_000n; // 0.006 USD in nano-USD
const DEEP = 60_000_000n; // 0.06 USD

const DOCS: Doc[] = [
  {
    title: 'Tides of the Bay of Fundy',
    url: 'https://tides.example.org/fundy',
    content: 'The Bay of Fundy has the highest tides in the world, up to 16 metres.',
    date: '2025-03-01',
  },
  {
    title: 'Fundy National Park',
    url: 'https://parks.example.ca/fundy',
    content: 'Fundy National Park lies on the bay, with tides visible from its trails.',
    date: '2021-06-15',
  },
  {
    title: 'Old tides almanac',
    url: 'https://almanac.example.com/tides',
    content: 'An almanac of tides from 1998.',
    date: '1998-01-01',
  },
];

describe('web search', function () {
  this.timeout(60_000);
  const bench = useChatBench();
  let linkup: SearchUpstream;
  let tavily: SearchUpstream;
  let searxng: SearchUpstream;
  let anthropic: AnthropicUpstream;
  let restore: () => Promise<void>;

  before(async () => {
    linkup = await startSearchUpstream('linkup', DOCS);
    tavily = await startSearchUpstream('tavily', DOCS);
    searxng = await startSearchUpstream('searxng', DOCS);
    anthropic = await startAnthropicUpstream();
    restore = await useProviderEnv({
      ANTHROPIC_API_KEY: anthropic.apiKey,
      ANTHROPIC_BASE_URL: anthropic.url,
      LINKUP_API_KEY: linkup.apiKey,
      LINKUP_BASE_URL: linkup.url,
      TAVILY_API_KEY: tavily.apiKey,
      TAVILY_BASE_URL: tavily.url,
      SEARXNG_URL: searxng.url,
    });
  });
  after(async () => {
    await restore();
    await Promise.all([linkup.close(), tavily.close(), searxng.close(), anthropic.close()]);
  });
  beforeEach(() => {
    linkup.reset();
    tavily.reset();
    searxng.reset();
  });

  const web = (key: string, body: unknown) => bench().post(key, body, {}, '/api/web');
  const spent = async (accountId: string, start: bigint) => start - (await bench().usd(accountId)).amount;
  const charges = async (accountId: string) =>
    Number(
      (
        await db().pool.query(`SELECT count(*) AS n FROM ledger_entries WHERE account_id = $1 AND kind = 'charge'`, [
          accountId,
        ])
      ).rows[0].n,
    );

  describe('POST /api/web', () => {
    it('searchResults through Linkup (the default), filters passed on, 0.006 USD charged once', async () => {
      const { key, accountId } = await bench().account('1');
      const res = await web(key, {
        query: 'tides of Fundy',
        includeDomains: ['example.org', 'example.ca'],
        excludeDomains: ['parks.example.ca'],
        fromDate: '2020-01-01',
        toDate: '2026-01-01',
        includeImages: true,
      });
      assert.equal(res.status, 200, await res.clone().text());
      const a: any = await res.json();
      assert.deepEqual(
        a.data.map((d: any) => [d.type, d.url]),
        [
          ['text', 'https://tides.example.org/fundy'],
          ['image', 'https://tides.example.org/fundy/image.png'],
        ],
      );
      assert.equal(a.data[0].title, 'Tides of the Bay of Fundy');
      assert.match(a.data[0].content, /highest tides/);
      assert.equal(a.data[1].imageUrl, 'https://tides.example.org/fundy/image.png');
      assert.equal(a.metadata.provider, 'linkup');
      assert.equal(a.metadata.depth, 'standard');
      assert.equal(a.metadata.outputType, 'searchResults');
      assert.equal(a.metadata.cost, 0.006);
      const sent = linkup.requests[0].body;
      assert.equal(sent.q, 'tides of Fundy');
      assert.equal(sent.depth, 'standard');
      assert.deepEqual(sent.includeDomains, ['example.org', 'example.ca']);
      assert.equal(sent.fromDate, '2020-01-01');
      assert.equal(await spent(accountId, 1_000_000_000n), STANDARD);
      assert.equal(await charges(accountId), 1);
    });

    it('sourcedAnswer and structured through Linkup; deep costs 0.06 USD', async () => {
      const { key, accountId } = await bench().account('1');
      const sa: any = await (
        await web(key, { query: 'Fundy tides', outputType: 'sourcedAnswer', depth: 'deep' })
      ).json();
      assert.match(sa.data.answer, /^According to /);
      assert.ok(sa.data.sources.some((s: any) => s.url === 'https://tides.example.org/fundy' && s.name && s.snippet));
      assert.equal(linkup.requests[0].body.depth, 'deep');
      assert.equal(sa.metadata.cost, 0.06);
      const schema = JSON.stringify({ type: 'object', properties: { place: { type: 'string' } } });
      const st: any = await (
        await web(key, { query: 'Fundy tides', outputType: 'structured', structuredOutputSchema: schema })
      ).json();
      assert.equal(typeof st.data.place, 'string');
      assert.equal(linkup.requests[1].body.structuredOutputSchema, schema);
      assert.equal(await spent(accountId, 1_000_000_000n), DEEP + STANDARD);
    });

    it('Tavily: basic/advanced depth, its answer, dates and domains in its own field names', async () => {
      const { key, accountId } = await bench().account('1');
      const res = await web(key, {
        query: 'Fundy tides',
        provider: 'Tavily',
        outputType: 'sourcedAnswer',
        depth: 'deep',
        fromDate: '2020-01-01',
        includeDomains: ['example.org'],
      });
      assert.equal(res.status, 200, await res.clone().text());
      const a: any = await res.json();
      assert.match(a.data.answer, /Tides of the Bay of Fundy/);
      assert.deepEqual(
        a.data.sources.map((s: any) => s.url),
        ['https://tides.example.org/fundy'],
      );
      const sent = tavily.requests[0];
      assert.equal(sent.headers.authorization, `Bearer ${tavily.apiKey}`);
      assert.equal(sent.body.search_depth, 'advanced');
      assert.equal(sent.body.include_answer, 'advanced');
      assert.equal(sent.body.start_date, '2020-01-01');
      assert.deepEqual(sent.body.include_domains, ['example.org']);
      assert.equal(linkup.requests.length, 0, 'a named provider is the only one tried');
      assert.equal(await spent(accountId, 1_000_000_000n), DEEP);
    });

    it('SearXNG: GET with format=json, domains and exact dates applied by the gateway', async () => {
      const { key } = await bench().account('1');
      const a: any = await (
        await web(key, {
          query: 'Fundy tides',
          provider: 'searxng',
          excludeDomains: ['example.ca'],
          fromDate: '1999-01-01',
        })
      ).json();
      assert.deepEqual(
        a.data.map((d: any) => d.url),
        ['https://tides.example.org/fundy'],
      );
      const q = searxng.requests[0].query;
      assert.equal(q.get('format'), 'json');
      assert.equal(q.get('q'), 'Fundy tides');
      assert.equal(a.metadata.provider, 'searxng');
    });

    it('SearXNG deep fetches the top pages through the SSRF guard (refused by default, allowed when opened)', async () => {
      const pages = await startPages({
        fundy: '<html><script>x()</script><p>Full page: tides &amp; whales.</p></html>',
      });
      const docs: Doc[] = [{ title: 'Fundy page', url: `${pages.url}/fundy`, content: 'snippet about fundy' }];
      const local = await startSearchUpstream('searxng', docs);
      const undo = await useProviderEnv({ SEARXNG_URL: local.url, SWITCHYARD_FETCH_ALLOW_PRIVATE: undefined });
      try {
        const { key } = await bench().account('1');
        const guarded: any = await (await web(key, { query: 'fundy', provider: 'searxng', depth: 'deep' })).json();
        assert.equal(guarded.data[0].content, 'snippet about fundy', 'a loopback page is not fetched');
        assert.equal(pages.hits.length, 0);
        process.env.SWITCHYARD_FETCH_ALLOW_PRIVATE = '1';
        const fetched: any = await (await web(key, { query: 'fundy', provider: 'searxng', depth: 'deep' })).json();
        assert.equal(fetched.data[0].content, 'Full page: tides & whales.');
        assert.deepEqual(pages.hits, ['fundy']);
      } finally {
        delete process.env.SWITCHYARD_FETCH_ALLOW_PRIVATE;
        await undo();
        await local.close();
        await pages.close();
      }
    });

    it('falls back from a failing provider to the next, charging once; a named one does not fall back', async () => {
      const { key, accountId } = await bench().account('1');
      linkup.script({ status: 503 });
      const a: any = await (await web(key, { query: 'Fundy tides' })).json();
      assert.equal(a.metadata.provider, 'tavily');
      assert.equal(await charges(accountId), 1);
      linkup.script({ drop: true });
      const named = await web(key, { query: 'Fundy tides', provider: 'linkup' });
      assert.equal(named.status, 502);
      assert.equal(await spent(accountId, 1_000_000_000n), STANDARD, 'the failure is not charged');
    });

    it('every provider failing (Linkup 500, Tavily 429, SearXNG 403 without JSON) is a 502, not charged', async () => {
      const { key, accountId } = await bench().account('1');
      linkup.script({ status: 500 });
      tavily.script({ status: 429 });
      searxng.script({ status: 403 });
      const res = await web(key, { query: 'Fundy tides' });
      assert.equal(res.status, 502);
      const e: any = await res.json();
      assert.equal(e.error.code, 'all_fallbacks_failed');
      assert.ok(!JSON.stringify(e).includes('Too many requests'), 'the upstream words stay in the log');
      // our own credentials refused (Linkup 401, Tavily 432 over its plan): a 502, not retried elsewhere
      linkup.script({ status: 401 });
      assert.equal((await web(key, { query: 'Fundy tides' })).status, 502);
      tavily.script({ status: 432 });
      assert.equal((await web(key, { query: 'Fundy tides', provider: 'tavily' })).status, 502);
      assert.equal(await spent(accountId, 1_000_000_000n), 0n);
      assert.equal((await bench().usd(accountId)).held, 0n, 'every reservation released');
      assert.equal(await charges(accountId), 0);
    });

    it('bad input: 400s with the param named, nothing charged', async () => {
      const { key, accountId } = await bench().account('1');
      const cases: Array<[unknown, string]> = [
        [{}, 'query'],
        [{ query: 'x', outputType: 'structured' }, 'structuredOutputSchema'],
        [{ query: 'x', outputType: 'structured', structuredOutputSchema: '[1]' }, 'structuredOutputSchema'],
        [{ query: 'x', provider: 'exa' }, 'provider'],
        [{ query: 'x', provider: 'nosuch' }, 'provider'],
        [{ query: 'x', fromDate: '2025-02-30x' }, 'fromDate'],
        [{ query: 'x', fromDate: '2025-02-01', toDate: '2024-01-01' }, 'fromDate'],
        [
          { query: 'x', provider: 'tavily', outputType: 'structured', structuredOutputSchema: '{"type":"object"}' },
          'outputType',
        ],
      ];
      for (const [body, param] of cases) {
        const res = await web(key, body);
        assert.equal(res.status, 400, JSON.stringify(body));
        const e: any = await res.json();
        assert.ok(String(e.error.param).includes(param), `${JSON.stringify(body)}: ${JSON.stringify(e)}`);
      }
      assert.equal(await spent(accountId, 1_000_000_000n), 0n);
    });

    it('402 webSearch_balance_required when the balance cannot pay the fee', async () => {
      const { key } = await bench().account('0.005');
      const res = await web(key, { query: 'Fundy tides' });
      assert.equal(res.status, 402);
      assert.equal(((await res.json()) as any).error.code, 'webSearch_balance_required');
      assert.equal(linkup.requests.length, 0);
    });

    it('a race: concurrent searches never overspend, each success charged exactly once', async () => {
      const { key, accountId } = await bench().account('0.03'); // five standard searches
      const statuses = await Promise.all(
        Array.from({ length: 12 }, () => web(key, { query: 'Fundy tides' }).then((r) => r.status)),
      );
      const ok = statuses.filter((s) => s === 200).length;
      assert.equal(ok + statuses.filter((s) => s === 402).length, 12);
      assert.equal(ok, 5);
      assert.equal(await spent(accountId, 30_000_000n), STANDARD * 5n);
      assert.equal(await charges(accountId), 5);
    });
  });

  describe('on chat', () => {
    const last = () => bench().openai.requests.at(-1)!.body;

    it(':online: the results before the user message, numbered; the openai SDK gets url_citation annotations', async () => {
      const { key, accountId } = await bench().account('1');
      bench().openai.script({ text: 'The Bay of Fundy has the highest tides [1], seen from the park [2].' });
      const client = new OpenAI({ apiKey: key, baseURL: `${bench().base}/v1` });
      const c = await client.chat.completions.create({
        model: 'openai/gpt-4o-mini:online',
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'Where are the highest tides? Fundy?' },
        ],
      });
      const sent = last().messages;
      assert.equal(sent.length, 3);
      assert.equal(sent[1].role, 'system');
      assert.match(sent[1].content, /^A web search was conducted on \d{4}-\d{2}-\d{2}/);
      assert.match(sent[1].content, /\[1\] Tides of the Bay of Fundy\nURL: https:\/\/tides\.example\.org\/fundy/);
      assert.match(sent[1].content, /\[2\] Fundy National Park/);
      assert.equal(sent[2].role, 'user');
      assert.equal(linkup.requests[0].body.q, 'Where are the highest tides? Fundy?');
      const annotations = c.choices[0].message.annotations!;
      assert.equal(annotations.length, 2);
      assert.equal(annotations[0].type, 'url_citation');
      assert.equal(annotations[0].url_citation.url, 'https://tides.example.org/fundy');
      const text = c.choices[0].message.content!;
      assert.equal(text.slice(annotations[0].url_citation.start_index, annotations[0].url_citation.end_index), '[1]');
      assert.equal(annotations[1].url_citation.url, 'https://parks.example.ca/fundy');
      assert.ok(((c as any).citations as string[]).includes('https://almanac.example.com/tides'));
      assert.equal((c as any).x_nanogpt_pricing.webSearch.cost, 0.006);
      const model = textCost(GPT_4O_MINI, { input: c.usage!.prompt_tokens, output: c.usage!.completion_tokens });
      assert.equal(await spent(accountId, 1_000_000_000n), STANDARD + model);
      assert.equal(await charges(accountId), 2);
    });

    it('streaming: the annotations ride on the finishing chunk; the search charge stands', async () => {
      const { key, accountId } = await bench().account('1');
      bench().openai.script({ text: 'Highest tides [1].' });
      const frames = await readSse(
        await bench().post(key, {
          model: 'openai/gpt-4o-mini:online/tavily',
          stream: true,
          messages: [{ role: 'user', content: 'Fundy tides?' }],
        }),
      );
      const finishing = frames.find((f: any) => f?.choices?.[0]?.finish_reason);
      assert.equal(finishing.choices[0].delta.annotations[0].url_citation.url, 'https://tides.example.org/fundy');
      assert.equal(finishing.x_nanogpt_pricing.webSearch.provider, 'tavily');
      assert.equal(tavily.requests.length, 1);
      assert.equal(linkup.requests.length, 0);
      // the stream reached the caller: the search and the model call stand, once each
      const model = textCost(GPT_4O_MINI, {
        input: finishing.x_nanogpt_pricing.inputTokens,
        output: finishing.x_nanogpt_pricing.outputTokens,
      });
      await new Promise((r) => setTimeout(r, 50)); // the response's close event, which must not refund
      assert.equal(await spent(accountId, 1_000_000_000n), STANDARD + model);
      assert.equal(await charges(accountId), 2);
    });

    it('override rules: false keeps :online; an object with enabled:true overrides the suffix field by field', async () => {
      const { key } = await bench().account('1');
      const ask = (model: string, extra: Record<string, unknown>) =>
        bench().post(key, { model, messages: [{ role: 'user', content: 'Fundy tides?' }], ...extra });
      assert.equal((await ask('openai/gpt-4o-mini:online', { web_search: false })).status, 200);
      assert.equal(linkup.requests.length, 1, 'web_search: false does not cancel :online');
      await ask('openai/gpt-4o-mini:online/linkup', { web_search: { provider: 'tavily' } });
      assert.equal(linkup.requests.length, 2, 'without enabled: true the suffix wins');
      await ask('openai/gpt-4o-mini:online/linkup', {
        webSearch: { enabled: true, provider: 'tavily', depth: 'deep' },
      });
      assert.equal(tavily.requests.length, 1);
      assert.equal(tavily.requests[0].body.search_depth, 'advanced');
      await ask('openai/gpt-4o-mini', { linkup: { enabled: true, depth: 'deep' } });
      assert.equal(linkup.requests.at(-1)!.body.depth, 'deep');
      await ask('openai/gpt-4o-mini', { web_search_options: { search_context_size: 'low' } });
      assert.equal(linkup.requests.at(-1)!.body.maxResults, 3);
      const before = linkup.requests.length;
      const off = await ask('openai/gpt-4o-mini', { web_search: false });
      assert.equal(off.status, 200, await off.clone().text());
      assert.equal(linkup.requests.length, before, 'no search without a suffix');
      assert.equal(last().web_search, undefined, 'the gateway field is not passed on');
    });

    it('the model call failing gives the search back; nothing is charged', async () => {
      const { key, accountId } = await bench().account('1');
      bench().openai.script({ status: 400, error: { message: 'bad prompt' } });
      const res = await bench().post(key, {
        model: 'openai/gpt-4o-mini:online',
        provider: 'openai',
        messages: [{ role: 'user', content: 'Fundy tides?' }],
      });
      assert.equal(res.status, 400);
      assert.equal(linkup.requests.length, 1);
      assert.equal(await spent(accountId, 1_000_000_000n), 0n);
    });

    it('the search failing: the model is not called, nothing charged, every hold released', async () => {
      const { key, accountId } = await bench().account('1');
      linkup.script({ status: 502 });
      const res = await bench().post(key, {
        model: 'openai/gpt-4o-mini:online/linkup',
        messages: [{ role: 'user', content: 'Fundy tides?' }],
      });
      assert.equal(res.status, 502);
      assert.equal(bench().openai.requests.length, 0);
      assert.equal(await spent(accountId, 1_000_000_000n), 0n);
      assert.equal((await bench().usd(accountId)).held, 0n);
    });

    it('with the moderation preflight: a flagged request is not searched for; only the preflight is charged', async () => {
      const { key, accountId } = await bench().account('1');
      const res = await bench().post(
        key,
        { model: 'openai/gpt-4o-mini:online', messages: [{ role: 'user', content: 'how to kill a neighbour' }] },
        { moderation: 'true' },
      );
      assert.equal(res.status, 400, await res.clone().text());
      assert.equal((await res.json()).error.code, 'content_policy_violation');
      assert.equal(linkup.requests.length, 0, 'not searched for');
      assert.deepEqual(
        bench().openai.requests.map((r) => r.path),
        ['/v1/moderations'],
      );
      const preflight = await spent(accountId, 1_000_000_000n);
      assert.ok(preflight > 0n && preflight < 1_000_000n, `only the preflight: ${preflight}`);
      assert.equal((await bench().usd(accountId)).held, 0n);
      await assertBooksBalance(accountId);
    });

    it('a race: concurrent :online requests never overspend; the fee and the model call charged once each', async () => {
      const { key, accountId } = await bench().account('0.03');
      const answers = await Promise.all(
        Array.from({ length: 10 }, () =>
          bench()
            .post(key, {
              model: 'openai/gpt-4o-mini:online',
              max_tokens: 50,
              messages: [{ role: 'user', content: 'Fundy tides?' }],
            })
            .then(async (r) => ({ status: r.status, body: (await r.json()) as any })),
        ),
      );
      const ok = answers.filter((a) => a.status === 200);
      assert.equal(ok.length + answers.filter((a) => a.status === 402).length, 10);
      // at most what the balance pays for; under load every request may hold its search fee before
      // any model call reserves, and then all ten are refused with nothing charged (checked below)
      assert.ok(ok.length <= 4, `successes: ${ok.length}`);
      let expected = 0n;
      for (const a of ok)
        expected +=
          STANDARD +
          textCost(GPT_4O_MINI, { input: a.body.usage.prompt_tokens, output: a.body.usage.completion_tokens });
      assert.equal(await spent(accountId, 30_000_000n), expected);
      assert.equal(await charges(accountId), 2 * ok.length);
      assert.equal((await bench().usd(accountId)).held, 0n);
    });

    it('402 webSearch_balance_required and both_balance_required', async () => {
      const poor = await bench().account('0.001');
      const a = await bench().post(poor.key, {
        model: 'openai/gpt-4o-mini:online',
        messages: [{ role: 'user', content: 'Fundy tides?' }],
      });
      assert.equal(a.status, 402);
      assert.equal(((await a.json()) as any).error.code, 'webSearch_balance_required');
      assert.equal(linkup.requests.length, 0);
      // enough for the search, not for the search and the model call's worst case together
      const some = await bench().account('0.0065');
      const b = await bench().post(some.key, {
        model: 'openai/gpt-4o-mini:online',
        max_tokens: 16000,
        messages: [{ role: 'user', content: 'Fundy tides?' }],
      });
      assert.equal(b.status, 402);
      assert.equal(((await b.json()) as any).error.code, 'both_balance_required');
      assert.equal(linkup.requests.length, 0, 'checked before the search is made');
      assert.equal(await spent(some.accountId, 6_500_000n), 0n);
      assert.equal((await bench().usd(some.accountId)).held, 0n, 'the search fee is released');
    });

    it('bad web_search values are 400s naming the field', async () => {
      const { key } = await bench().account('1');
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ web_search: 'yes' }, 'web_search'],
        [{ web_search: { enabled: true, provider: 'kagi' } }, 'web_search.provider'],
        [{ web_search: { depth: 'medium' } }, 'web_search.depth'],
        [{ web_search_options: { search_context_size: 'huge' } }, 'web_search_options.search_context_size'],
      ];
      for (const [extra, param] of cases) {
        const res = await bench().post(key, {
          model: 'openai/gpt-4o-mini',
          messages: [{ role: 'user', content: 'hi' }],
          ...extra,
        });
        assert.equal(res.status, 400);
        assert.equal(((await res.json()) as any).error.param, param);
      }
      const suffix = await bench().post(key, {
        model: 'openai/gpt-4o-mini:online/brave',
        messages: [{ role: 'user', content: 'hi' }],
      });
      assert.equal(suffix.status, 400);
    });

    it('native search: web_search_options to a route that offers it, the fee in the bill; 400 native_web_search_unavailable otherwise', async () => {
      const { key, accountId } = await bench().account('1');
      const ok = await bench().post(key, {
        model: 'openai/gpt-4o-mini-search-preview',
        web_search: { provider: 'native', search_context_size: 'high' },
        messages: [{ role: 'user', content: 'Fundy tides?' }],
      });
      assert.equal(ok.status, 200, await ok.clone().text());
      const c: any = await ok.json();
      assert.deepEqual(last().web_search_options, { search_context_size: 'high' });
      assert.equal(last().model, 'gpt-4o-mini-search-preview');
      assert.deepEqual(c.choices[0].message.annotations, []);
      assert.equal(linkup.requests.length, 0);
      const model = textCost(GPT_4O_MINI, { input: c.usage.prompt_tokens, output: c.usage.completion_tokens });
      assert.equal(await spent(accountId, 1_000_000_000n), model + STANDARD);
      assert.equal(await charges(accountId), 1);
      for (const extra of [
        { model: 'openai/gpt-4o-mini' },
        { model: 'openai/gpt-4o-mini-search-preview', provider: { only: ['openrouter'] } },
      ]) {
        const res = await bench().post(key, {
          web_search: { enabled: true, provider: 'native' },
          messages: [{ role: 'user', content: 'Fundy tides?' }],
          ...extra,
        });
        assert.equal(res.status, 400);
        assert.equal(((await res.json()) as any).error.code, 'native_web_search_unavailable');
      }
    });
  });

  it('the message-style API and legacy completions refuse web search with a 400 (not offered there)', async () => {
    const { key } = await bench().account('1');
    const m = await bench().post(
      key,
      { model: 'openai/gpt-4o-mini:online', max_tokens: 20, messages: [{ role: 'user', content: 'Fundy?' }] },
      {},
      '/api/v1/messages',
    );
    assert.equal(m.status, 400);
    assert.match(((await m.json()) as any).error.message, /offered on chat completions, responses and talk-to-gpt/);
    const c = await bench().post(
      key,
      { model: 'openai/gpt-4o-mini', prompt: 'Fundy?', web_search: true },
      {},
      '/api/v1/completions',
    );
    assert.equal(c.status, 400);
    assert.equal(((await c.json()) as any).error.param, 'web_search');
    assert.equal(linkup.requests.length, 0);
  });

  it('batch rows take no web search (the spec): refused, not run without it', async () => {
    const { key } = await bench().account('1');
    const rows = (extra: object) => [
      { custom_id: 'a', body: { messages: [{ role: 'user', content: 'Fundy tides?' }], max_tokens: 10, ...extra } },
    ];
    for (const [model, extra] of [
      ['openai/gpt-4o-mini', { web_search: true }],
      ['openai/gpt-4o-mini', { model: 'openai/gpt-4o-mini:online' }],
      ['openai/gpt-4o-mini:online', {}],
    ] as const) {
      const res = await bench().post(
        key,
        { endpoint: '/v1/chat/completions', model, requests: rows(extra) },
        {},
        '/api/beta/batches',
      );
      assert.equal(res.status, 400, `${model} ${JSON.stringify(extra)}: ${await res.clone().text()}`);
      assert.match(((await res.json()) as any).error.message, /web search/);
    }
  });

  describe('native search on Anthropic (the web_search server tool)', () => {
    const ask = (key: string, body: Record<string, unknown>) =>
      bench().post(key, { messages: [{ role: 'user', content: 'Fundy tides?' }], max_tokens: 200, ...body });

    it('max_tool_calls caps the searches; the block citations come back; the fee per search reported', async () => {
      const { key, accountId } = await bench().account('1');
      anthropic.script({
        text: 'The tides there reach 16 metres.',
        webSearch: { searches: 2, results: [{ url: 'https://tides.example.org/fundy', title: 'Fundy tides' }] },
      });
      const res = await ask(key, {
        model: 'anthropic/claude-3-5-haiku',
        web_search: { provider: 'native' },
        max_tool_calls: 3,
      });
      assert.equal(res.status, 200, await res.clone().text());
      const c: any = await res.json();
      const tool = anthropic.last().body.tools.find((t: any) => t.type === 'web_search_20250305');
      assert.deepEqual(tool, { type: 'web_search_20250305', name: 'web_search', max_uses: 3 });
      assert.deepEqual(c.choices[0].message.annotations, [
        {
          type: 'url_citation',
          url_citation: { url: 'https://tides.example.org/fundy', title: 'Fundy tides', start_index: 0, end_index: 32 },
        },
      ]);
      assert.equal(c.choices[0].message.content, 'The tides there reach 16 metres.');
      assert.equal(linkup.requests.length, 0);
      const model = textCost(CLAUDE_HAIKU, { input: c.usage.prompt_tokens, output: c.usage.completion_tokens });
      assert.equal(await spent(accountId, 1_000_000_000n), model + 2n * STANDARD);
      assert.equal(await charges(accountId), 1);
    });

    it('streaming: the searches counted at the end of the stream are charged', async () => {
      const { key, accountId } = await bench().account('1');
      anthropic.script({ text: 'Sixteen metres.', webSearch: { searches: 3 } });
      const frames = await readSse(
        await ask(key, {
          model: 'anthropic/claude-3-5-haiku',
          stream: true,
          stream_options: { include_usage: true },
          web_search: { enabled: true, provider: 'native' },
          max_tool_calls: 2,
        }),
      );
      const usage = frames.find((f: any) => f?.usage)!.usage;
      const text = frames.map((f: any) => f?.choices?.[0]?.delta?.content ?? '').join('');
      assert.equal(text, 'Sixteen metres.');
      const model = textCost(CLAUDE_HAIKU, { input: usage.prompt_tokens, output: usage.completion_tokens });
      // three asked by the script, capped at max_uses 2 by the upstream
      assert.equal(await spent(accountId, 1_000_000_000n), model + 2n * STANDARD);
    });

    it('a newer large model searches natively by default; naming a provider uses the external one', async () => {
      const { key, accountId } = await bench().account('1');
      const res = await ask(key, { model: 'anthropic/claude-sonnet-4:online' });
      assert.equal(res.status, 200, await res.clone().text());
      const c: any = await res.json();
      assert.ok(anthropic.last().body.tools.some((t: any) => t.type === 'web_search_20250305'));
      assert.equal(linkup.requests.length, 0);
      const model = textCost(textPrices('anthropic/claude-sonnet-4'), {
        input: c.usage.prompt_tokens,
        output: c.usage.completion_tokens,
      });
      assert.equal(await spent(accountId, 1_000_000_000n), model + STANDARD);
      await ask(key, { model: 'anthropic/claude-sonnet-4:online/linkup' });
      assert.equal(linkup.requests.length, 1);
      assert.equal(anthropic.last().body.tools, undefined);
    });
  });

  describe('on responses and talk-to-gpt', () => {
    it('responses: output_text annotations; talk-to-gpt: :online searches', async () => {
      const { key } = await bench().account('1');
      bench().openai.script({ text: 'Tides [1].' });
      const r: any = await (
        await bench().post(
          key,
          { model: 'openai/gpt-4o-mini:online', input: 'Fundy tides?', store: false },
          {},
          '/api/v1/responses',
        )
      ).json();
      const part = r.output.find((o: any) => o.type === 'message').content[0];
      assert.deepEqual(part.annotations[0], {
        type: 'url_citation',
        url: 'https://tides.example.org/fundy',
        title: 'Tides of the Bay of Fundy',
        start_index: 6,
        end_index: 9,
      });
      // streaming: announced with response.output_text.annotation.added, then on the finished part
      bench().openai.script({ text: 'Tides [2].' });
      const frames = await readSse(
        await bench().post(
          key,
          { model: 'openai/gpt-4o-mini:online', input: 'Fundy tides?', store: false, stream: true },
          {},
          '/api/v1/responses',
        ),
      );
      const added = frames.find((f: any) => f?.type === 'response.output_text.annotation.added');
      assert.equal(added.annotation.url, 'https://parks.example.ca/fundy');
      const completed = frames.find((f: any) => f?.type === 'response.completed');
      const done = completed.response.output.find((o: any) => o.type === 'message').content[0];
      assert.deepEqual(done.annotations, [added.annotation]);
      // the Responses API's own way to ask: the hosted web_search tool (search_context_size low: 3 results)
      const hosted = await bench().post(
        key,
        {
          model: 'openai/gpt-4o-mini',
          input: 'Fundy tides?',
          store: false,
          tools: [{ type: 'web_search', search_context_size: 'low' }],
        },
        {},
        '/api/v1/responses',
      );
      assert.equal(hosted.status, 200, await hosted.clone().text());
      assert.equal(linkup.requests.at(-1)!.body.maxResults, 3);
      assert.equal(bench().openai.requests.at(-1)!.body.tools, undefined, 'the hosted tool is not a function tool');
      const t = await bench().post(
        key,
        { model: 'openai/gpt-4o-mini:online', prompt: 'Fundy tides?' },
        {},
        '/api/talk-to-gpt',
      );
      assert.equal(t.status, 200);
      assert.equal(linkup.requests.length, 4);
      assert.match(bench().openai.requests.at(-1)!.body.messages[0].content, /A web search was conducted/);
    });
  });
});
