// An image request as a metered call: checked against the model's catalog options (sizes,
// qualities, how many, references and mask), routed by the one planner, reserved for the worst
// case (n images at the dearest route's price for the size and quality asked), sent to the first
// route that answers (falling back before anything reached the caller), and settled for the
// images actually returned at the answering route's price: fewer images than asked cost less, a
// failure or an empty answer costs nothing.
import type { Caller } from '../core/caller.js';
import { catalog, type ModelInfo, type Route } from '../catalog/catalog.js';
import { RequestError, upstreamError } from '../core/errors.js';
import { resolveModel } from '../catalog/resolve.js';
import { MediaFetchError, safeFetch } from '../core/safeFetch.js';
import { type Charge, MeteredCall } from '../metering/meteredCall.js';
import { capability, targetFor } from '../providers/registry.js';
import type { ImageReference, ImageRequest } from '../providers/types.js';
import { planRoute } from '../routing/planRoute.js';
import { type ImageModelOptions, imageOptions, imagePrice } from './models.js';
import { bad, loadReferences, sniffFormat } from './references.js';

/** Images need nothing of a route beyond serving the model. */
const NO_NEEDS = { tools: false, images: false, structuredOutput: false, caching: false };

/** The largest output image the gateway downloads from a provider's storage. */
const MAX_OUTPUT_BYTES = 50 * 1024 * 1024;

/**
 * An image request from any of the image routes, in one shape (each route maps its own field
 * names): what every image protocol gets (ImageRequest), with `model` the catalog's id and the
 * references not read yet.
 */
export type ImageAsk = Omit<ImageRequest, 'references' | 'mask'> & {
  /** reference images: URLs (http(s) or data) or uploaded bytes */
  references: Array<string | Buffer>;
  mask?: string | Buffer;
  /** the route's own names for the fields a refusal points at */
  names: { resolution: string; references: string; n: string };
};

export interface ImagePlan {
  ask: ImageAsk;
  model: ModelInfo;
  options: ImageModelOptions;
  resolution?: string;
  quality?: string;
  params: Record<string, unknown>;
  routes: Route[];
}

const invalid = (message: string, param: string) =>
  new RequestError(400, 'invalid_parameter_value', message, { param });

function oneOf(value: string | undefined, allowed: string[], param: string, what: string, model: string) {
  if (value === undefined || allowed.includes(value)) return;
  throw invalid(
    allowed.length
      ? `'${param}' is '${value}'; model '${model}' takes ${allowed.map((a) => `'${a}'`).join(', ')}.`
      : `Model '${model}' has no choice of ${what}: remove '${param}'.`,
    param,
  );
}

/** The request against the model and the routes that may serve it; every refusal is a 400 before anything is held. */
export function planImages(ask: ImageAsk, caller: Caller): ImagePlan {
  const { model } = resolveModel(ask.model, 'image');
  const o = imageOptions(model);
  oneOf(ask.resolution, o.resolutions, ask.names.resolution, 'sizes', model.id);
  oneOf(ask.quality, o.qualities, 'quality', 'qualities', model.id);
  oneOf(ask.aspectRatio, o.aspectRatios, 'aspect_ratio', 'aspect ratios', model.id);
  oneOf(ask.outputFormat, o.outputFormats, 'output_format', 'output formats', model.id);
  if (ask.n > o.maxImages)
    throw invalid(
      `'${ask.names.n}' is ${ask.n}; model '${model.id}' makes at most ${o.maxImages} per request.`,
      ask.names.n,
    );
  const refs = ask.references.length;
  if (refs > 0 && !o.references)
    throw new RequestError(
      400,
      'image_input_not_supported',
      `Model '${model.id}' takes no input images. Use a model whose capabilities include image_to_image (GET /api/v1/images/models).`,
      { param: ask.names.references },
    );
  if (o.references && refs > o.references.maxItems)
    throw bad(
      `${refs} reference images were sent; model '${model.id}' takes at most ${o.references.maxItems}.`,
      ask.names.references,
    );
  if (o.references?.required && refs === 0)
    throw bad(`Model '${model.id}' edits an image: send one in '${ask.names.references}'.`, ask.names.references);
  if (ask.mask !== undefined && !o.mask)
    throw invalid(`Model '${model.id}' takes no mask (no inpainting): remove it.`, 'mask');
  const params = Object.fromEntries(
    Object.entries(ask.params).filter(([k, v]) => v !== undefined && o.params.includes(k)),
  );
  const routes = planRoute(catalog(), model, caller, {}, NO_NEEDS);
  return {
    ask,
    model,
    options: o,
    resolution: ask.resolution ?? o.resolutions[0],
    quality: ask.quality ?? o.qualities[0],
    params,
    routes,
  };
}

