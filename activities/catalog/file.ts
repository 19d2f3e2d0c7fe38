// biome-ignore-all lint/suspicious/noExplicitAny: wire JSON, read field by field
// Reads and checks the operator's catalog file (prisma/catalog.yaml by default). Mistakes are
// reported with the path of the offending entry, so an operator can fix them without reading code.
import { readFile } from 'node:fs/promises';
import { parse } from 'yaml';
import { parseAmount } from '../core/money.js';
import { validateCatalogFile as validate } from './fileSchema.js';

export interface CatalogFileProvider {
  id: string;
  name: string;
  protocol: string;
  baseUrl: string | null;
  zeroDataRetention: boolean;
  options: Record<string, unknown>;
}

export interface CatalogFileRoute {
  providerId: string;
  upstreamModel: string;
  position: number;
  /** nano-USD per 1M tokens, upstream list price (video: per second of output; images: per image; search: per request) */
  inputPrice: bigint;
  outputPrice: bigint;
  cachedInputPrice: bigint | null;
  markupBps: number;
  quantization: string | null;
  contextLength: number | null;
  maxOutputTokens: number | null;
  zeroDataRetention: boolean;
  supportsTools: boolean;
  supportsCaching: boolean;
  options: Record<string, unknown>;
}

export interface CatalogFileModel {
  id: string;
  name: string;
  aliases: string[];
  ownedBy: string;
  category: string;
  description: string;
  contextLength: number | null;
  maxOutputTokens: number | null;
  capabilities: Record<string, boolean>;
  inputModalities: string[];
  outputModalities: string[];
  supportedEndpoints: string[];
  supportedBatchEndpoints: string[];
  supportedServiceTiers: string[];
  /** a batch row's price in basis points of the synchronous one (null: the default, half) */
  batchPriceBps: number | null;
  options: Record<string, unknown>;
  routes: CatalogFileRoute[];
}

/** A subscription plan as the file states it. */
export interface CatalogFilePlan {
  id: string;
  name: string;
  description: string;
  /** nano-USD per period */
  price: bigint;
  periodSeconds: number;
  /** operations per UTC day, and per period */
  dailyLimit: number;
  monthlyLimit: number;
  /** catalog model ids (not aliases) */
  models: string[];
}

export interface CatalogFile {
  providers: CatalogFileProvider[];
  models: CatalogFileModel[];
  plans: CatalogFilePlan[];
}

export class CatalogFileError extends Error {}

export function parseCatalog(text: string, source = 'catalog'): CatalogFile {
  let doc: any;
  try {
    doc = parse(text);
  } catch (err) {
    throw new CatalogFileError(`${source}: not valid YAML: ${(err as Error).message}`);
  }
  if (!(validate as (d: unknown) => boolean)(doc)) {
    const lines = validate.errors!.slice(0, 10).map((e) => `  ${e.instancePath || '/'} ${e.message}`);
    throw new CatalogFileError(`${source} has mistakes:\n${lines.join('\n')}`);
  }
  const defaultMarkup: number = doc.defaults?.markup_bps ?? 0;
  const providers: CatalogFileProvider[] = Object.entries(doc.providers as Record<string, any>).map(([id, p]) => ({
    id,
    name: p.name,
    protocol: p.protocol,
    baseUrl: p.base_url ?? null,
    zeroDataRetention: p.zero_data_retention ?? false,
    options: { ...(p.options ?? {}), ...(p.keyless ? { keyless: true } : {}) },
  }));
  const seen = new Map<string, string>();
  const models: CatalogFileModel[] = (doc.models as any[]).map((m, i) => {
    for (const name of [m.id, ...(m.aliases ?? [])]) {
      const key = String(name).toLowerCase();
      if (seen.has(key))
        throw new CatalogFileError(`${source}: /models/${i} uses the name "${name}", already used by ${seen.get(key)}`);
      seen.set(key, m.id);
    }
    const routes = (m.providers as any[]).map((r, j) =>
      parseRoute(r, j, m, `${source}: /models/${i}/providers/${j}`, providers, defaultMarkup),
    );
    if (new Set(routes.map((r) => r.providerId)).size !== routes.length) {
      throw new CatalogFileError(`${source}: /models/${i} lists the same provider twice`);
    }
    return toModel(m, routes);
  });
  return { providers, models, plans: parsePlans(doc.plans ?? [], models, source) };
}

