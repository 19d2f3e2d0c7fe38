// Model discovery: GET /api/v1/models (?detailed=true), GET /api/v1/embedding-models, and
// provider discovery GET /api/models/{canonicalId}/providers. Public: no key needed, like the
// hosted service. Only models that can be used right now are listed (a model whose providers
// are all unconfigured would only fail with model_not_available).
import Router from '@koa/router';
import { surface } from '../middleware/surface.js';
import { authenticate } from '../middleware/auth.js';
import { validateQuery } from '../validate.js';
import { notFound } from '../../activities/surfaces/errors.js';
import { v1 } from '../paths.js';
import { catalog, type ModelInfo, type Route } from '../../activities/catalog/catalog.js';
import { formatAmount } from '../../activities/core/money.js';
import { billingUnit } from '../../activities/media/speech.js';
import type { AppContext, AppState } from '../state.js';

const CAPABILITIES = [
  'vision',
  'reasoning',
  'tool_calling',
  'parallel_tool_calls',
  'structured_output',
  'pdf_upload',
  'video_input',
];

/** nano-USD per 1M tokens → USD per 1M tokens (or per 1k) as a JSON number */
const perMillion = (p: bigint) => Number(formatAmount(p, 'USD'));
// shifting the decimal text (not dividing a float) keeps 0.0002415 exactly 0.0002415
const perThousand = (p: bigint) => Number(`${formatAmount(p, 'USD')}e-3`);

/** A route's token prices per 1k tokens, prompt-cache reads and writes where the catalog prices them (README, Prompt caching). */
function routePricing(r: Route) {
  const { input, output, cachedInput, cacheWrite, cacheWrite1h } = r.price;
  return {
    inputPer1kTokens: perThousand(input),
    outputPer1kTokens: perThousand(output),
    ...(cachedInput != null ? { cachedInputPer1kTokens: perThousand(cachedInput) } : {}),
    ...(cacheWrite != null ? { cacheWritePer1kTokens: perThousand(cacheWrite) } : {}),
    ...(cacheWrite1h != null ? { cacheWrite1hPer1kTokens: perThousand(cacheWrite1h) } : {}),
  };
}

function defaultRoute(m: ModelInfo): Route | undefined {
  return m.routes.find((r) => r.available) ?? m.routes[0];
}

/**
 * A model's price in the unit it is billed in. Token models: `prompt` / `completion` per 1M
 * tokens. Models billed by something else name it instead of borrowing token field names:
 * speech `{input, unit:'per_million_characters'}`; music `{input, unit:'per_minute', billed_by:
 * 'second'}` (or per N seconds, from the model's `billing_per`); video `{per_second,
 * unit:'per_second'}` (a video route's price is USD per second of output); image `{per_image, unit:'per_image'}`.
 */
function pricingOf(m: ModelInfo, r: Route | undefined) {
  if (m.category === 'speech' || m.category === 'music') {
    const { unit, per } = billingUnit(m);
    const input = r ? perMillion(r.price.input) : null;
    if (unit === 'character') {
      return {
        input,
        currency: 'USD',
        unit: per === 1_000_000n ? 'per_million_characters' : `per_${per}_characters`,
        billed_by: 'character',
      };
    }
    return {
      input,
      currency: 'USD',
      unit: per === 60n ? 'per_minute' : per === 1n ? 'per_second' : `per_${per}_seconds`,
      billed_by: 'second',
    };
  }
  if (m.category === 'image') {
    // the default size and quality; GET /api/v1/images/models/{id}/endpoints has every price
    return { per_image: r ? perMillion(r.price.input) : null, currency: 'USD', unit: 'per_image', billed_by: 'image' };
  }
  if (m.category === 'video' || m.category === 'transcription') {
    return {
      per_second: r ? perMillion(r.price.input) : null,
      currency: 'USD',
      unit: 'per_second',
      // video: seconds of output; transcription: seconds of audio in
      billed_by: 'second',
    };
  }
  return {
    prompt: r ? perMillion(r.price.input) : null,
    completion: r ? perMillion(r.price.output) : null,
    currency: 'USD',
    unit: 'per_million_tokens',
  };
}

/** Whether any subscription plan of the catalog covers the model. */
const covered = (m: ModelInfo) => catalog().plans.some((p) => p.models.includes(m.id));

/** A model's icon, from the catalog file's model `options.icon_url` (null when none is set). */
const iconOf = (m: ModelInfo): string | null => (typeof m.options.icon_url === 'string' ? m.options.icon_url : null);

function summary(m: ModelInfo) {
  return { id: m.id, object: 'model', created: Math.floor(m.createdAt.getTime() / 1000), owned_by: m.ownedBy };
}

