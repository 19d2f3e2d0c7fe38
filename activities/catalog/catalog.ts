// The model catalog as the hot path sees it: read from the database into memory, looked up by
// id or alias without a query, refreshed on a timer (and at once after a sync in this process).
import { db } from '../db.js';
import { providerEnv, type ProviderSettings } from '../config.js';
import { applyMarkup, parseAmount } from '../core/money.js';
import { providerAvailable, routeAvailable } from '../providers/availability.js';
import type { CatalogFileModel, CatalogFilePlan, CatalogFileProvider, CatalogFileRoute } from './file.js';

/** A provider as the hot path sees it: exactly what the catalog file says of it. */
export type ProviderInfo = CatalogFileProvider;

/**
 * nano-USD per 1M tokens. `cachedInput`: prompt-cache reads; `cacheWrite` / `cacheWrite1h`: prompt-cache
 * writes (5-minute and 1-hour), from the catalog's `cache_write` / `cache_write_1h` prices, which
 * are kept in the route's options. Unset, each falls back as costOfUsage says (billing/pricing.ts).
 */
interface RoutePrice {
  input: bigint;
  output: bigint;
  cachedInput: bigint | null;
  cacheWrite?: bigint | null;
  cacheWrite1h?: bigint | null;
}

/** One provider serving one model, as the hot path sees it: the file's route, priced and checked. */
export interface Route
  extends Omit<CatalogFileRoute, 'providerId' | 'inputPrice' | 'outputPrice' | 'cachedInputPrice'> {
  id: string;
  modelId: string;
  provider: ProviderInfo;
  /** customer prices (upstream + markup), nano-USD per 1M tokens */
  price: RoutePrice;
  upstreamPrice: RoutePrice;
  /** configured and usable now (the provider's availability: a key set, a model file on disk, …) */
  available: boolean;
  /** the provider's key and base URL from the environment, as read when this catalog was loaded (see `loadCatalog`) */
  settings: ProviderSettings;
}

/** A catalog model as the hot path sees it: the file's fields, plus when it was first seen and its live routes. */
export interface ModelInfo extends Omit<CatalogFileModel, 'routes'> {
  createdAt: Date;
  /** active routes in the catalog's order of preference */
  routes: Route[];
}

/** A subscription plan as the hot path sees it: what the catalog file says of it. */
export type PlanInfo = CatalogFilePlan;

export class Catalog {
  private readonly byName = new Map<string, ModelInfo>();

  constructor(
    readonly models: ModelInfo[],
    readonly providers: ProviderInfo[],
    readonly plans: PlanInfo[] = [],
    /** each provider's settings, read when the catalog was loaded */
    private readonly settings: ReadonlyMap<string, ProviderSettings> = new Map(),
  ) {
    for (const m of models) for (const name of [m.id, ...m.aliases]) this.byName.set(name.toLowerCase(), m);
  }

  /** A model by id or alias, case-insensitively. */
  model(name: string): ModelInfo | undefined {
    return this.byName.get(name.toLowerCase());
  }

  /** Models a caller can use now (at least one available route), optionally of one category. */
  usable(category?: string): ModelInfo[] {
    return this.models.filter((m) => (!category || m.category === category) && m.routes.some((r) => r.available));
  }

  /** Whether a provider can serve anything right now. */
  providerAvailable(providerId: string): boolean {
    const p = this.providers.find((x) => x.id === providerId);
    return !!p && providerAvailable(p, this.settings.get(p.id) ?? {});
  }
}

const big = (d: { toString(): string } | null): bigint | null => (d == null ? null : BigInt(d.toString()));

// Plain SQL, not Prisma: the API process reads the catalog (and keys) on its hot path and at every
// refresh, and Prisma's query compiler costs it about 60 MB of memory the first time it runs. The
// column lists name every field the mapping below reads, in the client's camelCase.
const PROVIDERS_SQL = `SELECT id, name, protocol, base_url AS "baseUrl", zero_data_retention AS "zeroDataRetention", options
  FROM providers WHERE active`;
