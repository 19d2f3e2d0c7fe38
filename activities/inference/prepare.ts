// The steps every text surface takes between "the body is valid" and "call the provider":
// resolve the model name (suffixes included), plan the routes, check the context window, settle
// the output cap, and reserve the worst case. One implementation, so chat, messages, responses
// and completions cannot drift apart.
import { catalog, type ModelInfo, type Route } from '../catalog/catalog.js';
import type { Caller } from '../core/caller.js';
import { planRoute, type ProviderPreferences, type RequestNeeds } from '../routing/planRoute.js';
import { promptPrefixes, rememberedRoute } from '../routing/cacheAffinity.js';
import { estimatePromptTokens, likelyFromEstimate } from '../billing/pricing.js';
import { type CallContext, InferenceCall } from './execute.js';
import type { InferenceRequest, NativeRequest } from '../core/types.js';
import { RequestError } from '../core/errors.js';

/** The output cap when the caller sets none and the catalog knows none. */
const DEFAULT_MAX_OUTPUT = 4096;

export interface PrepareInput {
  caller: Caller;
  requestId: string;
  surface: string;
  model: ModelInfo;
  request: Omit<InferenceRequest, 'maxTokens' | 'model'> & { maxTokens?: number };
  needs: RequestNeeds;
  prefs: ProviderPreferences;
  holdTtlSeconds?: number;
  passHeaders?: Record<string, string>;
  /** the caller's body, passed through to routes whose upstream speaks its format */
  native?: NativeRequest;
  /** the caller forced pay-as-you-go (`X-Billing-Mode`, completions' `billing_mode`) */
  forcePaygo?: boolean;
  /** a batch row: its price (basis points of the synchronous one) and its reservation's key */
  priceBps?: number;
  holdKey?: string;
  /** a batch row: its answer is stored with its charge (InferenceCall.settleWith) */
  storesAnswer?: boolean;
  /** the request was masked (activities/redaction/): restore the answer, charge the fee */
  redaction?: CallContext['redaction'];
  /** native web search's fee per search (see CallContext.searchFee) */
  searchFee?: { perSearch: bigint; maxSearches: number };
}

export async function prepareCall(p: PrepareInput): Promise<InferenceCall> {
  const call = planCall(p);
  await call.reserve();
  return call;
}

/** Did the request ask for prompt caching: `caching`/`:caching`, stickiness, or a cache breakpoint? */
function cachingAsked(p: PrepareInput): boolean {
  return (
    p.needs.caching ||
    p.prefs.stickyProvider === true ||
    p.request.messages.some((m) => m.content.some((c) => c.cacheControl)) ||
    (p.request.tools ?? []).some((t) => t.cacheControl !== undefined)
  );
}

/** Everything prepareCall does but the reservation: what a quote (x402) needs to price the worst case. */
export function planCall(p: PrepareInput): InferenceCall {
  let routes = planRoute(catalog(), p.model, p.caller, p.prefs, p.needs);
  // Prompt-cache affinity (routing/cacheAffinity.ts): the route that last served this prompt's
  // prefix goes first, unless the caller ordered the providers; a sticky request tries it alone.
  // A model with one provider, or none that caches, has nothing to choose: its prompt is not hashed.
  const prefixes =
    p.model.routes.filter((r) => r.available).length > 1 && p.model.routes.some((r) => r.supportsCaching)
      ? promptPrefixes(p.caller.accountId, p.model.id, p.request)
      : undefined;
  const remembered = !prefixes || p.prefs.order?.length ? undefined : rememberedRoute(prefixes, routes);
  let blockedFallbacks: Route[] = [];
  if (remembered) {
    const rest = routes.filter((r) => r !== remembered);
    if (p.prefs.stickyProvider) blockedFallbacks = rest;
    routes = p.prefs.stickyProvider ? [remembered] : [remembered, ...rest];
  }
  const promptTokens = estimatePromptTokens(p.request);
  const likely = likelyFromEstimate(promptTokens);
  const context = p.model.contextLength;
  if (context && likely + (p.request.maxTokens ?? 0) > context) {
    throw new RequestError(
      400,
      'context_length_exceeded',
      `This model's maximum context length is ${context} tokens; the request has about ${likely} prompt tokens` +
        (p.request.maxTokens ? ` and asks for up to ${p.request.maxTokens} output tokens` : '') +
        '. Shorten the messages or lower max_tokens.',
      { param: 'messages' },
    );
  }
  const ceiling = Math.min(
    p.model.maxOutputTokens ?? DEFAULT_MAX_OUTPUT,
    context ? Math.max(1, context - likely) : Number.MAX_SAFE_INTEGER,
  );
  if (p.request.maxTokens && p.model.maxOutputTokens && p.request.maxTokens > p.model.maxOutputTokens) {
    throw new RequestError(
      400,
      'invalid_parameter_value',
      `max_tokens ${p.request.maxTokens} is above this model's output limit of ${p.model.maxOutputTokens}.`,
      { param: 'max_tokens' },
    );
  }
  // `model` first, not after the spread: V8 (Node 20) copies `{ ...x }` fast, but giving the copy a
  // property `x` lacks takes a slow path (about 1 µs here, 1.5% of a chat request's CPU in a profile).
  // The attempt's own copy (execute.ts) then only replaces `model`, which stays fast.
  const request: InferenceRequest = { model: '', ...p.request, maxTokens: p.request.maxTokens ?? ceiling };
  return new InferenceCall({
    caller: p.caller,
    requestId: p.requestId,
    surface: p.surface,
    modelId: p.model.id,
    routes,
    request,
    promptTokenEstimate: promptTokens,
    holdTtlSeconds: p.holdTtlSeconds,
    passHeaders: p.passHeaders,
    native: p.native,
    forcePaygo: p.forcePaygo,
    explicitProvider: p.prefs.explicit !== undefined,
    priceBps: p.priceBps,
    holdKey: p.holdKey,
    storesAnswer: p.storesAnswer,
    redaction: p.redaction,
    searchFee: p.searchFee,
    affinity: prefixes && { prefixes, asked: cachingAsked(p), blockedFallbacks },
  });
}
