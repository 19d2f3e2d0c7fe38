// biome-ignore-all lint/suspicious/noExplicitAny: wire JSON, read field by field
// OpenAI's Images API (https://platform.openai.com/docs/api-reference/images):
//   generate  POST {base}/images/generations  JSON {model, prompt, n, size, quality, response_format, user, ...}
//   edit      POST {base}/images/edits        multipart: model, prompt, n, size, quality, user, image
//                                             (`image[]` for several), mask
// answered `{created, data:[{b64_json}|{url}, revised_prompt?]}`. A request with references is an
// edit. gpt-image models always answer base64 and refuse `response_format` (route option
// `response_format: false`); dall-e models are asked for base64 so the gateway never has to
// reach OpenAI's short-lived blob URLs. A refusal on safety grounds is a 400 with
// `code: content_policy_violation` (or `moderation_blocked` on gpt-image): the caller's own, not
// retried, and never billed.
import { upstreamError } from '../../core/errors.js';
import { readJson, send, statusError } from '../http.js';
import { type FilePart, multipart } from '../multipart.js';
import type { ImageRequest, ImageResult, ImagesAdapter, OutputImage, ProviderTarget } from '../types.js';
import { quirksFor } from './quirks.js';
import { requestHeaders } from './request.js';
import { deadlineOr } from './stream.js';

const SAFETY_CODES = new Set(['content_policy_violation', 'moderation_blocked']);
const EXTENSIONS: Record<string, string> = {
  'image/png': 'png',
  'image/jpeg': 'jpg',
  'image/webp': 'webp',
  'image/gif': 'gif',
};

/** The fields both endpoints share, in OpenAI's names. */
function fields(req: ImageRequest, target: ProviderTarget): Record<string, string | number> {
  const f: Record<string, string | number> = { model: req.model, prompt: req.prompt, n: req.n };
  if (req.resolution !== undefined) f.size = req.resolution;
  if (req.quality !== undefined) f.quality = req.quality;
  if (req.outputFormat !== undefined) f.output_format = req.outputFormat;
  if (req.user !== undefined) f.user = req.user;
  if (target.options.response_format !== false) f.response_format = 'b64_json';
  for (const [k, v] of Object.entries(req.params)) if (typeof v === 'string' || typeof v === 'number') f[k] = v;
  return f;
}

function outputsOf(providerId: string, json: any): OutputImage[] {
  if (!Array.isArray(json?.data))
    throw upstreamError('the images answer has no data array', 502, true, {
      code: 'upstream_bad_response',
      providerId,
    });
  const out: OutputImage[] = [];
  for (const d of json.data) {
    if (typeof d?.b64_json === 'string' && d.b64_json) out.push({ b64: d.b64_json });
    else if (typeof d?.url === 'string' && d.url) out.push({ url: d.url });
  }
  return out;
}

export const openaiImages: ImagesAdapter = {
  async generate(req, target, signal): Promise<ImageResult> {
    const q = quirksFor(target.providerId, target.options);
    const headers = requestHeaders(target, q, false);
    const base = target.baseUrl.replace(/\/+$/, '');
    const f = fields(req, target);
    let url = `${base}/images/generations`;
    let body: string | Buffer = JSON.stringify(f);
    if (req.references.length > 0) {
      url = `${base}/images/edits`;
      const name = req.references.length > 1 ? 'image[]' : 'image';
      const files: FilePart[] = req.references.map((image, i) => ({
        name,
        data: image.data,
        mediaType: image.mediaType,
        filename: `image-${i}.${EXTENSIONS[image.mediaType] ?? 'png'}`,
      }));
      if (req.mask)
        files.push({ name: 'mask', data: req.mask.data, mediaType: req.mask.mediaType, filename: 'mask.png' });
      const form = multipart(f, files);
      body = form.body;
      headers['content-type'] = form.contentType;
    }
    const res = await send(target.providerId, url, { headers, body, signal }).catch((err) => {
      throw deadlineOr(target.providerId, err, signal);
    });
    if (res.status < 200 || res.status >= 300) {
      const err = await statusError(target.providerId, res);
      const code = codeOf(err.opts.upstreamBody);
      if (res.status === 400 && code && SAFETY_CODES.has(code)) {
        throw upstreamError(err.opts.detail ?? err.message, 400, false, {
          code: 'content_policy_violation',
          providerId: target.providerId,
          upstreamBody: err.opts.upstreamBody,
        });
      }
      throw err;
    }
    const json = await readJson(target.providerId, res).catch((err) => {
      throw deadlineOr(target.providerId, err, signal);
    });
    const mediaType = typeof json?.output_format === 'string' ? `image/${json.output_format}` : undefined;
    return {
      images: outputsOf(target.providerId, json).map((o) => (mediaType ? { ...o, mediaType } : o)),
    };
  },
};

/** `error.code` of an OpenAI error body, when there is one. */
function codeOf(body: string | undefined): string | undefined {
  try {
    const c = JSON.parse(body ?? '')?.error?.code;
    return typeof c === 'string' ? c : undefined;
  } catch {
    return undefined;
  }
}
