// The route planner (activities/routing/planRoute.ts), alone: which routes a request may take and in
// which order, from the catalog, the caller's saved restrictions, the request's provider preferences
// and what the request needs; and each refusal with its status, code and the parameter it names.
import assert from 'node:assert/strict';
import type { Caller } from '../../activities/core/caller.js';
import { Catalog, type ModelInfo, type ProviderInfo, type Route } from '../../activities/catalog/catalog.js';
import { RequestError } from '../../activities/core/errors.js';
import { type ProviderPreferences, planRoute, type RequestNeeds } from '../../activities/routing/planRoute.js';
import { recordLatency, recordThroughput } from '../../activities/routing/stats.js';

const provider = (id: string, options: Record<string, unknown> = {}) =>
  ({ id, name: id, protocol: 'openai', options }) as unknown as ProviderInfo;
const PROVIDERS = ['openai', 'groq', 'together', 'fireworks'].map((id) => provider(id));

let routeIds = 0;
function route(providerId: string, over: Partial<Route> & { input?: bigint; output?: bigint } = {}): Route {
  const { input = 1_000n, output = 2_000n, ...rest } = over;
  return {
    id: `route-${++routeIds}`,
    modelId: 'acme/chat',
    provider: PROVIDERS.find((p) => p.id === providerId) ?? provider(providerId),
    upstreamModel: 'chat',
    position: routeIds,
    available: true,
    zeroDataRetention: false,
    supportsTools: true,
    supportsCaching: false,
    quantization: null,
    options: {},
    price: { input, output },
    ...rest,
  } as unknown as Route;
}

function model(routes: Route[], capabilities: Record<string, boolean> = {}): ModelInfo {
  return { id: 'acme/chat', aliases: [], capabilities, routes } as unknown as ModelInfo;
}

const catalog = (m: ModelInfo) => new Catalog([m], PROVIDERS);
const NEEDS: RequestNeeds = { tools: false, images: false, structuredOutput: false, caching: false };
const caller = (over: Partial<Caller> = {}) =>
  ({ providerAllow: null, providerDeny: [], zdrOnly: false, ...over }) as unknown as Caller;

function plan(m: ModelInfo, prefs: ProviderPreferences = {}, needs: Partial<RequestNeeds> = {}, who?: Caller) {
  return planRoute(catalog(m), m, who ?? null, prefs, { ...NEEDS, ...needs }).map((r) => r.provider.id);
}

function refused(fn: () => unknown, status: number, code: string, param: string, message: RegExp): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof RequestError, String(e));
    assert.equal(e.status, status);
    assert.equal(e.code, code);
    assert.equal(e.opts.param, param);
    assert.match(e.message, message);
    return true;
  });
}