/** One of a model's routes (`where`: its path in the file, for mistakes). */
function parseRoute(
  r: any,
  j: number,
  m: any,
  where: string,
  providers: CatalogFileProvider[],
  defaultMarkup: number,
): CatalogFileRoute {
  if (!providers.some((p) => p.id === r.provider)) {
    throw new CatalogFileError(`${where} names provider "${r.provider}", which is not under providers:`);
  }
  // Video is billed per second of output and transcription per second of audio in: for those
  // categories the route's `input` price holds the per-second price (nano-USD per second) and
  // `output` is 0. Images likewise per image (`per_image`: the default size and quality;
  // `image_prices` for the others), and web search per request (`per_request`, category `search`).
  const perSecond = r.price.per_second !== undefined;
  const bySecond = m.category === 'video' || m.category === 'transcription';
  if (perSecond !== bySecond) {
    throw new CatalogFileError(
      `${where}: ${bySecond ? `a ${m.category} route states its price as per_second` : 'only video and transcription routes are priced per_second'}`,
    );
  }
  const perImage = r.price.per_image !== undefined;
  if (perImage !== (m.category === 'image')) {
    throw new CatalogFileError(
      `${where}: ${m.category === 'image' ? 'an image route states its price as per_image' : 'only image routes are priced per_image'}`,
    );
  }
  const perRequest = r.price.per_request !== undefined;
  if (perRequest !== (m.category === 'search')) {
    throw new CatalogFileError(
      `${where}: ${m.category === 'search' ? 'a web search route states its price as per_request' : 'only web search routes are priced per_request'}`,
    );
  }
  checkImagePrices(r.options?.image_prices, `${where}/options/image_prices`);
  // cache-write prices ride in the route's options (no column of their own): catalog.ts reads them back
  const cacheWrites = {
    ...(r.price.cache_write !== undefined ? { cache_write_price: String(r.price.cache_write) } : {}),
    ...(r.price.cache_write_1h !== undefined ? { cache_write_1h_price: String(r.price.cache_write_1h) } : {}),
  };
  return {
    providerId: r.provider,
    upstreamModel: r.upstream_model,
    position: j,
    inputPrice: parseAmount(
      perSecond ? r.price.per_second : perImage ? r.price.per_image : perRequest ? r.price.per_request : r.price.input,
      'USD',
    ),
    outputPrice: perSecond || perImage || perRequest ? 0n : parseAmount(r.price.output, 'USD'),
    cachedInputPrice: r.price.cached_input === undefined ? null : parseAmount(r.price.cached_input, 'USD'),
    markupBps: r.markup_bps ?? defaultMarkup,
    quantization: r.quantization ?? null,
    contextLength: r.context_length ?? null,
    maxOutputTokens: r.max_output_tokens ?? null,
    zeroDataRetention: r.zero_data_retention ?? providers.find((p) => p.id === r.provider)!.zeroDataRetention,
    supportsTools: r.supports_tools ?? m.capabilities?.tool_calling ?? false,
    supportsCaching: r.supports_caching ?? false,
    options: { ...r.options, ...cacheWrites },
  };
}

/** A model entry of the file, with its parsed routes. */
function toModel(m: any, routes: CatalogFileRoute[]): CatalogFileModel {
  return {
    id: m.id,
    name: m.name,
    aliases: m.aliases ?? [],
    ownedBy: m.owned_by,
    category: m.category,
    description: m.description ?? '',
    contextLength: m.context_length ?? null,
    maxOutputTokens: m.max_output_tokens ?? null,
    capabilities: m.capabilities ?? {},
    inputModalities: m.input_modalities ?? ['text'],
    outputModalities: m.output_modalities ?? ['text'],
    supportedEndpoints: m.supported_endpoints ?? [],
    supportedBatchEndpoints: m.supported_batch_endpoints ?? [],
    supportedServiceTiers: m.supported_service_tiers ?? [],
    batchPriceBps: m.batch_price_factor === undefined ? null : factorToBps(m.batch_price_factor),
    options: m.options ?? {},
    routes,
  };
}

const PERIOD_UNIT_SECONDS: Record<string, number> = { d: 86_400, h: 3600, m: 60, s: 1 };

/** Plans name models by id or alias; each is stored under the model's id. */
function parsePlans(plans: any[], models: CatalogFileModel[], source: string): CatalogFilePlan[] {
  const byName = new Map<string, string>();
  for (const m of models) for (const n of [m.id, ...m.aliases]) byName.set(n.toLowerCase(), m.id);
  const ids = new Set<string>();
  return plans.map((p, i) => {
    if (ids.has(p.id)) throw new CatalogFileError(`${source}: /plans/${i} uses the id "${p.id}" twice`);
    ids.add(p.id);
    if (p.daily_limit > p.monthly_limit)
      throw new CatalogFileError(`${source}: /plans/${i}: daily_limit is above monthly_limit`);
    const covered = (p.models as string[]).map((name, j) => {
      const id = byName.get(name.toLowerCase());
      if (!id)
        throw new CatalogFileError(`${source}: /plans/${i}/models/${j} names "${name}", which is not under models:`);
      return id;
    });
    const period = p.period as string;
    return {
      id: p.id,
      name: p.name,
      description: p.description ?? '',
      price: parseAmount(p.price, 'USD'),
      periodSeconds: Number(period.slice(0, -1)) * PERIOD_UNIT_SECONDS[period.slice(-1)],
      dailyLimit: p.daily_limit,
      monthlyLimit: p.monthly_limit,
      models: [...new Set(covered)],
    };
  });
}

/** `image_prices`: an object of size (`1024x1024`, or `quality/size`) to a USD price as decimal text. */
function checkImagePrices(prices: unknown, where: string): void {
  if (prices === undefined) return;
  if (!prices || typeof prices !== 'object' || Array.isArray(prices))
    throw new CatalogFileError(`${where} must map sizes to prices, e.g. { "1024x1024": "0.04" }`);
  for (const [k, v] of Object.entries(prices))
    if (typeof v !== 'string' || !/^\d+(\.\d+)?$/.test(v))
      throw new CatalogFileError(`${where}/${k} must be a USD price as quoted decimal text, e.g. "0.04"`);
}

/** "0.5" → 5000: a decimal factor as exact basis points (the schema allows 4 decimals at most). */
function factorToBps(factor: string): number {
  const [whole, frac = ''] = factor.split('.');
  return Number(whole) * 10_000 + Number(frac.padEnd(4, '0'));
}

export async function readCatalogFile(file: string): Promise<CatalogFile> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new CatalogFileError(`cannot read the catalog file ${file}: ${(err as Error).message}`);
  }
  return parseCatalog(text, file);
}
