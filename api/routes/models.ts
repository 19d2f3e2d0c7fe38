// Model discovery: GET /api/v1/models (?detailed=true), GET /api/v1/embedding-models, and
// provider discovery GET /api/models/{canonicalId}/providers. Public: no key needed, like the
// hosted service. Only models that can be used right now are listed (a model whose providers
// are all unconfigured would only fail with model_not_available).
import Router from '@koa/router';
import { surface } from '../middleware/surface.js';
import { validateQuery } from '../validate.js';
import { notFound } from '../errors.js';
import { v1 } from '../paths.js';
import { catalog, type ModelInfo, type Route } from '../../activities/catalog/catalog.js';
import { formatAmount } from '../../activities/core/money.js';
import { billingUnit } from '../../activities/media/speech.js';
import type { AppState } from '../state.js';

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
  if (m.category === 'video') {
    return {
      per_second: r ? perMillion(r.price.input) : null,
      currency: 'USD',
      unit: 'per_second',
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
  };
}

export const modelsRouter = new Router<AppState>();

modelsRouter.get(
  v1('/models'),
  surface('openai'),
  validateQuery({ type: 'object', properties: { detailed: { type: 'boolean', default: false } } }),
  (ctx) => {
    const models = catalog()
      .usable()
      .filter((m) => m.category !== 'embedding' && m.category !== 'memory' && m.category !== 'search');
    ctx.body = { object: 'list', data: models.map(ctx.state.query.detailed ? detailed : summary) };
  },
);

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
    defaultPrice: d
      ? { inputPer1kTokens: perThousand(d.price.input), outputPer1kTokens: perThousand(d.price.output) }
      : null,
    providers: m.routes.map((r) => ({
      provider: r.provider.id,
      name: r.provider.name,
      available: r.available,
      pricing: { inputPer1kTokens: perThousand(r.price.input), outputPer1kTokens: perThousand(r.price.output) },
      ...(r.maxOutputTokens ? { maxOutputTokens: r.maxOutputTokens } : {}),
      ...(r.contextLength ? { contextLength: r.contextLength } : {}),
      quantization: r.quantization,
      zeroDataRetention: r.zeroDataRetention,
      supportsCaching: r.supportsCaching,
    })),
  };
});
