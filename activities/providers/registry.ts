// The one way to reach a route's provider (protocols.ts lists them): `capability(route, 'chat' |
// 'speech' | 'video' | 'search' | …)` for what the route must be able to do, `optionalCapability`
// for what a caller can do without (exact token counts, attestation), and `targetFor(route)`.
import type { Route } from '../catalog/catalog.js';
import { upstreamError } from '../core/errors.js';
import { providerFor } from './protocols.js';
import type { Capability, Provider, ProviderTarget } from './types.js';

/** What the route's protocol can do of `kind`; a route whose protocol cannot is a catalog mistake (500, not retried). */
export function capability<K extends Capability>(route: Route, kind: K): NonNullable<Provider[K]> {
  const found = providerFor(route.provider.protocol)?.[kind];
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

/** What the route's protocol can do of `kind`, or undefined when it cannot (the caller does without). */
export function optionalCapability<K extends Capability>(route: Route, kind: K): Provider[K] | undefined {
  return providerFor(route.provider.protocol)?.[kind];
}

/** A route's options over its provider's, merged once per route (a catalog reload makes new routes). */
const mergedOptions = new WeakMap<Route, Record<string, unknown>>();

/**
 * Everything an adapter needs to reach one route: base URL and key (settings over catalog, as read
 * when the catalog loaded), options, headers.
 */
export function targetFor(route: Route, passHeaders?: Record<string, string>): ProviderTarget {
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
    headers: passHeaders && forwarded(route, passHeaders),
  };
}

/** The caller's headers that the route's upstream understands (its chat adapter names them); none for others. */
function forwarded(route: Route, headers: Record<string, string>): Record<string, string> | undefined {
  const names = providerFor(route.provider.protocol)?.chat?.forwardsHeaders;
  if (!names) return undefined;
  const kept = Object.entries(headers).filter(([name]) => names.includes(name.toLowerCase()));
  return kept.length ? Object.fromEntries(kept) : undefined;
}