function detailed(m: ModelInfo) {
  const r = defaultRoute(m);
  return {
    ...summary(m),
    name: m.name,
    description: m.description,
    context_length: m.contextLength,
    max_output_tokens: m.maxOutputTokens,
    capabilities: Object.fromEntries(CAPABILITIES.map((c) => [c, m.capabilities[c] ?? false])),
    pricing: pricingOf(m, r),
    architecture: { input_modalities: m.inputModalities, output_modalities: m.outputModalities },
    supported_endpoints: m.supportedEndpoints,
    supported_batch_endpoints: m.supportedBatchEndpoints,
    supported_service_tiers: m.supportedServiceTiers,
    category: m.category,
    icon_url: iconOf(m),
    // whether a subscription plan of the catalog covers the model
    subscription: { included: covered(m) },
  };
}

export const modelsRouter = new Router<AppState>();

/** What GET /v1/models lists: every usable model but those only other lists show. */
const listed = () =>
  catalog()
    .usable()
    .filter((m) => m.category !== 'embedding' && m.category !== 'memory' && m.category !== 'search');

/**
 * The Anthropic SDK sends `anthropic-version` on every call and reads its own model shape
 * (`type: "model"`, `display_name`, `created_at` as RFC 3339); the OpenAI SDK never sends it.
 * So the header picks the dialect, as on Anthropic's own /v1/models. Errors keep the route's
 * OpenAI envelope, whose `error.type` and `error.message` are where Anthropic's SDKs read them.
 */
const wantsAnthropic = (ctx: AppContext) => ctx.get('anthropic-version') !== '';

function anthropicModel(m: ModelInfo) {
  return { type: 'model', id: m.id, display_name: m.name, created_at: m.createdAt.toISOString() };
}

const LIST_QUERY = {
  type: 'object',
  properties: {
    detailed: { type: 'boolean', default: false },
    // Anthropic's list pagination: a page of `limit` models after / before an id
    limit: { type: 'integer', minimum: 1, maximum: 1000, default: 20 },
    after_id: { type: 'string', maxLength: 300 },
    before_id: { type: 'string', maxLength: 300 },
  },
};

/**
 * The TypeSafe decision SDK (`@typesafe-ai/sdk`) lists models from the same path and reads
 * `{models: [{name, description, release_date}]}`: the decision models, which are what it can call.
 * It says who it is in `X-TypeSafe-SDK` on every request, so that header picks its dialect.
 */
const wantsTypeSafe = (ctx: AppContext) => ctx.get('x-typesafe-sdk') !== '';

modelsRouter.get(v1('/models'), surface('openai'), validateQuery(LIST_QUERY), (ctx) => {
  const models = listed();
  if (wantsTypeSafe(ctx)) {
    ctx.body = {
      models: models
        .filter((m) => m.category === 'decision')
        .map((m) => ({ name: m.id, description: m.description, release_date: m.createdAt.toISOString().slice(0, 10) })),
    };
    return;
  }
  if (!wantsAnthropic(ctx)) {
    ctx.body = { object: 'list', data: models.map(ctx.state.query.detailed ? detailed : summary) };
    return;
  }
  const {
    limit,
    after_id: after,
    before_id: before,
  } = ctx.state.query as {
    limit: number;
    after_id?: string;
    before_id?: string;
  };
  const at = (id: string) => {
    const i = models.findIndex((m) => m.id === id);
    if (i < 0) throw notFound('model_not_found', `No model '${id}' to page from: GET /v1/models lists the models.`);
    return i;
  };
  // before_id pages backwards (the `limit` models just before it), as Anthropic's API does
  const end = before ? at(before) : models.length;
  const start = before ? Math.max(0, end - limit) : after ? at(after) + 1 : 0;
  const page = models.slice(start, before ? end : start + limit);
  ctx.body = {
    data: page.map(anthropicModel),
    has_more: before ? start > 0 : start + page.length < models.length,
    first_id: page[0]?.id ?? null,
    last_id: page.at(-1)?.id ?? null,
  };
});

// The text-model lists NanoGPT clients read beside the main one: `/api/subscription/v1/models`
// (what a subscription plan covers), `/api/paid/v1/models` (what only the balance pays for) and
// `/api/personalized/v1/models` (the caller's visible models; there are no per-account visibility
// settings here, so every text model, and it takes a key as NanoGPT's does). Same shapes and
// `detailed` as /v1/models.
const TEXT_LISTS: Array<[string, (m: ModelInfo) => boolean]> = [
  ['/api/subscription/v1/models', covered],
  ['/api/paid/v1/models', (m) => !covered(m)],
  ['/api/personalized/v1/models', () => true],
];
for (const [path, keep] of TEXT_LISTS) {
  modelsRouter.get(
    path,
    surface('openai'),
    ...(path.startsWith('/api/personalized') ? [authenticate] : []),
    validateQuery({ type: 'object', properties: { detailed: { type: 'boolean', default: false } } }),
    (ctx) => {
      const models = listed().filter((m) => m.category === 'chat' && keep(m));
      ctx.body = { object: 'list', data: models.map(ctx.state.query.detailed ? detailed : summary) };
    },
  );
}

