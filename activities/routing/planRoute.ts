// The one route planner: which providers may serve this request, in which order. Inputs are
// the model, the caller's saved restrictions (account + key), the request's `provider` object
// or X-Provider header, the model-name suffixes, and what the request needs (tools, images,
// structured output). Output is the ordered list of routes to try; the first is the choice,
// the rest are fallbacks.
import type { Catalog, ModelInfo, Route } from '../catalog/catalog.js';
import { settingToEnable } from '../providers/availability.js';
import type { Caller } from '../core/caller.js';
import { parseLimit } from '../core/money.js';
import { routeStats } from './stats.js';
import type { RouteSort } from './suffixes.js';
import { RequestError } from '../core/errors.js';

export interface ProviderPreferences {
  /** one provider, chosen explicitly (`provider: "groq"` or `X-Provider`): no fallbacks */
  explicit?: string;
  order?: string[];
  only?: string[];
  ignore?: string[];
  sort?: RouteSort;
  quantizations?: string[];
  minQuantization?: string;
  /** USD per 1M tokens, decimal text or number */
  maxPrice?: { prompt?: number; completion?: number };
  allowFallbacks?: boolean;
  requireParameters?: boolean;
  /** OpenRouter's `data_collection`: "deny" = only providers that store no request data */
  dataCollection?: 'allow' | 'deny';
  /**
   * `stickyprovider` / `prompt_caching.stickyProvider`: once a prompt prefix has a remembered route
   * (routing/cacheAffinity.ts), a failure there is a 503 `fallback_blocked_for_cache_consistency`
   * instead of a fallback to a provider whose cache is cold
   */
  stickyProvider?: boolean;
}

export interface RequestNeeds {
  tools: boolean;
  images: boolean;
  structuredOutput: boolean;
  caching: boolean;
  /** the model provider's own web search (`web_search.provider: "native"`): routes with option `native_web_search` */
  nativeWebSearch?: boolean;
}

/** Bits of precision, for `min_quantization`. Unknown precision never meets a floor. */
export const QUANTIZATION_BITS: Record<string, number> = {
  fp32: 32,
  bf16: 16,
  fp16: 16,
  fp8: 8,
  int8: 8,
  fp6: 6,
  fp4: 4,
  int4: 4,
};

const ids = (routes: Route[]) => routes.map((r) => r.provider.id).join(', ');

export function planRoute(
  catalog: Catalog,
  model: ModelInfo,
  caller: Caller | null,
  prefs: ProviderPreferences,
  needs: RequestNeeds,
): Route[] {
  let routes = model.routes.filter((r) => r.available);
  if (routes.length === 0) {
    throw new RequestError(
      503,
      'model_not_available',
      `Model '${model.id}' has no configured provider on this gateway right now. ${howToEnable(model)}`,
      { param: 'model' },
    );
  }

  if (prefs.explicit) routes = explicitProvider(catalog, model, routes, prefs.explicit);
  // Saved restrictions bind whatever the request asks.
  if (caller) routes = withinRestrictions(model, routes, caller, needs);

  const before = routes;
  const rejected: string[] = [];
  const keep = (why: string, pred: (r: Route) => boolean) => {
    const next = routes.filter(pred);
    if (next.length < routes.length) rejected.push(why);
    routes = next;
  };
  if (prefs.only?.length) keep('provider.only', (r) => prefs.only!.map((s) => s.toLowerCase()).includes(r.provider.id));
  if (prefs.ignore?.length)
    keep('provider.ignore', (r) => !prefs.ignore!.map((s) => s.toLowerCase()).includes(r.provider.id));
  if (prefs.quantizations?.length)
    keep('provider.quantizations', (r) => prefs.quantizations!.includes(r.quantization ?? 'unknown'));
  if (prefs.minQuantization) {
    const floor = QUANTIZATION_BITS[prefs.minQuantization];
    keep('provider.min_quantization', (r) => (QUANTIZATION_BITS[r.quantization ?? ''] ?? 0) >= floor);
  }
  if (prefs.maxPrice) {
    const p = prefs.maxPrice.prompt === undefined ? undefined : parseLimit(prefs.maxPrice.prompt, 'USD');
    const c = prefs.maxPrice.completion === undefined ? undefined : parseLimit(prefs.maxPrice.completion, 'USD');
    keep(
      'provider.max_price',
      (r) => (p === undefined || r.price.input <= p) && (c === undefined || r.price.output <= c),
    );
  }
  // The catalog's data fact is zero data retention: a route that retains nothing stores (and so
  // trains on) nothing; any other may. Like the other request preferences (and unlike the key's
  // saved ZDR restriction, a permission: 403), a preference that leaves no provider is the
  // request's own 400, naming it.
  if (prefs.dataCollection === 'deny')
    keep('provider.data_collection "deny" (providers that retain no data)', (r) => r.zeroDataRetention);
  if (needs.tools) keep('tool calling', (r) => r.supportsTools);
  // cache-capable: the catalog's `supports_caching` (README, Prompt caching)
  if (needs.caching) keep('prompt caching (caching: true or a :caching suffix)', (r) => r.supportsCaching);
  if (needs.nativeWebSearch) {
    const native = routes.filter((r) => r.options.native_web_search === true);
    if (native.length === 0)
      throw nativeUnavailable(model, rejected.length ? rejected.join(', ') : 'the providers configured here');
    routes = native;
  }
  if (prefs.requireParameters) {
    if (needs.images) keep('image input', () => model.capabilities.vision === true);
    if (needs.structuredOutput) keep('structured output', () => model.capabilities.structured_output === true);
  }
  if (routes.length === 0) {
    throw new RequestError(
      400,
      'no_fallback_available',
      `No provider of '${model.id}' (${ids(before)}) satisfies ${rejected.join(', ')}.`,
      { param: 'provider' },
    );
  }

  routes = order(routes, prefs);
  if (prefs.explicit || prefs.allowFallbacks === false) routes = routes.slice(0, 1);
  return routes;
}