const MODELS_SQL = `SELECT id, name, aliases, description, owned_by AS "ownedBy", category,
    context_length AS "contextLength", max_output_tokens AS "maxOutputTokens", capabilities,
    input_modalities AS "inputModalities", output_modalities AS "outputModalities",
    supported_endpoints AS "supportedEndpoints", supported_batch_endpoints AS "supportedBatchEndpoints",
    supported_service_tiers AS "supportedServiceTiers", batch_price_bps AS "batchPriceBps", options, created_at AS "createdAt"
  FROM models WHERE active ORDER BY id`;
const ROUTES_SQL = `SELECT id, model_id AS "modelId", provider_id AS "providerId", upstream_model AS "upstreamModel",
    position, input_price::text AS "inputPrice", output_price::text AS "outputPrice",
    cached_input_price::text AS "cachedInputPrice", markup_bps AS "markupBps", quantization,
    context_length AS "contextLength", max_output_tokens AS "maxOutputTokens",
    zero_data_retention AS "zeroDataRetention", supports_tools AS "supportsTools",
    supports_caching AS "supportsCaching", options
  FROM provider_routes WHERE active ORDER BY position, id`;
const PLANS_SQL = `SELECT id, name, description, price::text AS price, period_seconds AS "periodSeconds",
    daily_limit AS "dailyLimit", monthly_limit AS "monthlyLimit", models
  FROM subscription_plans WHERE active ORDER BY price, id`;

interface ProviderRow extends Omit<ProviderInfo, 'options'> {
  options: Record<string, unknown> | null;
}
interface ModelRow extends Omit<ModelInfo, 'routes' | 'capabilities' | 'options'> {
  capabilities: Record<string, boolean> | null;
  options: Record<string, unknown> | null;
}
interface RouteRow {
  id: string;
  modelId: string;
  providerId: string;
  upstreamModel: string;
  position: number;
  inputPrice: string;
  outputPrice: string;
  cachedInputPrice: string | null;
  markupBps: number;
  quantization: string | null;
  contextLength: number | null;
  maxOutputTokens: number | null;
  zeroDataRetention: boolean;
  supportsTools: boolean;
  supportsCaching: boolean;
  options: Record<string, unknown> | null;
}

/** One route as the gateway uses it: its prices with the markup applied, its provider's settings. */
function toRoute(
  r: RouteRow,
  provider: ProviderInfo,
  providerSettings: ProviderSettings,
  m: Pick<ModelRow, 'contextLength' | 'maxOutputTokens'>,
): Route {
  const options = (r.options ?? {}) as Record<string, unknown>;
  const optionPrice = (key: string) =>
    typeof options[key] === 'string' ? parseAmount(options[key] as string, 'USD') : null;
  const upstreamPrice: RoutePrice = {
    input: big(r.inputPrice)!,
    output: big(r.outputPrice)!,
    cachedInput: big(r.cachedInputPrice),
    cacheWrite: optionPrice('cache_write_price'),
    cacheWrite1h: optionPrice('cache_write_1h_price'),
  };
  const marked = (p: bigint | null | undefined) => (p == null ? null : applyMarkup(p, r.markupBps));
  return {
    id: r.id,
    modelId: r.modelId,
    provider,
    upstreamModel: r.upstreamModel,
    position: r.position,
    upstreamPrice,
    price: {
      input: applyMarkup(upstreamPrice.input, r.markupBps),
      output: applyMarkup(upstreamPrice.output, r.markupBps),
      cachedInput: marked(upstreamPrice.cachedInput),
      cacheWrite: marked(upstreamPrice.cacheWrite),
      cacheWrite1h: marked(upstreamPrice.cacheWrite1h),
    },
    markupBps: r.markupBps,
    quantization: r.quantization,
    contextLength: r.contextLength ?? m.contextLength,
    maxOutputTokens: r.maxOutputTokens ?? m.maxOutputTokens,
    zeroDataRetention: r.zeroDataRetention,
    supportsTools: r.supportsTools,
    supportsCaching: r.supportsCaching,
    options: (r.options ?? {}) as Record<string, unknown>,
    available: routeAvailable({ provider, settings: providerSettings, upstreamModel: r.upstreamModel, options }),
    settings: providerSettings,
  };
}

