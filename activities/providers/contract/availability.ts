// Whether a provider can serve now: the availability capability's contract. Optional: an upstream
// reached over the network has none and is usable once its API key is set (a keyless server: once
// its base URL is), the rule providers/availability.ts applies; a provider that serves from this
// machine (the local models) says what it needs instead.
import type { CatalogFileProvider } from '../../catalog/file.js';
import type { ProviderSettings } from '../../config.js';

/** One route as the catalog reads it, before it is priced into a Route (a Route is one too). */
export interface RouteSetup {
  provider: CatalogFileProvider;
  /** the provider's key and base URL from the environment, as read when the catalog loaded */
  settings: ProviderSettings;
  upstreamModel: string;
  /** the route's own options */
  options: Record<string, unknown>;
}

export interface AvailabilityAdapter {
  /** whether the provider can serve anything at all now */
  provider(provider: CatalogFileProvider, settings: ProviderSettings): boolean;
  /** whether this one route can serve now */
  route(setup: RouteSetup): boolean;
  /** what an operator sets or installs to make the route available (named when no route is) */
  enabledBy(setup: RouteSetup): string;
}
