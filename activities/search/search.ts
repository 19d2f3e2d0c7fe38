// A web search as a metered call (POST /api/web, and the search before a model call on chat,
// responses and talk-to-gpt): the spec's flat fee per request, standard 0.006 USD or deep 0.06 USD
// (the catalog's `switchyard/web-search` and `switchyard/web-search-deep`, priced per_request),
// reserved first, then the search providers tried in the catalog's order (Linkup, Tavily,
// SearXNG; falling back on a retryable failure, never when the caller named one), then one
// settlement on the provider that answered. A failed search is not charged.
import type { Caller } from '../core/caller.js';
import { catalog, type ModelInfo, type Route } from '../catalog/catalog.js';
import { RequestError } from '../core/errors.js';
import { resolveModel } from '../catalog/resolve.js';
import { type Charge, MeteredCall } from '../metering/meteredCall.js';
import { capability, targetFor } from '../providers/registry.js';
import type { SearchAnswer, SearchRequest } from '../providers/types.js';
import { planRoute } from '../routing/planRoute.js';

const MODELS = { standard: 'switchyard/web-search', deep: 'switchyard/web-search-deep' } as const;
const NO_NEEDS = { tools: false, images: false, structuredOutput: false, caching: false };

export interface SearchOutcome {
  answer: SearchAnswer;
  route: Route;
  charge: Charge;
}

/** Reserve, search, settle: one charge of the route's per-request price, none for a failure. */
export class SearchCall {
  readonly metered: MeteredCall;

  constructor(
    caller: Caller,
    requestId: string,
    readonly req: SearchRequest,
    /** one search provider, chosen by the caller: no fallback */
    provider?: string,
  ) {
    const { model } = resolveModel(MODELS[req.depth], 'search');
    const planned = plan(model, caller, provider);
    // only providers that can give the output type asked for (Tavily has no structured output, SearXNG only results)
    const routes = planned.filter((r) => capability(r, 'search').outputTypes.includes(req.outputType));
    if (routes.length === 0)
      throw new RequestError(
        400,
        'invalid_parameter_value',
        `No search provider here gives outputType '${req.outputType}' (${planned.map((r) => r.provider.id).join(', ')} do not). Pick another outputType.`,
        { param: 'outputType' },
      );
    this.metered = new MeteredCall({
      caller,
      requestId,
      surface: 'web-search',
      modelId: model.id,
      routes,
      // the fee is the route's per-request price, whatever the search returns
      worstCase: (route) => route.price.input,
      shortfall: (required, available) =>
        `a ${req.depth} web search costs $${required} and $${available} is available. Add funds.`,
    });
  }

  /** Reserve the fee (a shortfall is a 402), then search(). */
  async run(signal: AbortSignal): Promise<SearchOutcome> {
    await this.reserve();
    return this.search(signal);
  }

  reserve(): Promise<unknown> {
    return this.metered.reserve();
  }

  /** Try the providers and settle the fee on the one that answered; a failure releases the reservation. */
  async search(signal: AbortSignal): Promise<SearchOutcome> {
    const { value: answer, route } = await this.metered.orRelease(
      this.metered.attempt(signal, (route) => capability(route, 'search').search(this.req, targetFor(route), signal)),
    );
    const charge = await this.metered.settle(route.price.input, { inputUnits: 1, outputUnits: answer.results.length });
    return { answer, route, charge };
  }
}

/** The search routes; none configured reads as what it is: web search is not set up here. */
function plan(model: ModelInfo, caller: Caller, provider: string | undefined): Route[] {
  try {
    return planRoute(catalog(), model, caller, provider ? { explicit: provider } : {}, NO_NEEDS);
  } catch (err) {
    if (!(err instanceof RequestError) || err.code !== 'model_not_available' || err.status !== 503) throw err;
    throw new RequestError(
      503,
      'model_not_available',
      `Web search is not configured on this gateway: its operator sets LINKUP_API_KEY, TAVILY_API_KEY or SEARXNG_URL to enable it.`,
      { param: 'web_search' },
    );
  }
}

/** The spec's name for a search that the balance cannot pay for. */
export function searchBalanceError(err: RequestError, code: string, what: string): RequestError {
  return new RequestError(
    402,
    code,
    err.message.replace(/^Insufficient balance: /, `Insufficient balance for ${what}: `),
    err.opts,
  );
}

/** The fee of one search at `depth` (the catalog's price of its first route): what native search adds to a model call. */
export function searchFee(depth: SearchRequest['depth']): bigint {
  const { model } = resolveModel(MODELS[depth], 'search');
  return model.routes[0]?.price.input ?? 0n;
}