/**
 * Read the catalog into memory, with each provider's settings (`<PROVIDER>_API_KEY`,
 * `<PROVIDER>_BASE_URL`) as the environment has them now. It runs at start-up and then every 30 s
 * (`startCatalogRefresh`; there is no notification), so a process's routes carry the settings it
 * started with: nothing in the gateway changes its own environment.
 */
export async function loadCatalog(): Promise<Catalog> {
  const { pool } = db();
  const [{ rows: providerRows }, { rows: models0 }, { rows: routeRows }, { rows: planRows }] = await Promise.all([
    pool.query<ProviderRow>(PROVIDERS_SQL),
    pool.query<ModelRow>(MODELS_SQL),
    pool.query<RouteRow>(ROUTES_SQL),
    pool.query<Omit<PlanInfo, 'price'> & { price: string }>(PLANS_SQL),
  ]);
  const routesOf = new Map<string, RouteRow[]>();
  for (const r of routeRows) {
    const list = routesOf.get(r.modelId);
    if (list) list.push(r);
    else routesOf.set(r.modelId, [r]);
  }
  const modelRows = models0.map((m) => ({ ...m, routes: routesOf.get(m.id) ?? [] }));
  const providers: ProviderInfo[] = providerRows.map((p) => ({
    id: p.id,
    name: p.name,
    protocol: p.protocol,
    baseUrl: p.baseUrl,
    zeroDataRetention: p.zeroDataRetention,
    options: (p.options ?? {}) as Record<string, unknown>,
  }));
  const providerById = new Map(providers.map((p) => [p.id, p]));
  // Read here, not per upstream attempt (a `process.env` read costs a call into C++ each): the
  // environment is the process's own, so this sees every change a running gateway can see.
  const settings = new Map(providers.map((p) => [p.id, providerEnv(p.id)]));
  const models: ModelInfo[] = modelRows.map((m) => ({
    id: m.id,
    name: m.name,
    aliases: m.aliases,
    description: m.description,
    ownedBy: m.ownedBy,
    category: m.category,
    contextLength: m.contextLength,
    maxOutputTokens: m.maxOutputTokens,
    capabilities: (m.capabilities ?? {}) as Record<string, boolean>,
    inputModalities: m.inputModalities,
    outputModalities: m.outputModalities,
    supportedEndpoints: m.supportedEndpoints,
    supportedBatchEndpoints: m.supportedBatchEndpoints,
    supportedServiceTiers: m.supportedServiceTiers,
    batchPriceBps: m.batchPriceBps,
    options: (m.options ?? {}) as Record<string, unknown>,
    createdAt: m.createdAt,
    routes: m.routes
      .filter((r) => providerById.has(r.providerId))
      .map((r) => toRoute(r, providerById.get(r.providerId)!, settings.get(r.providerId)!, m)),
  }));
  const plans = planRows.map((p) => ({ ...p, price: BigInt(p.price) }));
  current = new Catalog(models, providers, plans, settings);
  return current;
}

let current: Catalog | undefined;
let timer: NodeJS.Timeout | undefined;

export function catalog(): Catalog {
  if (!current) throw new Error('catalog not loaded: call loadCatalog() first');
  return current;
}

/** Reload every `intervalMs` so catalog syncs from other processes (the ops CLI) are seen. */
export function startCatalogRefresh(intervalMs = 30_000): void {
  stopCatalogRefresh();
  timer = setInterval(() => {
    loadCatalog().catch((err) => console.error(`[catalog] refresh failed: ${(err as Error).message}`));
  }, intervalMs);
  timer.unref();
}

export function stopCatalogRefresh(): void {
  if (timer) clearInterval(timer);
  timer = undefined;
}
