// Image generation and editing (spec "Images"; wire-details "Images"). Every route maps its own
// field names to one request (activities/images/generate.ts ImageAsk) and answers
// `{created, data:[{b64_json}|{url}], cost, paymentSource, remainingBalance}`:
//   POST /api/v1/images                       JSON only; input_references (3 forms); nImages wins over n
//   POST /v1/images/generations (+ /api/v1)   OpenAI-style; imageDataUrl(s) / maskDataUrl as data URLs
//   POST /v1/images/edits, /v1/images/edit    OpenAI-style multipart (image, image[], mask) or JSON
//   POST /api/generate-image                  legacy (x-api-key; width/height, nImages, num_steps, scale)
// Errors: the image envelope ({error:{...,parameter}, code}); legacy on /api/generate-image.
// `url` results are the gateway's hosted files (signed URLs of about an hour, files kept 24 h).
import Router from '@koa/router';
import type { Context } from 'koa';
import { clientAbortSignal } from '../clientAbort.js';
import { readImageForm } from '../imageForm.js';
import { chargeOnDelivery } from '../delivery.js';
import { authenticate } from '../middleware/auth.js';
import { refuseUnofferedFeatures } from '../middleware/notOffered.js';
import { surface } from '../middleware/surface.js';
import { publicOrigin, v1 } from '../paths.js';
import {
  generationsRequestSchema,
  imagesRequestSchema,
  legacyImageRequestSchema,
} from '../../activities/surfaces/schemas/images.js';
import { declareMultipart, validateBody } from '../validate.js';
import { imageFormSchema } from '../imageForm.js';
import { config } from '../../activities/config.js';
import { RequestError } from '../../activities/core/errors.js';
import { type ImageAsk, ImageCall, planImages } from '../../activities/images/generate.js';
import { storeHostedFile, signedUrl } from '../../activities/media/hostedFiles.js';
import { billOf } from '../../activities/metering/meteredCall.js';
import type { AppState } from '../state.js';

export const imagesRouter = new Router<AppState>();

/**
 * Image bodies carry inline images (4 MB each as sent): room for five of them. More or larger
 * references go by http(s) URL, as the spec advises.
 */
const IMAGE_BODY_LIMIT = 24 * 1024 * 1024;

const invalid = (status: number, code: string, message: string, param: string | null) =>
  new RequestError(status, code, message, { param });

type ResponseFormat = 'b64_json' | 'url';

/** Plan, hold, generate, settle, answer: the one path of every image route. */
async function answer(ctx: Context, ask: ImageAsk, format: ResponseFormat): Promise<void> {
  const state = ctx.state as AppState;
  const signal = clientAbortSignal(ctx);
  const call = new ImageCall(state.caller, state.requestId, planImages(ask, state.caller));
  // references are fetched and checked before any money is held: a bad one costs nothing
  const inputs = await call.references(signal);
  await call.reserve();
  const out = await call.orRelease(call.generate(signal, inputs));
  const charge = await call.settle(out);
  const origin = publicOrigin(ctx);
  const data = await call.orAbandon(
    Promise.all(
      out.images.map(async (img) => {
        if (format !== 'url') return { b64_json: img.data.toString('base64') };
        const file = await storeHostedFile({
          accountId: state.caller.accountId,
          contentType: img.mediaType,
          data: img.data,
        });
        return { url: await signedUrl(file.id, origin, file.expiresAt) };
      }),
    ),
    'hosting_failed',
  );
  chargeOnDelivery(ctx, call.metered);
  const bill = billOf(charge);
  ctx.body = {
    created: Math.floor(Date.now() / 1000),
    data,
    cost: bill.cost,
    paymentSource: bill.paymentSource,
    remainingBalance: bill.remainingBalance,
  };
}

/** Optional model parameters by their spec names (the plan keeps those the model takes). */
const paramsOf = (b: Record<string, unknown>) => ({
  strength: b.strength,
  guidance_scale: b.guidance_scale,
  num_inference_steps: b.num_inference_steps,
  kontext_max_mode: b.kontext_max_mode,
});

const modelOr = (m: unknown) => (typeof m === 'string' && m ? m : config.defaultImageModel);

// --- POST /api/v1/images ---------------------------------------------------------------------

const OTHER_INPUTS = ['imageDataUrl', 'imageDataUrls', 'image_url', 'images'] as const;

/** `provider` counts when it says anything: a non-empty string, array or object. */
function nonEmpty(x: unknown): boolean {
  if (x === undefined || x === null || x === false) return false;
  if (typeof x === 'string' || Array.isArray(x)) return x.length > 0;
  if (typeof x === 'object') return Object.keys(x).length > 0;
  return true;
}

