// biome-ignore-all lint/suspicious/noExplicitAny: wire JSON, read field by field
// What a text request asks of web search, from its two sources: the model suffix (`:online`,
// `:online/<provider>`, `:online/deep`, `:online/<provider>-deep`) and the body (`web_search`, its
// alias `webSearch` and legacy name `linkup`: a boolean or an object; and OpenAI's
// `web_search_options`). The spec's override rules:
//   - a body object with `enabled: true` overrides the suffix's settings field by field;
//   - `web_search: false` (or an object with `enabled: false`) does not cancel an `:online` suffix;
//   - without a suffix, `true`, an object not saying `enabled: false`, or `web_search_options`
//     turns search on.
// `provider: "native"` asks for the model provider's own search (native.ts), any other provider
// names the external search provider (no fallback to another).
import { RequestError } from '../core/errors.js';
import type { SearchDepth } from '../providers/types.js';
import type { ModelName } from '../routing/suffixes.js';

/** The external search providers a request may name (the catalog's providers of `switchyard/web-search`). */
const SEARCH_PROVIDERS = ['linkup', 'tavily', 'searxng'] as const;
/** Providers the spec names that this gateway does not run: refused by name rather than silently replaced. */
const NOT_RUN = ['exa', 'kagi', 'perplexity', 'valyu', 'brave', 'firecrawl'];

export interface WebSearchSettings {
  depth: SearchDepth;
  /** a search provider, or 'native'; unset = the catalog's order, with fallback */
  provider?: string;
  /** results put before the model (default 5) */
  maxResults: number;
  /** OpenAI's search_context_size, for native search */
  contextSize?: 'low' | 'medium' | 'high';
  includeDomains?: string[];
  excludeDomains?: string[];
  fromDate?: string;
  toDate?: string;
  /** where the settings came from, for messages */
  source: string;
}

const DEFAULT_RESULTS = 5;
/** OpenAI's hosted web search tools (the Responses API's way to ask for search) */
export const HOSTED_WEB_SEARCH_TOOLS = [
  'web_search',
  'web_search_preview',
  'web_search_2025_08_26',
  'web_search_preview_2025_03_11',
];
const MAX_RESULTS = 20;
/** results per OpenAI search_context_size */
const CONTEXT_RESULTS = { low: 3, medium: 5, high: 8 } as const;

const bad = (message: string, param: string) => new RequestError(400, 'invalid_parameter_value', message, { param });

/** A provider name as written (`Tavily`, `linkup`), checked. */
export function searchProvider(raw: string, param: string): string {
  const p = raw.trim().toLowerCase();
  if (p === 'native' || (SEARCH_PROVIDERS as readonly string[]).includes(p)) return p;
  const why = NOT_RUN.includes(p) ? `'${raw}' is not run by this gateway` : `'${raw}' is not a search provider`;
  throw bad(`${why}; use one of ${[...SEARCH_PROVIDERS, 'native'].join(', ')}.`, param);
}

/** `:online/<x>`: a provider, `deep`, or `<provider>-deep` (NanoGPT's `:online/linkup-deep`). */
function fromSuffix(name: ModelName): Partial<WebSearchSettings> | undefined {
  if (!name.online) return undefined;
  const arg = name.online.arg;
  if (!arg) return {};
  if (arg === 'deep' || arg === 'standard') return { depth: arg };
  const m = /^(.+?)-(deep|standard)$/.exec(arg);
  return m
    ? { provider: searchProvider(m[1], 'model'), depth: m[2] as SearchDepth }
    : { provider: searchProvider(arg, 'model') };
}

const DATE = /^\d{4}-\d{2}-\d{2}$/;

function domains(v: unknown, param: string): string[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v) || !v.every((d) => typeof d === 'string' && d.trim() && d.length <= 253))
    throw bad(`'${param}' must be a list of domain names.`, param);
  return v.map((d) => d.trim().toLowerCase());
}

