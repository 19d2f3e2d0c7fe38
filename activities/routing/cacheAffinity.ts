// Prompt-cache affinity: which provider route last served a prompt prefix, so that the next request
// sharing that prefix goes back to it (a provider's prompt cache lives on that provider only), and,
// for a sticky request, so that it does not fail over to a provider whose cache is cold.
//
// The memory is this process's own: a bounded map (least recently used entries go first) whose
// entries expire an hour after their last use, as the spec's "about one hour" asks. Several API
// processes each keep their own, so affinity is soft across processes (README, Prompt caching):
// a request answered by another process is routed as if it were the first.
//
// A prefix is named by a chain of hashes over the account, the model, the tools and each message in
// turn (cache breakpoints left out: they move from turn to turn), so every message boundary of a
// request has its own name in one pass over the prompt. A request remembers the prefixes a provider
// would cache (each breakpoint, and the whole prompt); a later one looks up its own boundaries,
// longest first: a conversation that grew by a turn finds the prompt its previous turn sent.
import { createHash } from 'node:crypto';
import type { InferenceRequest, Message } from '../core/types.js';
import type { Route } from '../catalog/catalog.js';

/** How long a remembered route stays remembered after its last use. */
const AFFINITY_TTL_MS = 60 * 60 * 1000;
/** At most this many prefixes are remembered per process (about 150 bytes each). */
const MAX_ENTRIES = 100_000;

interface Remembered {
  routeId: string;
  expires: number;
}

const memory = new Map<string, Remembered>();

/** The prefixes of one request, as named by their hashes. */
export interface PromptPrefixes {
  /** one name per message boundary: `boundaries[i]` names messages 0..i */
  boundaries: string[];
  /** the boundaries a provider would cache (breakpoints and the whole prompt): what a success remembers */
  cached: string[];
}

/** A message as hashed: its content without cache breakpoints. */
function hashable(m: Message): unknown {
  return {
    role: m.role,
    content: m.content.map(({ cacheControl: _, ...part }) => part),
    toolCalls: m.toolCalls,
    toolCallId: m.toolCallId,
    name: m.name,
  };
}

export function promptPrefixes(
  accountId: string,
  modelId: string,
  request: Pick<InferenceRequest, 'messages' | 'tools' | 'prompt'>,
): PromptPrefixes {
  const tools = request.tools?.map(({ cacheControl: _, ...t }) => t) ?? [];
  let chain = createHash('sha256')
    .update(JSON.stringify([accountId, modelId, tools]))
    .digest('hex');
  const boundaries: string[] = [];
  for (const m of request.messages) {
    chain = createHash('sha256')
      .update(chain)
      .update(JSON.stringify(hashable(m)))
      .digest('hex');
    boundaries.push(chain);
  }
  if (request.prompt !== undefined) {
    chain = createHash('sha256').update(chain).update(JSON.stringify(request.prompt)).digest('hex');
    boundaries.push(chain);
  }
  const cached = new Set<string>();
  request.messages.forEach((m, i) => {
    if (m.content.some((p) => p.cacheControl)) cached.add(boundaries[i]);
  });
  if (boundaries.length) cached.add(boundaries[boundaries.length - 1]);
  return { boundaries, cached: [...cached] };
}

/**
 * The route that served the longest of these prefixes within the last hour, if it is among
 * `routes` (the plan may have changed: a restriction, a provider gone). Using it keeps it.
 */
export function rememberedRoute(prefixes: PromptPrefixes, routes: Route[], now = Date.now()): Route | undefined {
  for (let i = prefixes.boundaries.length - 1; i >= 0; i--) {
    const key = prefixes.boundaries[i];
    const entry = memory.get(key);
    if (!entry) continue;
    if (entry.expires <= now) {
      memory.delete(key);
      continue;
    }
    const route = routes.find((r) => r.id === entry.routeId);
    if (route) {
      touch(key, entry.routeId, now);
      return route;
    }
  }
  return undefined;
}

/** `route` served these prefixes: the next request sharing one of them prefers it. */
export function rememberRoute(prefixes: PromptPrefixes, route: Route, now = Date.now()): void {
  for (const key of prefixes.cached) touch(key, route.id, now);
}

function touch(key: string, routeId: string, now: number): void {
  memory.delete(key); // re-inserted last: the map's order is least recently used first
  memory.set(key, { routeId, expires: now + AFFINITY_TTL_MS });
  while (memory.size > MAX_ENTRIES) memory.delete(memory.keys().next().value as string);
}
