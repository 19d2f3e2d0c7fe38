// Whether a provider, or one route of it, can serve now, and what would make it: the provider's
// own availability capability, or for an upstream without one the rule every upstream reached
// over the network follows (its API key is set; a keyless server's base URL is). The catalog asks
// when it loads; the planner names `settingToEnable` when no route of a model is available.
import type { CatalogFileProvider } from '../catalog/file.js';
import { providerEnvNames, type ProviderSettings } from '../config.js';
import { providerFor } from './protocols.js';
import type { AvailabilityAdapter, RouteSetup } from './types.js';

const networkUpstream: AvailabilityAdapter = {
  provider: (p, settings) => (p.options.keyless ? !!settings.baseUrl : !!settings.apiKey),
  route: (r) => networkUpstream.provider(r.provider, r.settings),
  enabledBy: (r) => {
    const names = providerEnvNames(r.provider.id);
    return r.provider.options.keyless ? names.baseUrl : names.apiKey;
  },
};

const availabilityOf = (p: CatalogFileProvider) => providerFor(p.protocol)?.availability ?? networkUpstream;

/** Whether a provider can serve anything right now. */
export const providerAvailable = (p: CatalogFileProvider, settings: ProviderSettings): boolean =>
  availabilityOf(p).provider(p, settings);

/** Whether one route can serve right now. */
export const routeAvailable = (r: RouteSetup): boolean => availabilityOf(r.provider).route(r);

/** What would make a route available, for the operator (an environment variable, a model file). */
export const settingToEnable = (r: RouteSetup): string => availabilityOf(r.provider).enabledBy(r);
