// Protocol → adapter. Routing and billing only ever call adapterFor(route).
import type { Route } from '../catalog/catalog.js';
import { type ProviderAdapter } from './types.js';
import { openaiAdapter } from './openai/index.js';
import { anthropicAdapter } from './anthropic/index.js';
import { geminiAdapter } from './gemini/index.js';
import { localAdapter } from './local/index.js';
import { upstreamError } from '../core/errors.js';

const adapters = new Map<string, ProviderAdapter>(
  [openaiAdapter, anthropicAdapter, geminiAdapter, localAdapter].map((a) => [a.protocol, a]),
);

export function adapterFor(route: Route): ProviderAdapter {
  const a = adapters.get(route.provider.protocol);
  if (!a)
    throw upstreamError(
      `no adapter for protocol '${route.provider.protocol}' (provider ${route.provider.id})`,
      500,
      false,
    );
  return a;
}
