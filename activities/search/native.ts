// Native web search: the model's own provider searches (OpenAI's search models through
// `web_search_options`, Anthropic's `web_search` server tool), on routes whose catalog options say
// `native_web_search: true`. Asked for with `provider: "native"`; a model whose catalog options say
// `web_search_native: true` (the newer large models) uses it by default when one of its configured
// routes offers it, and the external providers otherwise. Billed with the model call: the spec's
// fee per search (at most `max_tool_calls`, default NATIVE_MAX_SEARCHES, reserved up front) plus the
// result tokens the upstream counts as input.
import type { ModelInfo } from '../catalog/catalog.js';
import type { InferenceRequest } from '../core/types.js';
import { searchFee } from './search.js';
import type { WebSearchSettings } from './settings.js';

/** Searches a native web search may run when the request sets no `max_tool_calls`. */
const NATIVE_MAX_SEARCHES = 5;

export interface NativeSearch {
  request: NonNullable<InferenceRequest['webSearch']>;
  fee: { perSearch: bigint; maxSearches: number };
}

/** The native search this request gets, or undefined when the external providers search. */
export function nativeSearch(
  web: WebSearchSettings,
  model: ModelInfo,
  maxToolCalls: unknown,
): NativeSearch | undefined {
  const byDefault =
    web.provider === undefined &&
    model.options.web_search_native === true &&
    model.routes.some((r) => r.available && r.options.native_web_search === true);
  if (web.provider !== 'native' && !byDefault) return undefined;
  const maxUses =
    Number.isInteger(maxToolCalls) && (maxToolCalls as number) > 0 ? (maxToolCalls as number) : NATIVE_MAX_SEARCHES;
  return {
    request: { contextSize: web.contextSize, maxUses },
    fee: { perSearch: searchFee(web.depth), maxSearches: maxUses },
  };
}