interface GeneratedImage {
  data: Buffer;
  mediaType: string;
}

export interface GeneratedImages {
  images: GeneratedImage[];
  route: Route;
  /** what one image costs on the route that answered, nano-USD */
  unitPrice: bigint;
}

/** One image's bytes: inline base64, or downloaded from the provider's storage. */
async function materialize(
  route: Route,
  o: { b64: string; mediaType?: string } | { url: string; mediaType?: string },
  signal: AbortSignal,
) {
  const providerId = route.provider.id;
  let data: Buffer;
  if ('b64' in o) data = Buffer.from(o.b64, 'base64');
  else if (o.url.startsWith('data:')) data = Buffer.from(o.url.slice(o.url.indexOf(',') + 1), 'base64');
  else {
    try {
      data = (await safeFetch(o.url, { signal, maxBytes: MAX_OUTPUT_BYTES, errorCode: 'upstream_bad_response' })).data;
    } catch (err) {
      if (!(err instanceof MediaFetchError)) throw err;
      throw upstreamError(`its image could not be downloaded: ${err.detail ?? err.message}`, 502, true, {
        code: 'upstream_bad_response',
        providerId,
      });
    }
  }
  const format = sniffFormat(data);
  if (!format)
    throw upstreamError('it answered an image that is not a PNG, JPEG, WebP or GIF', 502, true, {
      code: 'upstream_bad_response',
      providerId,
    });
  return { data, mediaType: `image/${format}` };
}

export class ImageCall {
  readonly metered: MeteredCall;

  constructor(
    caller: Caller,
    requestId: string,
    readonly plan: ImagePlan,
  ) {
    const { n } = plan.ask;
    this.metered = new MeteredCall({
      caller,
      requestId,
      surface: 'images',
      modelId: plan.model.id,
      routes: plan.routes,
      worstCase: (route) => BigInt(n) * imagePrice(route, plan.resolution, plan.quality),
      shortfall: (required, available) =>
        `${n} image${n === 1 ? '' : 's'} may cost up to $${required} and $${available} is available. Add funds, or ask for fewer images.`,
    });
  }

  reserve(): Promise<unknown> {
    return this.metered.reserve();
  }

  /** The references and mask, fetched and checked against the model's constraints. */
  async references(signal: AbortSignal): Promise<{ references: ImageReference[]; mask?: ImageReference }> {
    const { ask, options } = this.plan;
    const c = options.references;
    if (!c) return { references: [] };
    const references = await loadReferences(ask.references, c, signal, ask.names.references);
    const mask =
      ask.mask === undefined
        ? undefined
        : (await loadReferences([ask.mask], { ...c, maxItems: 1, formats: ['png'] }, signal, 'mask'))[0];
    return { references, mask };
  }

  /** The images from the first route that answers (at most n). Nothing is charged yet. */
  async generate(
    signal: AbortSignal,
    inputs: { references: ImageReference[]; mask?: ImageReference },
  ): Promise<GeneratedImages> {
    const { ask, resolution, quality, params } = this.plan;
    const { value, route } = await this.metered.attempt(signal, async (route) => {
      const out = await capability(route, 'images').generate(
        {
          model: route.upstreamModel,
          prompt: ask.prompt,
          n: ask.n,
          resolution,
          aspectRatio: ask.aspectRatio,
          quality,
          outputFormat: ask.outputFormat,
          seed: ask.seed,
          negativePrompt: ask.negativePrompt,
          references: inputs.references,
          mask: inputs.mask,
          params,
          user: ask.user,
        },
        targetFor(route),
        signal,
      );
      const images = await Promise.all(out.images.slice(0, ask.n).map((o) => materialize(route, o, signal)));
      if (images.length === 0)
        throw upstreamError('it answered no image', 502, true, {
          code: 'empty_response',
          providerId: route.provider.id,
        });
      return images;
    });
    return { images: value, route, unitPrice: imagePrice(route, resolution, quality) };
  }

  /** Charge the images returned, at the answering route's price; release the rest. */
  settle(g: GeneratedImages): Promise<Charge> {
    return this.metered.settle(BigInt(g.images.length) * g.unitPrice, {
      inputUnits: null,
      outputUnits: g.images.length,
    });
  }

  orRelease<T>(work: Promise<T>): Promise<T> {
    return this.metered.orRelease(work);
  }

  orAbandon<T>(work: Promise<T>, code: string): Promise<T> {
    return this.metered.orAbandon(work, code);
  }
}
