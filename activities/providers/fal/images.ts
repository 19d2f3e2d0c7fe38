// fal.ai image models: the protocol-neutral image request (types.ts ImageRequest) as fal's input,
// run synchronously (route option `sync: true`: one POST to fal's run host, the output in the
// answer) or through the queue (queue.ts: submit, poll the status, fetch the result), and fal's
// output `{images:[{url, content_type, width, height}], seed, has_nsfw_concepts}` as output images.
// References go as data URIs, which fal accepts wherever it takes an image URL: `image_url` for
// one-image models, `image_urls` for several (route option `reference_field`), `mask_url`.
// Images that fal's safety checker flags come back blanked: they are dropped (and not billed);
// when every image is flagged the request is a content-policy refusal.
import { setTimeout as sleep } from 'node:timers/promises';
import { upstreamError } from '../../core/errors.js';
import { readJson, send } from '../http.js';
import type {
  ImageReference,
  ImageRequest,
  ImageResult,
  ImagesAdapter,
  OutputImage,
  ProviderTarget,
} from '../types.js';
import { falError, falHeaders, falResult, falStatus, falSubmit } from './queue.js';

/** How often a queued image job's status is asked (route option `poll_ms`). */
const DEFAULT_POLL_MS = 500;

const dataUri = (r: ImageReference) => `data:${r.mediaType};base64,${r.data.toString('base64')}`;

/** `1024x768` → fal's `{width, height}`; a named size (`square_hd`) goes as it is. */
function imageSize(resolution: string): unknown {
  const m = /^(\d+)x(\d+)$/.exec(resolution);
  return m ? { width: Number(m[1]), height: Number(m[2]) } : resolution;
}

function falImageInput(req: ImageRequest, target: ProviderTarget): Record<string, unknown> {
  const body: Record<string, unknown> = { prompt: req.prompt, num_images: req.n };
  if (req.resolution !== undefined) body.image_size = imageSize(req.resolution);
  if (req.aspectRatio !== undefined) body.aspect_ratio = req.aspectRatio;
  if (req.seed !== undefined) body.seed = req.seed;
  if (req.negativePrompt !== undefined) body.negative_prompt = req.negativePrompt;
  if (req.outputFormat !== undefined) body.output_format = req.outputFormat === 'jpg' ? 'jpeg' : req.outputFormat;
  Object.assign(body, req.params);
  if (req.references.length > 0) {
    const field = target.options.reference_field === 'image_urls' ? 'image_urls' : 'image_url';
    body[field] = field === 'image_urls' ? req.references.map(dataUri) : dataUri(req.references[0]);
  }
  if (req.mask) body.mask_url = dataUri(req.mask);
  return body;
}

function outputsOf(providerId: string, out: Record<string, unknown>): ImageResult {
  const list = Array.isArray(out.images) ? out.images : out.image ? [out.image] : [];
  const flags = Array.isArray(out.has_nsfw_concepts) ? out.has_nsfw_concepts : [];
  const images: OutputImage[] = [];
  list.forEach((img: unknown, i: number) => {
    const o = img as Record<string, unknown> | null;
    if (!o || typeof o.url !== 'string' || !o.url || flags[i] === true) return;
    images.push({ url: o.url, mediaType: typeof o.content_type === 'string' ? o.content_type : undefined });
  });
  if (images.length === 0 && list.length > 0 && flags.some((f) => f === true)) {
    throw upstreamError('every image was flagged by the safety checker (has_nsfw_concepts)', 400, false, {
      code: 'content_policy_violation',
      providerId,
    });
  }
  return { images, seed: typeof out.seed === 'number' ? out.seed : undefined };
}

/** fal's run host for a queue base URL: `https://queue.fal.run` → `https://fal.run` (bridges: the same base). */
const syncBase = (base: string) => base.replace(/\/+$/, '').replace('//queue.', '//');

async function runSync(target: ProviderTarget, model: string, input: Record<string, unknown>, signal: AbortSignal) {
  const res = await send(target.providerId, `${syncBase(target.baseUrl)}/${model}`, {
    headers: falHeaders(target, true),
    body: JSON.stringify(input),
    signal,
  });
  if (res.status < 200 || res.status >= 300) throw await falError(target, res);
  const out = await readJson(target.providerId, res);
  if (!out || typeof out !== 'object')
    throw upstreamError('the answer is not an object', 502, true, {
      code: 'upstream_bad_response',
      providerId: target.providerId,
    });
  return out as Record<string, unknown>;
}

async function runQueued(target: ProviderTarget, model: string, input: Record<string, unknown>, signal: AbortSignal) {
  const id = await falSubmit(target, model, input, signal);
  const pollMs = typeof target.options.poll_ms === 'number' ? target.options.poll_ms : DEFAULT_POLL_MS;
  for (;;) {
    const s = await falStatus(target, model, id, signal);
    const status = s.status.toUpperCase();
    if (status === 'COMPLETED' || status === 'FAILED' || status === 'CANCELED' || status === 'CANCELLED') break;
    await sleep(pollMs, undefined, { signal }).catch(() => {
      throw upstreamError('the call was aborted while the image was queued', 499, false, {
        code: 'aborted',
        providerId: target.providerId,
      });
    });
  }
  const result = await falResult(target, model, id, signal);
  if (result.ok) return result.output;
  // the job's own failure: a content refusal is the caller's (400, not retried); a runner crash may pass elsewhere
  const f = result.failure;
  if (f.nsfw)
    throw upstreamError(f.message, 400, false, { code: 'content_policy_violation', providerId: target.providerId });
  throw upstreamError(f.message, 502, true, { code: f.type ?? undefined, providerId: target.providerId });
}

export const falImages: ImagesAdapter = {
  async generate(req, target, signal) {
    const input = falImageInput(req, target);
    const out =
      target.options.sync === true
        ? await runSync(target, req.model, input, signal)
        : await runQueued(target, req.model, input, signal);
    return outputsOf(target.providerId, out);
  },
};
