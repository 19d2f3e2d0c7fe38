// Every upstream protocol the gateway speaks, one entry each, and the one way to reach a route's
// provider: `capability(route, 'chat' | 'speech' | 'video' | 'search' | …)` and `targetFor(route)`. To add a
// provider: a folder beside this file whose index.ts exports a `Provider` (types.ts) with the
// capabilities it has, and one line in PROVIDERS.
import type { Route } from '../catalog/catalog.js';
import { upstreamError } from '../core/errors.js';
import { anthropicProvider } from './anthropic/index.js';
import { elevenlabsProvider } from './elevenlabs/index.js';
import { falProvider } from './fal/index.js';
import { geminiProvider } from './gemini/index.js';
import { linkupProvider } from './linkup/index.js';
import { localProvider } from './local/index.js';
import { openaiProvider } from './openai/index.js';
import { teeProvider } from './tee/index.js';
import { searxngProvider } from './searxng/index.js';
import { tavilyProvider } from './tavily/index.js';
import type { Capability, Provider, ProviderTarget } from './types.js';

const PROVIDERS: readonly Provider[] = [
  openaiProvider,
  anthropicProvider,
  geminiProvider,
  localProvider,
  elevenlabsProvider,
  falProvider,
  teeProvider,
  linkupProvider,
  tavilyProvider,
  searxngProvider,
];

const byProtocol = new Map(PROVIDERS.map((p) => [p.protocol, p]));

/** What the route's protocol can do of `kind`; a route whose protocol cannot is a catalog mistake (500, not retried). */
export function capability<K extends Capability>(route: Route, kind: K): NonNullable<Provider[K]> {
  const found = byProtocol.get(route.provider.protocol)?.[kind];
  if (!found) {
    throw upstreamError(
      `no ${kind} adapter for protocol '${route.provider.protocol}' (provider ${route.provider.id})`,
      500,
      false,
      { providerId: route.provider.id },
    );
  }
  return found as NonNullable<Provider[K]>;
}

/** A route's options over its provider's, merged once per route (a catalog reload makes new routes). */
const mergedOptions = new WeakMap<Route, Record<string, unknown>>();

/**
 * Everything an adapter needs to reach one route: base URL and key (settings over catalog, as read
 * when the catalog loaded), options, headers.
 */
export function targetFor(route: Route, passHeaders?: Record<string, Record<string, string>>): ProviderTarget {
  const settings = route.settings;
  let options = mergedOptions.get(route);
  if (!options) {
    options = { ...route.provider.options, ...route.options };
    mergedOptions.set(route, options);
  }
  return {
    providerId: route.provider.id,
    baseUrl: settings.baseUrl ?? route.provider.baseUrl ?? '',
    apiKey: settings.apiKey,
    options,
    headers: passHeaders?.[route.provider.protocol],
  };
}