/** Native web search asked for, and no route left that offers it: the spec's 400. */
function nativeUnavailable(model: ModelInfo, why: string): RequestError {
  const offering = model.routes.filter((r) => r.options.native_web_search === true).map((r) => r.provider.id);
  return new RequestError(
    400,
    'native_web_search_unavailable',
    `Native web search was asked for (provider "native"), and ${why} leave no provider of '${model.id}' that offers it` +
      (offering.length ? ` (it is offered by: ${offering.join(', ')})` : ' (none of its providers offers it)') +
      '. Use an external search provider (linkup, tavily, searxng), or lift the restriction.',
    { param: 'web_search' },
  );
}

/** "Set FAL_API_KEY to enable it.": the operator of a self-hosted gateway reads this message too. */
function howToEnable(model: ModelInfo): string {
  const settings = [...new Set(model.routes.map(settingToEnable))];
  if (settings.length === 0) return 'The catalog lists no provider for it.';
  return `Set ${settings.length === 1 ? settings[0] : `one of ${settings.join(', ')}`} to enable it.`;
}

function order(routes: Route[], prefs: ProviderPreferences): Route[] {
  const sorted = [...routes].sort((a, b) => a.position - b.position);
  if (prefs.sort === 'price') {
    sorted.sort((a, b) => Number(a.price.input + a.price.output - (b.price.input + b.price.output)));
  } else if (prefs.sort === 'latency') {
    const l = (r: Route) => routeStats(r.id).latencyMs ?? Number.POSITIVE_INFINITY;
    sorted.sort((a, b) => l(a) - l(b));
  } else if (prefs.sort === 'throughput') {
    const t = (r: Route) => routeStats(r.id).tokensPerSecond ?? 0;
    sorted.sort((a, b) => t(b) - t(a));
  }
  if (prefs.order?.length) {
    const rank = (r: Route) => {
      const i = prefs.order!.map((s) => s.toLowerCase()).indexOf(r.provider.id);
      return i === -1 ? Number.MAX_SAFE_INTEGER : i;
    };
    sorted.sort((a, b) => rank(a) - rank(b)); // stable: the sort above decides among the rest
  }
  return sorted;
}

/** The provider the caller named (`X-Provider`, `provider: "id"`): it must exist and serve the model. */
function explicitProvider(catalog: Catalog, model: ModelInfo, routes: Route[], explicit: string): Route[] {
  const wanted = explicit.toLowerCase();
  if (!catalog.providers.some((p) => p.id === wanted)) {
    throw new RequestError(
      400,
      'provider_unknown_provider',
      `Unknown provider '${explicit}'. GET /api/models/{model}/providers lists the providers of a model.`,
      { param: 'provider' },
    );
  }
  const served = routes.filter((r) => r.provider.id === wanted);
  if (served.length === 0) {
    throw new RequestError(
      400,
      'model_not_available',
      `Provider '${wanted}' does not serve '${model.id}' here. Available: ${ids(model.routes.filter((r) => r.available))}.`,
      { param: 'provider' },
    );
  }
  return served;
}

/** The key's saved provider restrictions (allow and deny lists, zero data retention only). */
function withinRestrictions(model: ModelInfo, routes: Route[], caller: Caller, needs: RequestNeeds): Route[] {
  const allowed = caller.providerAllow;
  const allowedRoutes = routes.filter(
    (r) =>
      (allowed === null || allowed.includes(r.provider.id)) &&
      !caller.providerDeny.includes(r.provider.id) &&
      (!caller.zdrOnly || r.zeroDataRetention),
  );
  if (allowedRoutes.length === 0 && needs.nativeWebSearch) throw nativeUnavailable(model, 'your provider restrictions');
  if (allowedRoutes.length === 0) {
    throw new RequestError(
      403,
      'model_not_allowed',
      `This key's provider restrictions${caller.zdrOnly ? ' (zero-data-retention only)' : ''} leave no provider for '${model.id}'.`,
      { param: 'model' },
    );
  }
  return allowedRoutes;
}
