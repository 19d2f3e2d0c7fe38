// Image model discovery, public (no key), like the hosted service (spec "Image model (discovery
// record)"): GET /api/v1/images/models, GET /api/v1/images/models/{modelId}/endpoints (ids with
// slashes, encoded or not), and the older GET /api/v1/image-models (?detailed=true adds
// `supported_parameters.resolutions`, the `size` values of /v1/images/generations). Only models
// that can be used now are listed; prices are what a caller pays (list price plus markup).
import Router from '@koa/router';
import type { Context } from 'koa';
import { notFound } from '../../activities/surfaces/errors.js';
import { surface } from '../middleware/surface.js';
import { publicOrigin, v1 } from '../paths.js';
import { validateQuery } from '../validate.js';
import { catalog, type ModelInfo, type Route } from '../../activities/catalog/catalog.js';
import { toDisplayNumber } from '../../activities/core/money.js';
import { imageOptions, imagePrice } from '../../activities/images/models.js';
import type { AppState } from '../state.js';

const routeOf = (m: ModelInfo): Route => m.routes.find((r) => r.available) ?? m.routes[0];
const created = (m: ModelInfo) => Math.floor(m.createdAt.getTime() / 1000);

const enumOf = (values: string[]) => ({ type: 'enum', values, default: values[0] ?? null });

/** `{type:'enum'|'range', ...}` per parameter the model takes. */
function supportedParameters(m: ModelInfo) {
  const o = imageOptions(m);
  const p: Record<string, unknown> = { n: { type: 'range', min: 1, max: o.maxImages, default: 1 } };
  if (o.resolutions.length) p.resolution = enumOf(o.resolutions);
  if (o.qualities.length) p.quality = enumOf(o.qualities);
  if (o.aspectRatios.length) p.aspect_ratio = enumOf(o.aspectRatios);
  if (o.outputFormats.length) p.output_format = enumOf(o.outputFormats);
  if (o.references)
    p.input_references = { type: 'range', min: o.references.required ? 1 : 0, max: o.references.maxItems, default: 0 };
  return p;
}

function capabilities(m: ModelInfo) {
  const c = m.capabilities;
  return {
    image_generation: c.image_generation ?? true,
    image_to_image: c.image_to_image ?? false,
    inpainting: c.inpainting ?? false,
    nsfw: c.nsfw ?? false,
  };
}

/** One price per size (and quality) the model makes: `{billable:'output_image', unit:'image', cost_usd, resolution}`. */
function pricing(m: ModelInfo, r: Route) {
  const o = imageOptions(m);
  const sizes = o.resolutions.length ? o.resolutions : [undefined];
  const qualities = o.qualities.length ? o.qualities : [undefined];
  return qualities.flatMap((quality) =>
    sizes.map((resolution) => ({
      billable: 'output_image',
      unit: 'image',
      cost_usd: toDisplayNumber(imagePrice(r, resolution, quality), 'USD'),
      resolution: resolution ?? null,
      ...(quality ? { quality } : {}),
    })),
  );
}

const endpointsUrl = (ctx: Context, m: ModelInfo) =>
  `${publicOrigin(ctx)}/api/v1/images/models/${encodeURIComponent(m.id)}/endpoints`;

function record(ctx: Context, m: ModelInfo) {
  return {
    id: m.id,
    name: m.name,
    description: m.description,
    owned_by: m.ownedBy,
    created: created(m),
    architecture: { input_modalities: m.inputModalities, output_modalities: m.outputModalities },
    supported_parameters: supportedParameters(m),
    supports_streaming: false,
    endpoints: endpointsUrl(ctx, m),
    capabilities: capabilities(m),
    category: 'image',
  };
}

export const imageModelsRouter = new Router<AppState>();

imageModelsRouter.get(v1('/images/models'), surface('image'), (ctx) => {
  const data = catalog()
    .usable('image')
    .map((m) => record(ctx, m));
  ctx.body = { object: 'list', data, meta: { count: data.length, generated_at: new Date().toISOString() } };
});

imageModelsRouter.get(
  ['/api/v1/images/models/*modelId/endpoints', '/v1/images/models/*modelId/endpoints'],
  surface('image'),
  (ctx) => {
    const raw = ctx.params.modelId as unknown as string | string[];
    const id = Array.isArray(raw) ? raw.join('/') : raw; // the router has decoded it (%2F included)
    const m = catalog().model(id);
    if (m?.category !== 'image' || !m.routes.some((r) => r.available))
      throw notFound(
        'model_not_found',
        `Image model '${id}' is not served here. GET /api/v1/images/models lists them.`,
      );
    const r = routeOf(m);
    const o = imageOptions(m);
    const endpoint: Record<string, unknown> = {
      provider_name: r.provider.name,
      provider_slug: r.provider.id,
      provider_tag: null,
      supported_parameters: supportedParameters(m),
      allowed_passthrough_parameters: [],
      supports_streaming: false,
      pricing: pricing(m, r),
    };
    if (o.references) {
      endpoint.input_reference_constraints = {
        max_items: o.references.maxItems,
        route: {
          min_width: o.references.minWidth,
          min_height: o.references.minHeight,
          max_bytes: o.references.maxBytes,
          formats: o.references.formats,
          source: ['url', 'data_url'],
        },
      };
    }
    ctx.body = { id: m.id, endpoints: [endpoint] };
  },
);

imageModelsRouter.get(
  v1('/image-models'),
  surface('openai'),
  validateQuery({ type: 'object', properties: { detailed: { type: 'boolean', default: false } } }),
  (ctx) => {
    const data = catalog()
      .usable('image')
      .map((m) => {
        const base = { id: m.id, object: 'model', created: created(m), owned_by: m.ownedBy, name: m.name };
        if (!ctx.state.query.detailed) return base;
        const o = imageOptions(m);
        return {
          ...base,
          description: m.description,
          capabilities: capabilities(m),
          supported_parameters: {
            resolutions: o.resolutions,
            qualities: o.qualities,
            max_images: o.maxImages,
            ...(o.references ? { max_input_references: o.references.maxItems } : {}),
          },
          pricing: pricing(m, routeOf(m)),
        };
      });
    ctx.body = { object: 'list', data };
  },
);
