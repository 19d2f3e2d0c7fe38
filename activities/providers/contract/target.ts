// What every capability's adapter is handed: how to reach one route of one provider.
import type { WireDigests } from '../http.js';

/** Everything an adapter needs to reach one route of one provider. */
export interface ProviderTarget {
  providerId: string;
  /** base URL, already resolved: `<PROVIDER>_BASE_URL`, else the catalog's */
  baseUrl: string;
  apiKey?: string;
  /** vendor quirks and protocol options from the catalog (provider options merged with route options) */
  options: Record<string, unknown>;
  /** extra headers to pass to the upstream (e.g. `anthropic-beta`) */
  headers?: Record<string, string>;
  /** where the OpenAI adapter records the sha256 of a chat call's exact bodies (the TEE provider asks) */
  wire?: WireDigests;
}