/** `input_references` items: URL strings, data URLs, or `{type:'image_url', image_url:{url}}`. */
function referenceUrls(refs: unknown[]): string[] {
  return refs.map((r, i) => {
    if (typeof r === 'string' && r) return r;
    const o = r as { type?: unknown; image_url?: unknown } | null;
    const url =
      o && o.type === 'image_url'
        ? typeof o.image_url === 'string'
          ? o.image_url
          : (o.image_url as { url?: unknown } | null)?.url
        : undefined;
    if (typeof url === 'string' && url) return url;
    throw invalid(
      400,
      'invalid_input_references',
      `input_references[${i}] must be a URL string, a data URL, or {type:'image_url', image_url:{url}}.`,
      'input_references',
    );
  });
}

imagesRouter.post(
  v1('/images'),
  surface('image', { limitBytes: IMAGE_BODY_LIMIT, jsonOnly: true }),
  authenticate,
  refuseUnofferedFeatures,
  validateBody(imagesRequestSchema),
  async (ctx) => {
    const b = ctx.request.body as Record<string, unknown>;
    if (typeof b.model !== 'string' || !b.model.trim())
      throw invalid(
        400,
        'missing_model',
        "'model' is required: GET /api/v1/images/models lists the image models.",
        'model',
      );
    if (b.stream === true)
      throw invalid(
        400,
        'unsupported_stream',
        'Image generation does not stream: remove stream (or set it false).',
        'stream',
      );
    if (nonEmpty(b.provider))
      throw invalid(
        400,
        'unsupported_provider_options',
        'Image models have one public endpoint each: provider options are not supported here. Remove provider.',
        'provider',
      );
    if (typeof b.prompt !== 'string')
      throw invalid(400, 'missing_required_parameter', "Missing required parameter: 'prompt'.", 'prompt');
    let references: string[] = [];
    if (Array.isArray(b.input_references)) {
      const mixed = OTHER_INPUTS.filter((k) => b[k] !== undefined);
      if (mixed.length)
        throw invalid(
          400,
          'conflicting_image_inputs',
          `Send images in input_references or in ${mixed.join(', ')}, not both.`,
          'input_references',
        );
      references = referenceUrls(b.input_references);
    } else {
      if (typeof b.imageDataUrl === 'string') references.push(b.imageDataUrl);
      if (Array.isArray(b.imageDataUrls)) references.push(...(b.imageDataUrls as string[]));
      if (typeof b.image_url === 'string') references.push(b.image_url);
      if (Array.isArray(b.images)) references.push(...(b.images as string[]));
    }
    await answer(
      ctx,
      {
        model: b.model,
        prompt: b.prompt,
        n: (b.nImages as number | undefined) ?? (b.n as number | undefined) ?? 1,
        resolution: b.resolution as string | undefined,
        aspectRatio: b.aspect_ratio as string | undefined,
        quality: b.quality as string | undefined,
        outputFormat: b.output_format as string | undefined,
        seed: b.seed as number | undefined,
        negativePrompt: b.negative_prompt as string | undefined,
        references,
        mask: b.maskDataUrl as string | undefined,
        params: paramsOf(b),
        user: b.user as string | undefined,
        names: {
          resolution: 'resolution',
          references: 'input_references',
          n: b.nImages !== undefined ? 'nImages' : 'n',
        },
      },
      (b.response_format as ResponseFormat | undefined) ?? 'b64_json',
    );
  },
);

// --- POST /v1/images/generations ----------------------------------------------------------------

/** The OpenAI-style fields, shared by generations and JSON edits. */
function openaiAsk(b: Record<string, unknown>, references: Array<string | Buffer>, mask?: string | Buffer): ImageAsk {
  return {
    model: modelOr(b.model),
    prompt: b.prompt as string,
    n: (b.n as number | undefined) ?? 1,
    resolution: b.size as string | undefined,
    quality: b.quality as string | undefined,
    outputFormat: b.output_format as string | undefined,
    seed: b.seed as number | undefined,
    negativePrompt: b.negative_prompt as string | undefined,
    references,
    mask,
    params: paramsOf(b),
    user: b.user as string | undefined,
    names: { resolution: 'size', references: 'image', n: 'n' },
  };
}

/** imageDataUrl / imageDataUrls: base64 data URLs only, as the spec says. */
function dataUrls(b: Record<string, unknown>): string[] {
  const urls = [
    ...(typeof b.imageDataUrl === 'string' ? [b.imageDataUrl] : []),
    ...((b.imageDataUrls as string[] | undefined) ?? []),
  ];
  for (const u of urls)
    if (!u.startsWith('data:'))
      throw invalid(
        400,
        'invalid_input_references',
        'imageDataUrl and imageDataUrls take base64 data URLs ("data:image/png;base64,...").',
        'imageDataUrl',
      );
  return urls;
}