describe('planRoute', () => {
  const three = () => model([route('openai'), route('groq'), route('together')]);

  describe('availability', () => {
    it("keeps the catalog's order, every available route a fallback", () =>
      assert.deepEqual(plan(three()), ['openai', 'groq', 'together']));
    it('leaves out routes that are not available', () => {
      const m = model([route('openai', { available: false }), route('groq')]);
      assert.deepEqual(plan(m), ['groq']);
    });
    it('is 503 model_not_available, saying which setting enables it, when no route is available', () =>
      refused(
        () => plan(model([route('groq', { available: false })])),
        503,
        'model_not_available',
        'model',
        /no configured provider.*Set GROQ_API_KEY to enable it/,
      ));
    it('names every setting that would enable it', () =>
      refused(
        () => plan(model([route('groq', { available: false }), route('openai', { available: false })])),
        503,
        'model_not_available',
        'model',
        /Set one of GROQ_API_KEY, OPENAI_API_KEY/,
      ));
    it('names a keyless provider by its base URL setting', () => {
      const local = route('vllm', { available: false, provider: provider('vllm', { keyless: true }) });
      refused(() => plan(model([local])), 503, 'model_not_available', 'model', /Set VLLM_BASE_URL/);
    });
  });

  describe('an explicit provider', () => {
    it('takes only that provider, with no fallback', () =>
      assert.deepEqual(plan(three(), { explicit: 'groq' }), ['groq']));
    it('matches the name case-insensitively', () => assert.deepEqual(plan(three(), { explicit: 'GROQ' }), ['groq']));
    it('is 400 provider_unknown_provider for a provider the catalog does not have', () =>
      refused(() => plan(three(), { explicit: 'nope' }), 400, 'provider_unknown_provider', 'provider', /Unknown/));
    it('is 400 model_not_available for a known provider that does not serve the model, listing those that do', () =>
      refused(
        () => plan(three(), { explicit: 'fireworks' }),
        400,
        'model_not_available',
        'provider',
        /Available: openai, groq, together/,
      ));
  });

  describe("the caller's saved restrictions", () => {
    it('keep only the allowed providers', () =>
      assert.deepEqual(plan(three(), {}, {}, caller({ providerAllow: ['together', 'groq'] })), ['groq', 'together']));
    it('drop the denied ones', () =>
      assert.deepEqual(plan(three(), {}, {}, caller({ providerDeny: ['openai'] })), ['groq', 'together']));
    it('keep only zero-data-retention routes for a ZDR-only key', () => {
      const m = model([route('openai'), route('groq', { zeroDataRetention: true })]);
      assert.deepEqual(plan(m, {}, {}, caller({ zdrOnly: true })), ['groq']);
    });
    it('are 403 model_not_allowed when they leave nothing', () =>
      refused(
        () => plan(three(), {}, {}, caller({ providerAllow: ['fireworks'] })),
        403,
        'model_not_allowed',
        'model',
        /provider restrictions leave no provider/,
      ));
    it('say so when zero data retention is the reason', () =>
      refused(
        () => plan(three(), {}, {}, caller({ zdrOnly: true })),
        403,
        'model_not_allowed',
        'model',
        /zero-data-retention only/,
      ));
    it('bind an explicit provider too', () =>
      refused(
        () => plan(three(), { explicit: 'groq' }, {}, caller({ providerDeny: ['groq'] })),
        403,
        'model_not_allowed',
        'model',
        /restrictions/,
      ));
  });

  describe('the request’s preferences', () => {
    it('provider.only', () =>
      assert.deepEqual(plan(three(), { only: ['Together', 'openai'] }), ['openai', 'together']));
    it('provider.ignore', () => assert.deepEqual(plan(three(), { ignore: ['OPENAI'] }), ['groq', 'together']));
    it('provider.quantizations, where an unset precision is "unknown"', () => {
      const m = model([
        route('openai'),
        route('groq', { quantization: 'fp8' }),
        route('together', { quantization: 'fp16' }),
      ]);
      assert.deepEqual(plan(m, { quantizations: ['fp8', 'unknown'] }), ['openai', 'groq']);
    });
    it('provider.min_quantization, where an unknown precision never meets the floor', () => {
      const m = model([
        route('openai'),
        route('groq', { quantization: 'fp8' }),
        route('together', { quantization: 'bf16' }),
        route('fireworks', { quantization: 'int4' }),
      ]);
      assert.deepEqual(plan(m, { minQuantization: 'fp8' }), ['groq', 'together']);
      assert.deepEqual(plan(m, { minQuantization: 'fp4' }), ['groq', 'together', 'fireworks']);
    });
    it('provider.max_price on the prompt and on the completion, in USD per million tokens', () => {
      const m = model([
        route('openai', { input: 2_000_000_000n, output: 8_000_000_000n }),
        route('groq', { input: 500_000_000n, output: 9_000_000_000n }),
        route('together', { input: 500_000_000n, output: 1_000_000_000n }),
      ]);
      assert.deepEqual(plan(m, { maxPrice: { prompt: 1 } }), ['groq', 'together']);
      assert.deepEqual(plan(m, { maxPrice: { completion: 8 } }), ['openai', 'together']);
      assert.deepEqual(plan(m, { maxPrice: { prompt: 0.5, completion: 1 } }), ['together']);
    });
    it('provider.max_price is inclusive and cut to nano-dollars', () => {
      const m = model([route('openai', { input: 123_456_789n })]);
      assert.deepEqual(plan(m, { maxPrice: { prompt: 0.1234567891 } }), ['openai']);
    });
    it('data_collection "deny" keeps the routes that retain nothing', () => {
      const m = model([route('openai'), route('groq', { zeroDataRetention: true })]);
      assert.deepEqual(plan(m, { dataCollection: 'deny' }), ['groq']);
      assert.deepEqual(plan(m, { dataCollection: 'allow' }), ['openai', 'groq']);
    });
    it('allow_fallbacks: false keeps the first choice only', () =>
      assert.deepEqual(plan(three(), { allowFallbacks: false }), ['openai']));
    it('is 400 no_fallback_available naming every preference that removed routes', () =>
      refused(
        () => plan(three(), { only: ['openai', 'groq'], ignore: ['openai', 'groq'] }),
        400,
        'no_fallback_available',
        'provider',
        /\(openai, groq, together\) satisfies provider\.only, provider\.ignore/,
      ));
  });

  describe('what the request needs', () => {
    it('tools: routes with tool calling', () => {
      const m = model([route('openai', { supportsTools: false }), route('groq')]);
      assert.deepEqual(plan(m, {}, { tools: true }), ['groq']);
      refused(
        () => plan(model([route('openai', { supportsTools: false })]), {}, { tools: true }),
        400,
        'no_fallback_available',
        'provider',
        /tool calling/,
      );
    });
    it('caching: cache-capable routes', () => {
      const m = model([route('openai'), route('groq', { supportsCaching: true })]);
      assert.deepEqual(plan(m, {}, { caching: true }), ['groq']);
    });
    it('images and structured output bind only under require_parameters', () => {
      const m = model([route('openai')], { vision: false, structured_output: true });
      assert.deepEqual(plan(m, {}, { images: true }), ['openai']);
      refused(
        () => plan(m, { requireParameters: true }, { images: true }),
        400,
        'no_fallback_available',
        'provider',
        /image input/,
      );
      assert.deepEqual(plan(m, { requireParameters: true }, { structuredOutput: true }), ['openai']);
    });
    it('native web search: only the routes offering it', () => {
      const m = model([route('openai'), route('groq', { options: { native_web_search: true } })]);
      assert.deepEqual(plan(m, {}, { nativeWebSearch: true }), ['groq']);
    });
    it('native web search no route offers is 400 native_web_search_unavailable', () =>
      refused(
        () => plan(three(), {}, { nativeWebSearch: true }),
        400,
        'native_web_search_unavailable',
        'web_search',
        /none of its providers offers it/,
      ));
    it('native web search removed by a preference names the preference and who offers it', () => {
      const m = model([route('openai'), route('groq', { options: { native_web_search: true } })]);
      refused(
        () => plan(m, { ignore: ['groq'] }, { nativeWebSearch: true }),
        400,
        'native_web_search_unavailable',
        'web_search',
        /provider\.ignore leave no provider.*offered by: groq/,
      );
    });
    it('native web search removed by saved restrictions says so (400, not 403)', () => {
      const m = model([route('openai'), route('groq', { options: { native_web_search: true } })]);
      refused(
        () => plan(m, {}, { nativeWebSearch: true }, caller({ providerAllow: ['fireworks'] })),
        400,
        'native_web_search_unavailable',
        'web_search',
        /your provider restrictions/,
      );
    });
  });

  describe('order', () => {
    it("follows the catalog's position, not the list's order", () => {
      const m = model([
        route('openai', { position: 3 }),
        route('groq', { position: 1 }),
        route('together', { position: 2 }),
      ]);
      assert.deepEqual(plan(m), ['groq', 'together', 'openai']);
    });
    it('sort by price: cheapest input plus output first', () => {
      const m = model([
        route('openai', { input: 5n, output: 5n }),
        route('groq', { input: 1n, output: 8n }),
        route('together', { input: 2n, output: 2n }),
      ]);
      assert.deepEqual(plan(m, { sort: 'price' }), ['together', 'groq', 'openai']);
    });
    it('sort by latency: fastest first token first, unmeasured routes last', () => {
      const [a, b, c] = [route('openai'), route('groq'), route('together')];
      recordLatency(a.id, 900);
      recordLatency(c.id, 100);
      assert.deepEqual(plan(model([a, b, c]), { sort: 'latency' }), ['together', 'openai', 'groq']);
    });
    it('sort by throughput: most tokens per second first, unmeasured routes last', () => {
      const [a, b, c] = [route('openai'), route('groq'), route('together')];
      recordThroughput(b.id, 100, 1000);
      recordThroughput(c.id, 100, 500);
      assert.deepEqual(plan(model([a, b, c]), { sort: 'throughput' }), ['together', 'groq', 'openai']);
    });
    it('provider.order first, then the rest in the sort’s order', () => {
      const m = model([
        route('openai', { input: 5n, output: 5n }),
        route('groq', { input: 1n, output: 1n }),
        route('together', { input: 3n, output: 3n }),
      ]);
      assert.deepEqual(plan(m, { order: ['OpenAI'], sort: 'price' }), ['openai', 'groq', 'together']);
    });
    it('provider.order names that serve nothing are skipped', () =>
      assert.deepEqual(plan(three(), { order: ['fireworks', 'together'] }), ['together', 'openai', 'groq']));
  });
});
