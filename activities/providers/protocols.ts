// Every upstream protocol the gateway speaks, one entry each. To add a provider: a folder beside
// this file whose index.ts exports a `Provider` (types.ts) with the capabilities it has, and one
// line in PROVIDERS. Routes reach them through registry.ts; the catalog asks availability.ts.
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
import type { Provider } from './types.js';

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

/** The provider that speaks `protocol` (a catalog value); undefined for one the gateway does not know. */
export const providerFor = (protocol: string): Provider | undefined => byProtocol.get(protocol);