/** The fields of a `web_search` object (snake_case and camelCase both read), each checked. */
function fromObject(o: any, field: string): Partial<WebSearchSettings> {
  const out: Partial<WebSearchSettings> = {};
  if (o.provider !== undefined) {
    if (typeof o.provider !== 'string') throw bad(`'${field}.provider' must be a string.`, `${field}.provider`);
    out.provider = searchProvider(o.provider, `${field}.provider`);
  }
  const depth = o.depth ?? o.search_depth;
  if (depth !== undefined) {
    if (depth !== 'standard' && depth !== 'deep')
      throw bad(`'${field}.depth' must be "standard" or "deep".`, `${field}.depth`);
    out.depth = depth;
  }
  const max = o.max_results ?? o.maxResults;
  if (max !== undefined) {
    if (!Number.isInteger(max) || max < 1 || max > MAX_RESULTS)
      throw bad(`'${field}.max_results' must be an integer from 1 to ${MAX_RESULTS}.`, `${field}.max_results`);
    out.maxResults = max;
  }
  const size = o.search_context_size;
  if (size !== undefined) {
    if (!(size in CONTEXT_RESULTS))
      throw bad(`'${field}.search_context_size' must be low, medium or high.`, `${field}.search_context_size`);
    out.contextSize = size;
  }
  const inc = domains(o.include_domains ?? o.includeDomains, `${field}.include_domains`);
  if (inc) out.includeDomains = inc;
  const exc = domains(o.exclude_domains ?? o.excludeDomains, `${field}.exclude_domains`);
  if (exc) out.excludeDomains = exc;
  for (const [key, snake, camel] of [
    ['fromDate', 'from_date', 'fromDate'],
    ['toDate', 'to_date', 'toDate'],
  ] as const) {
    const d = o[snake] ?? o[camel];
    if (d === undefined) continue;
    if (typeof d !== 'string' || !DATE.test(d) || Number.isNaN(Date.parse(d)))
      throw bad(`'${field}.${snake}' must be a date as YYYY-MM-DD.`, `${field}.${snake}`);
    out[key] = d;
  }
  return out;
}

/** Drop undefined fields, so a merge only overrides what was said. */
const said = (o: Partial<WebSearchSettings>) =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<WebSearchSettings>;

/** The request's web search, or undefined when it asks for none. */
export function webSearchSettings(name: ModelName, body: Record<string, any>): WebSearchSettings | undefined {
  const suffix = fromSuffix(name);
  const field = (['web_search', 'webSearch', 'linkup'] as const).find((f) => body[f] !== undefined && body[f] !== null);
  const raw = field ? body[field] : undefined;
  if (raw !== undefined && typeof raw !== 'boolean' && (typeof raw !== 'object' || Array.isArray(raw)))
    throw bad(`'${field}' must be true, false or an object.`, field!);
  // the Responses API's hosted tool ({type: "web_search", search_context_size}) asks as web_search_options does
  const hosted = Array.isArray(body.tools)
    ? body.tools.find((t: any) => HOSTED_WEB_SEARCH_TOOLS.includes(t?.type))
    : undefined;
  const options =
    body.web_search_options ?? (hosted ? { search_context_size: hosted.search_context_size ?? undefined } : undefined);
  if (options !== undefined && options !== null && (typeof options !== 'object' || Array.isArray(options)))
    throw bad("'web_search_options' must be an object.", 'web_search_options');

  const obj = raw && typeof raw === 'object' ? fromObject(raw, field!) : undefined;
  const enabledFlag = raw && typeof raw === 'object' ? raw.enabled : raw;
  if (enabledFlag !== undefined && typeof enabledFlag !== 'boolean')
    throw bad(`'${field}.enabled' must be a boolean.`, `${field}.enabled`);
  const opts = options ? fromObject(options, 'web_search_options') : undefined;
  if (opts?.contextSize && opts.maxResults === undefined) opts.maxResults = CONTEXT_RESULTS[opts.contextSize];

  let merged: Partial<WebSearchSettings>;
  let source: string;
  if (suffix) {
    source = `the ':online${name.online?.arg ? `/${name.online.arg}` : ''}' suffix`;
    // the body overrides the suffix only with enabled: true; otherwise the suffix's own settings
    // stand and the body only fills in what the suffix does not say (nothing, when it says false)
    const fields = enabledFlag === false ? {} : said(obj ?? {});
    merged =
      enabledFlag === true
        ? { ...said(opts ?? {}), ...said(suffix), ...fields }
        : { ...said(opts ?? {}), ...fields, ...said(suffix) };
  } else {
    const on = enabledFlag === true || (enabledFlag === undefined && (obj !== undefined || opts !== undefined));
    if (!on) return undefined;
    source = field ? `'${field}'` : "'web_search_options'";
    merged = { ...said(opts ?? {}), ...said(obj ?? {}) };
  }

  return {
    depth: merged.depth ?? 'standard',
    provider: merged.provider,
    maxResults: merged.maxResults ?? DEFAULT_RESULTS,
    contextSize: merged.contextSize,
    includeDomains: merged.includeDomains,
    excludeDomains: merged.excludeDomains,
    fromDate: merged.fromDate,
    toDate: merged.toDate,
    source,
  };
}