// GET /v1/models/{id}: the SDKs' models.retrieve. Ids contain "/" (sent as %2F by the SDKs, which
// the router decodes, or raw); aliases resolve to the model they name.
modelsRouter.get(v1('/models/*id'), surface('openai'), validateQuery(LIST_QUERY), (ctx) => {
  const raw = ctx.params.id as unknown as string | string[];
  const id = Array.isArray(raw) ? raw.join('/') : raw;
  const m = catalog().model(id);
  if (!m || !listed().includes(m))
    throw notFound('model_not_found', `Model '${id}' is not available here. GET /v1/models lists the models.`);
  ctx.body = wantsAnthropic(ctx) ? anthropicModel(m) : ctx.state.query.detailed ? detailed(m) : summary(m);
});

modelsRouter.get(v1('/embedding-models'), surface('openai'), (ctx) => {
  ctx.body = {
    object: 'list',
    data: catalog()
      .usable('embedding')
      .map((m) => {
        const r = defaultRoute(m)!;
        return {
          ...summary(m),
          name: m.name,
          description: m.description,
          context_length: m.contextLength,
          dimensions: m.options.dimensions ?? null,
          supports_dimension_reduction: m.options.reducible_dimensions ?? false,
          pricing: { prompt: perMillion(r.price.input), currency: 'USD', unit: 'per_million_tokens' },
          zero_data_retention: m.routes.some((x) => x.available && x.zeroDataRetention),
        };
      }),
  };
});

// The older catalogue, GET /api/models (and /api/models/{group}): no key, every usable model
// grouped the way NanoGPT's clients still unwrap it, `{models: {text: {<id>: {...}}, image: {...}},
// meta}`, each entry keyed by id and carrying `model` (its id), `name`, `description` and `cost`
// (the detailed list's pricing object).
const OLD_GROUPS: Record<string, string> = {
  chat: 'text',
  decision: 'text',
  image: 'image',
  video: 'video',
  speech: 'audio',
  music: 'audio',
  transcription: 'audio',
  embedding: 'embedding',
};

function oldCatalogue(group?: string) {
  const models: Record<string, Record<string, unknown>> = {};
  for (const m of catalog().usable()) {
    const g = OLD_GROUPS[m.category];
    if (!g || (group && g !== group)) continue;
    models[g] ??= {};
    models[g][m.id] = {
      model: m.id,
      name: m.name,
      description: m.description,
      owned_by: m.ownedBy,
      context_length: m.contextLength,
      cost: pricingOf(m, defaultRoute(m)),
      icon_url: iconOf(m),
    };
  }
  return { models, meta: { count: Object.values(models).reduce((n, g) => n + Object.keys(g).length, 0) } };
}

modelsRouter.get('/api/models', surface('openai'), (ctx) => {
  ctx.body = oldCatalogue();
});

modelsRouter.get('/api/models/:group', surface('openai'), (ctx) => {
  const group = ctx.params.group;
  if (!Object.values(OLD_GROUPS).includes(group))
    throw notFound(
      'not_found',
      `No model group '${group}': the groups are ${[...new Set(Object.values(OLD_GROUPS))].join(', ')}.`,
    );
  ctx.body = oldCatalogue(group);
});

// Ids contain "/": clients send it encoded (%2F), and a raw "/" is accepted as well.
modelsRouter.get('/api/models/*canonicalId/providers', surface('openai'), (ctx) => {
  const raw = ctx.params.canonicalId as unknown as string | string[];
  const id = Array.isArray(raw) ? raw.join('/') : raw;
  const m = catalog().model(id);
  if (!m)
    throw notFound('model_not_found', `Model '${id}' is not in the catalog. GET /api/v1/models lists the models.`);
  const d = defaultRoute(m);
  ctx.body = {
    canonicalId: m.id,
    displayName: m.name,
    supportsProviderSelection: m.routes.length > 1,
    defaultPrice: d ? routePricing(d) : null,
    providers: m.routes.map((r) => ({
      provider: r.provider.id,
      name: r.provider.name,
      available: r.available,
      pricing: routePricing(r),
      ...(r.maxOutputTokens ? { maxOutputTokens: r.maxOutputTokens } : {}),
      ...(r.contextLength ? { contextLength: r.contextLength } : {}),
      quantization: r.quantization,
      zeroDataRetention: r.zeroDataRetention,
      supportsCaching: r.supportsCaching,
    })),
  };
});
