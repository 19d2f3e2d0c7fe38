// Model-name suffixes (`gpt-4o-mini:cheap:thinking`), parsed once. Model ids may contain ":"
// themselves (e.g. an Ollama `llama3:8b`), so known suffixes are peeled off the END only, and
// only until the rest names a catalog model. Suffixes of features this gateway does not offer
// yet are recognized and refused with a clear message, never silently ignored.
import type { ReasoningEffort } from '../core/types.js';
import { RequestError } from '../core/errors.js';

export type RouteSort = 'price' | 'throughput' | 'latency';

export interface ModelName {
  /** the name without suffixes */
  base: string;
  sort?: RouteSort;
  /** only providers that support tool calling (":tools") */
  requireTools?: boolean;
  /** only cache-capable providers (":caching") */
  requireCaching?: boolean;
  thinking?: boolean;
  reasoningExclude?: boolean;
  reasoningEffort?: ReasoningEffort;
  /** compress the conversation before the latest user turn first (":memory", activities/memory/) */
  memory?: boolean;
  /** mask personal data before the request leaves (":redaction" and aliases, activities/redaction/) */
  redaction?: boolean;
  /** web search (":online", ":online/<provider>"; activities/search/settings.ts reads `arg`) */
  online?: { arg?: string };
  /** the suffixes as written, for messages */
  suffixes: string[];
}

class SuffixError extends RequestError {
  constructor(message: string) {
    super(400, 'invalid_parameter_value', message, { param: 'model' });
  }
}

const SORTS: Record<string, RouteSort> = {
  fast: 'throughput',
  speed: 'throughput',
  throughput: 'throughput',
  cheap: 'price',
  price: 'price',
  floor: 'price',
  latency: 'latency',
};
const EFFORTS = ['none', 'low', 'medium', 'high', 'xhigh', 'max'];

// Recognized, not offered by this gateway (yet): refuse, naming the feature.
const NOT_OFFERED: Array<[RegExp, string]> = [];
const REDACTION = /^(redaction|redacted|piiredaction|piiredacted)$/;

function isSuffix(token: string): boolean {
  return (
    token in SORTS ||
    token === 'tools' ||
    /^(caching|cache|cached)$/.test(token) ||
    token === 'thinking' ||
    token === 'memory' ||
    REDACTION.test(token) ||
    /^online(\/.+)?$/.test(token) ||
    token === 'reasoning-exclude' ||
    token.startsWith('reasoning-effort/') ||
    NOT_OFFERED.some(([re]) => re.test(token))
  );
}

/**
 * Split `name` into a model and its suffixes. `exists` says whether a name is a catalog model;
 * the longest name that exists wins, so ids containing ":" keep working.
 */
export function parseModelName(name: string, exists: (base: string) => boolean): ModelName {
  // most names have no suffix: what the rest would work out, without its arrays
  if (!name.includes(':')) return { base: name, suffixes: [] };
  const tokens = name.split(':');
  let cut = tokens.length;
  // peel suffixes from the end while the remainder is not itself a model
  while (cut > 1 && !exists(tokens.slice(0, cut).join(':')) && isSuffix(tokens[cut - 1].toLowerCase())) cut--;
  const base = tokens.slice(0, cut).join(':');
  const suffixes = tokens.slice(cut).map((t) => t.toLowerCase());
  const out: ModelName = { base, suffixes: suffixes.map((s) => `:${s}`) };
  for (const s of suffixes) {
    const refused = NOT_OFFERED.find(([re]) => re.test(s));
    if (refused)
      throw new SuffixError(
        `The ':${s}' suffix asks for ${refused[1]}, which this gateway does not offer. Remove the suffix.`,
      );
    if (s in SORTS) {
      if (out.sort && out.sort !== SORTS[s])
        throw new SuffixError(`Conflicting routing suffixes: sort by ${out.sort} and by ${SORTS[s]}. Use one.`);
      out.sort = SORTS[s];
    } else if (s === 'tools') out.requireTools = true;
    else if (s === 'caching' || s === 'cache' || s === 'cached') out.requireCaching = true;
    else if (s === 'thinking') out.thinking = true;
    else if (s === 'memory') out.memory = true;
    else if (REDACTION.test(s)) out.redaction = true;
    else if (s === 'online' || s.startsWith('online/')) {
      const arg = s.slice('online/'.length) || undefined;
      if (out.online && out.online.arg !== arg)
        throw new SuffixError('Two different :online suffixes in the model name. Use one.');
      out.online = { arg: s === 'online' ? undefined : arg };
    } else if (s === 'reasoning-exclude') out.reasoningExclude = true;
    else if (s.startsWith('reasoning-effort/')) {
      const effort = s.slice('reasoning-effort/'.length);
      if (!EFFORTS.includes(effort))
        throw new SuffixError(
          `':reasoning-effort/${effort}' is not a reasoning effort; use one of ${EFFORTS.join(', ')}.`,
        );
      if (out.reasoningEffort && out.reasoningEffort !== effort)
        throw new SuffixError('Two different reasoning efforts in the model name. Use one.');
      out.reasoningEffort = effort as ReasoningEffort;
    }
  }
  if (out.thinking && out.reasoningEffort === 'none')
    throw new SuffixError("':thinking' and ':reasoning-effort/none' contradict each other.");
  return out;
}