imagesRouter.post(
  v1('/images/generations'),
  surface('image', { limitBytes: IMAGE_BODY_LIMIT }),
  authenticate,
  refuseUnofferedFeatures,
  validateBody(generationsRequestSchema),
  async (ctx) => {
    const b = ctx.request.body as Record<string, unknown>;
    const ask = openaiAsk(b, dataUrls(b), b.maskDataUrl as string | undefined);
    await answer(ctx, ask, (b.response_format as ResponseFormat | undefined) ?? 'b64_json');
  },
);

// --- POST /v1/images/edits (and /edit) ----------------------------------------------------------

/** JSON edits: `image` (URL or list), `images` ([{image_url}] or URLs), or imageDataUrl(s). */
function jsonEditImages(b: Record<string, unknown>): string[] {
  const out: string[] = [];
  if (typeof b.image === 'string') out.push(b.image);
  else if (Array.isArray(b.image)) out.push(...(b.image as string[]));
  if (Array.isArray(b.images))
    for (const x of b.images as Array<string | { image_url: string }>)
      out.push(typeof x === 'string' ? x : x.image_url);
  out.push(...dataUrls(b));
  return out;
}

/** A multipart form's text fields as the JSON body would have them (n as a number). */
function formBody(fields: Record<string, string>): Record<string, unknown> {
  const b: Record<string, unknown> = { ...fields };
  if (fields.n !== undefined) {
    const n = Number(fields.n);
    if (!Number.isInteger(n) || n < 1 || n > 10)
      throw invalid(400, 'invalid_parameter_value', "'n' must be an integer from 1 to 10.", 'n');
    b.n = n;
  }
  if (fields.response_format !== undefined && fields.response_format !== 'b64_json' && fields.response_format !== 'url')
    throw invalid(400, 'invalid_parameter_value', "'response_format' must be 'b64_json' or 'url'.", 'response_format');
  if (!fields.prompt)
    throw invalid(400, 'missing_required_parameter', "Missing required parameter: 'prompt'.", 'prompt');
  return b;
}

imagesRouter.post(
  [...v1('/images/edits'), ...v1('/images/edit')],
  surface('image', { limitBytes: IMAGE_BODY_LIMIT }),
  authenticate,
  refuseUnofferedFeatures,
  declareMultipart(imageFormSchema),
  async (ctx, next) => {
    if (!/^multipart\/form-data/i.test(ctx.get('content-type'))) return next();
    const form = await readImageForm(ctx.req, config.fileUploadIdleTimeoutMs);
    const b = formBody(form.fields);
    if (form.images.length === 0)
      throw invalid(400, 'missing_required_parameter', "Missing required parameter: 'image' (a file part).", 'image');
    await answer(
      ctx,
      openaiAsk(b, form.images, form.mask),
      (b.response_format as ResponseFormat | undefined) ?? 'b64_json',
    );
  },
  validateBody(generationsRequestSchema),
  async (ctx) => {
    const b = ctx.request.body as Record<string, unknown>;
    const images = jsonEditImages(b);
    if (images.length === 0)
      throw invalid(
        400,
        'missing_required_parameter',
        "Missing required parameter: 'image' (the image to edit).",
        'image',
      );
    const mask = (b.mask as string | undefined) ?? (b.maskDataUrl as string | undefined);
    await answer(ctx, openaiAsk(b, images, mask), (b.response_format as ResponseFormat | undefined) ?? 'b64_json');
  },
);

// --- POST /api/generate-image (legacy) ------------------------------------------------------------

imagesRouter.post(
  '/api/generate-image',
  surface('legacy', { limitBytes: IMAGE_BODY_LIMIT }),
  authenticate,
  refuseUnofferedFeatures,
  validateBody(legacyImageRequestSchema),
  async (ctx) => {
    const b = ctx.request.body as Record<string, unknown>;
    const sized = b.width !== undefined || b.height !== undefined;
    const resolution = sized ? `${b.width ?? 1024}x${b.height ?? 1024}` : (b.resolution as string | undefined);
    await answer(
      ctx,
      {
        model: modelOr(b.model),
        prompt: b.prompt as string,
        n: (b.nImages as number | undefined) ?? 1,
        resolution,
        seed: b.seed as number | undefined,
        negativePrompt: b.negative_prompt as string | undefined,
        references: typeof b.imageDataUrl === 'string' ? [b.imageDataUrl] : [],
        params: { num_inference_steps: b.num_steps, guidance_scale: b.scale, kontext_max_mode: b.kontext_max_mode },
        names: { resolution: sized ? 'width' : 'resolution', references: 'imageDataUrl', n: 'nImages' },
      },
      'b64_json',
    );
  },
);
