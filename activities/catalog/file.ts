// biome-ignore-all lint/suspicious/noExplicitAny: wire JSON, read field by field
// Reads and checks the operator's catalog file (prisma/catalog.yaml by default). Mistakes are
// reported with the path of the offending entry, so an operator can fix them without reading code.
import { readFile } from 'node:fs/promises';
import { parse } from 'yaml';
import { Ajv } from 'ajv';
import { parseAmount } from '../core/money.js';

const price = { type: 'string', pattern: '^\\d+(\\.\\d+)?$' };
const strings = { type: 'array', items: { type: 'string' } };

const schema = {
  type: 'object',
  required: ['providers', 'models'],
  additionalProperties: false,
  properties: {
    defaults: {
      type: 'object',
      additionalProperties: false,
      properties: { markup_bps: { type: 'integer', minimum: 0 } },
    },
    providers: {
      type: 'object',
      additionalProperties: {
        type: 'object',
        required: ['name', 'protocol'],
        additionalProperties: false,
        properties: {
          name: { type: 'string' },
          protocol: {
            type: 'string',
            enum: [
              'openai',
              'anthropic',
              'gemini',
              'local',
              'elevenlabs',
              'fal',
              'linkup',
              'tavily',
              'searxng',
              'openai-tee',
            ],
          },
          base_url: { type: 'string' },
          keyless: { type: 'boolean' },
          zero_data_retention: { type: 'boolean' },
          options: { type: 'object' },
        },
      },
    },
    // subscription plans: a price per period buys daily and per-period allowances of operations on
    // the covered models (activities/subscriptions/)
    plans: {
      type: 'array',
      items: {
        type: 'object',
        required: ['id', 'name', 'price', 'period', 'daily_limit', 'monthly_limit', 'models'],
        additionalProperties: false,
        properties: {
          id: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9._-]*$' },
          name: { type: 'string', minLength: 1 },
          description: { type: 'string' },
          // USD per period, quoted decimal text
          price,
          // "30d", "12h", "90m", "45s"
          period: { type: 'string', pattern: '^[1-9][0-9]*[dhms]$' },
          daily_limit: { type: 'integer', minimum: 1 },
          monthly_limit: { type: 'integer', minimum: 1 },
          models: { ...strings, minItems: 1 },
        },
      },
    },
    models: {
      type: 'array',
      items: {
        type: 'object',
        required: ['id', 'name', 'owned_by', 'category', 'providers'],
        additionalProperties: false,
        properties: {
          id: { type: 'string', minLength: 1 },
          name: { type: 'string' },
          aliases: strings,
          owned_by: { type: 'string' },
          category: {
            type: 'string',
            enum: [
              'chat',
              'embedding',
              'image',
              'video',
              'speech',
              'music',
              'decision',
              'memory',
              'search',
              'transcription',
              'moderation',
            ],
          },
          description: { type: 'string' },
          context_length: { type: 'integer', minimum: 1 },
          max_output_tokens: { type: 'integer', minimum: 1 },
          capabilities: { type: 'object', additionalProperties: { type: 'boolean' } },
          input_modalities: strings,
          output_modalities: strings,
          supported_endpoints: strings,
          supported_batch_endpoints: strings,
          supported_service_tiers: strings,
          // what a batch row pays, as a fraction of the synchronous price ("0.5" = half; 4 decimals at most)
          batch_price_factor: { type: 'string', pattern: '^\\d+(\\.\\d{1,4})?$' },
          options: { type: 'object' },
          providers: {
            type: 'array',
            minItems: 1,
            items: {
              type: 'object',
              required: ['provider', 'upstream_model', 'price'],
              additionalProperties: false,
              properties: {
                provider: { type: 'string' },
                upstream_model: { type: 'string' },
                // token-priced routes state input/output (per 1M); video routes state per_second;
                // image routes per_image (and route option `image_prices` by size and quality);
                // web search routes per_request
                price: {
                  type: 'object',
                  additionalProperties: false,
                  properties: {
                    input: price,
                    output: price,
                    cached_input: price,
                    // prompt-cache writes (Anthropic's 5-minute and 1-hour breakpoints; README, Prompt caching)
                    cache_write: price,
                    cache_write_1h: price,
                    per_second: price,
                    per_image: price,
                    per_request: price,
                  },
                  oneOf: [
                    {
                      required: ['input', 'output'],
                      not: {
                        anyOf: [
                          { required: ['per_second'] },
                          { required: ['per_image'] },
                          { required: ['per_request'] },
                        ],
                      },
                    },
                    {
                      required: ['per_second'],
                      not: {
                        anyOf: [{ required: ['input'] }, { required: ['per_image'] }, { required: ['per_request'] }],
                      },
                    },
                    {
                      required: ['per_image'],
                      not: {
                        anyOf: [{ required: ['input'] }, { required: ['per_second'] }, { required: ['per_request'] }],
                      },
                    },
                    {
                      required: ['per_request'],
                      not: {
                        anyOf: [{ required: ['input'] }, { required: ['per_second'] }, { required: ['per_image'] }],
                      },
                    },
                  ],
                },
                markup_bps: { type: 'integer', minimum: 0 },
                quantization: { type: 'string' },
                context_length: { type: 'integer', minimum: 1 },
                max_output_tokens: { type: 'integer', minimum: 1 },
                zero_data_retention: { type: 'boolean' },
                supports_tools: { type: 'boolean' },
                supports_caching: { type: 'boolean' },
                options: { type: 'object' },
              },
            },
          },
        },
      },
    },
  },
} as const;

const validate = new Ajv({ allErrors: true, strict: false }).compile(schema);

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
  const providerIds = new Set(providers.map((p) => p.id));
  const seen = new Map<string, string>();
  const models: CatalogFileModel[] = (doc.models as any[]).map((m, i) => {
    for (const name of [m.id, ...(m.aliases ?? [])]) {
      const key = String(name).toLowerCase();
      if (seen.has(key))
        throw new CatalogFileError(`${source}: /models/${i} uses the name "${name}", already used by ${seen.get(key)}`);
      seen.set(key, m.id);
    }
    const routes = (m.providers as any[]).map((r, j): CatalogFileRoute => {
      if (!providerIds.has(r.provider)) {
        throw new CatalogFileError(
          `${source}: /models/${i}/providers/${j} names provider "${r.provider}", which is not under providers:`,
        );
      }
      // Video is billed per second of output and transcription per second of audio in: for those
      // categories the route's `input` price holds the per-second price (nano-USD per second) and
      // `output` is 0. Images likewise per image (`per_image`: the default size and quality;
      // `image_prices` for the others), and web search per request (`per_request`, category `search`).
      const perSecond = r.price.per_second !== undefined;
      const bySecond = m.category === 'video' || m.category === 'transcription';
      if (perSecond !== bySecond) {
        throw new CatalogFileError(
          `${source}: /models/${i}/providers/${j}: ${bySecond ? `a ${m.category} route states its price as per_second` : 'only video and transcription routes are priced per_second'}`,
        );
      }
      const perImage = r.price.per_image !== undefined;
      if (perImage !== (m.category === 'image')) {
        throw new CatalogFileError(
          `${source}: /models/${i}/providers/${j}: ${m.category === 'image' ? 'an image route states its price as per_image' : 'only image routes are priced per_image'}`,
        );
      }
      const perRequest = r.price.per_request !== undefined;
      if (perRequest !== (m.category === 'search')) {
        throw new CatalogFileError(
          `${source}: /models/${i}/providers/${j}: ${m.category === 'search' ? 'a web search route states its price as per_request' : 'only web search routes are priced per_request'}`,
        );
      }
      checkImagePrices(r.options?.image_prices, `${source}: /models/${i}/providers/${j}/options/image_prices`);
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
          perSecond
            ? r.price.per_second
            : perImage
              ? r.price.per_image
              : perRequest
                ? r.price.per_request
                : r.price.input,
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
    });
    if (new Set(routes.map((r) => r.providerId)).size !== routes.length) {
      throw new CatalogFileError(`${source}: /models/${i} lists the same provider twice`);
    }
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
  });
  return { providers, models, plans: parsePlans(doc.plans ?? [], models, source) };
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
