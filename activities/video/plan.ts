// A video request checked against what its model accepts (the model's catalog options), before
// anything is reserved: duration, aspect ratio, resolution, media inputs and their size, the
// prompt. The result is the job as every video protocol takes it (providers/types.ts VideoInput;
// each adapter maps it to its own field names) and what the job costs at most.
// Unknown keys are ignored, as the spec says; a media field the model does not take is refused
// with a message naming it, because silently dropping an image would produce the wrong video.
import type { ModelInfo, Route } from '../catalog/catalog.js';
import type { VideoInput } from '../providers/types.js';
import { RequestError } from '../core/errors.js';

/** Media fields of the spec, by the kind of input they carry. */
export const MEDIA_FIELDS: Record<'image' | 'audio' | 'video', string[]> = {
  image: ['imageDataUrl', 'imageUrl', 'imageAttachmentId', 'image', 'reference_image', 'referenceImages'],
  audio: ['audioDataUrl', 'audioUrl', 'audio'],
  video: ['videoUrl', 'videoDataUrl', 'videoAttachmentId', 'video', 'referenceVideos'],
};

/** Optional spec parameters a model may list under `params`, and the body fields each is read from. */
const PARAMS: Record<string, string[]> = {
  negative_prompt: ['negative_prompt'],
  cfg_scale: ['cfg_scale'],
  guidance_scale: ['guidance_scale'],
  num_inference_steps: ['num_inference_steps'],
  num_frames: ['num_frames'],
  frames_per_second: ['frames_per_second'],
  shift: ['shift'],
  generate_audio: ['generateAudio'],
  enhance_prompt: ['enhancePrompt'],
  enable_prompt_expansion: ['enable_prompt_expansion'],
  enable_safety_checker: ['enable_safety_checker'],
  camera_fixed: ['camera_fixed', 'cameraFixed', 'camera_fix'],
  motion: ['motion', 'movementAmplitude'],
};

/** Uploads inline in the request body (data URLs): 4 MB after encoding, larger assets by URL. */
const MAX_INLINE_MEDIA_BYTES = 4 * 1024 * 1024;

export type VideoBody = Record<string, unknown> & { model: string };

export interface VideoPlan {
  model: ModelInfo;
  route: Route;
  /** the job, as every video protocol takes it */
  input: VideoInput;
  /** seconds of each output video the job is priced for */
  durationSeconds: number;
  /** outputs per job (Midjourney-style models make 4) */
  variants: number;
  /** customer price, nano-USD per second of output */
  perSecond: bigint;
  /** the pre-charge: the longest output the request can produce */
  maxUsd: bigint;
  prechargeLabel: string;
  prompt: string | null;
  typicalSeconds: number;
}

const article = (kind: string) => (kind === 'video' ? 'a video' : `an ${kind}`);
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.map(String) : []);
const bad = (message: string, param: string, code = 'invalid_parameter_value') =>
  new RequestError(400, code, message, { param: param });

export function numberOption(model: ModelInfo, name: string, fallback: number): number {
  const v = Number(model.options[name]);
  return Number.isFinite(v) && v > 0 ? v : fallback;
}

/** "10", "10s", 10 → 10; anything else → NaN. */
function seconds(v: unknown): number {
  if (typeof v === 'number') return v;
  const m = /^\s*(\d+(?:\.\d+)?)\s*s?\s*$/i.exec(String(v));
  return m ? Number(m[1]) : NaN;
}

export function planVideo(model: ModelInfo, route: Route, body: VideoBody): VideoPlan {
  const o = model.options;

  // the prompt (required unless the model is a scripted-story one; none of those is served here)
  const prompt = typeof body.prompt === 'string' ? body.prompt.trim() : '';
  if (!prompt)
    throw bad(
      `Missing required parameter: 'prompt' (describe the video to generate).`,
      'prompt',
      'missing_required_parameter',
    );
  const maxPrompt = numberOption(model, 'max_prompt_chars', 2500);
  if ([...prompt].length > maxPrompt)
    throw bad(`'prompt' is ${[...prompt].length} characters; '${model.id}' accepts at most ${maxPrompt}.`, 'prompt');

  // duration: `duration` or `seconds`, in the model's list; the first listed is the default
  const durations = strings(o.durations)
    .map(Number)
    .filter((n) => n > 0);
  const asked = body.duration ?? body.seconds;
  let duration = durations[0] ?? 5;
  if (asked !== undefined && asked !== null && asked !== '') {
    const param = body.duration !== undefined ? 'duration' : 'seconds';
    duration = seconds(asked);
    if (!durations.includes(duration)) {
      throw bad(
        `'${param}' ${JSON.stringify(asked)} is not offered by '${model.id}'. Durations: ${durations.map((d) => `"${d}"`).join(', ')} (seconds).`,
        param,
      );
    }
  }
  const input: VideoInput = { prompt, durationSeconds: duration, params: {}, media: {} };

  // aspect ratio (or orientation), resolution: checked when the model offers a choice
  const ratios = strings(o.aspect_ratios);
  let ratio = typeof body.aspect_ratio === 'string' ? body.aspect_ratio : undefined;
  if (!ratio && (body.orientation === 'landscape' || body.orientation === 'portrait'))
    ratio = body.orientation === 'landscape' ? '16:9' : '9:16';
  if (ratio !== undefined && ratios.length) {
    if (!ratios.includes(ratio))
      throw bad(
        `'aspect_ratio' "${ratio}" is not offered by '${model.id}'. Aspect ratios: ${ratios.join(', ')}.`,
        'aspect_ratio',
      );
    input.aspectRatio = ratio;
  }
  const resolutions = strings(o.resolutions);
  if (typeof body.resolution === 'string' && resolutions.length) {
    if (!resolutions.includes(body.resolution))
      throw bad(
        `'resolution' "${body.resolution}" is not offered by '${model.id}'. Resolutions: ${resolutions.join(', ')}.`,
        'resolution',
      );
    input.resolution = body.resolution;
  }
  if (body.seed !== undefined && body.seed !== null && body.seed !== '') {
    const seed = Number(body.seed);
    if (!Number.isSafeInteger(seed) || seed < 0) throw bad(`'seed' must be a non-negative whole number.`, 'seed');
    input.seed = seed;
  }

  // optional parameters the model lists; others are ignored like unknown keys
  for (const name of strings(o.params)) {
    const from = PARAMS[name]?.find((f) => body[f] !== undefined && body[f] !== null);
    if (from) input.params[name] = body[from];
  }

  input.media = planMedia(model, body);

  const variants = Math.max(1, Math.floor(numberOption(model, 'variants', 1)));
  const perSecond = route.price.input;
  const maxUsd = perSecond * BigInt(Math.ceil(duration)) * BigInt(variants);
  return {
    model,
    route,
    input,
    durationSeconds: duration,
    variants,
    perSecond,
    maxUsd,
    prechargeLabel: variants > 1 ? `Pre-charged for ${variants} × ${duration} s` : `Pre-charged for ${duration} s`,
    prompt,
    typicalSeconds: numberOption(model, 'typical_seconds', 180),
  };
}

/**
 * Continuing one variant of a finished Midjourney-style job: `extend_seconds` more of it, from
 * the same provider, priced like a new job of that length.
 */
export function planVideoExtension(
  model: ModelInfo,
  route: Route,
  source: { providerRequestId: string },
  index: number,
  prompt: string | null,
): VideoPlan {
  const seconds = numberOption(model, 'extend_seconds', 4);
  const variants = Math.max(1, Math.floor(numberOption(model, 'variants', 1)));
  return {
    model,
    route,
    input: {
      prompt,
      durationSeconds: seconds,
      params: {},
      media: {},
      extend: { providerRequestId: source.providerRequestId, index },
    },
    durationSeconds: seconds,
    variants,
    perSecond: route.price.input,
    maxUsd: route.price.input * BigInt(Math.ceil(seconds)) * BigInt(variants),
    prechargeLabel: `Pre-charged for ${variants} × ${seconds} s`,
    prompt,
    typicalSeconds: numberOption(model, 'typical_seconds', 180),
  };
}

/** The one input of a kind: a URL (http/https) or a data URL within the inline limit. */
function mediaValue(kind: 'image' | 'audio' | 'video', given: string[], body: VideoBody): string {
  // the explicit URL/data fields win over the rest, as the spec says of library attachments
  const order = [`${kind}Url`, `${kind}DataUrl`, kind, ...MEDIA_FIELDS[kind]];
  const field = order.find((f) => given.includes(f))!;
  if (field.endsWith('AttachmentId')) {
    throw bad(
      `'${field}' refers to a media library this gateway does not have; send '${kind}Url' or '${kind}DataUrl' instead.`,
      field,
    );
  }
  let value = body[field];
  if (Array.isArray(value)) {
    if (value.length !== 1) throw bad(`'${field}' must hold exactly one ${kind} for this model.`, field);
    value = value[0];
  }
  if (typeof value !== 'string') throw bad(`'${field}' must be a URL or a data URL.`, field);
  if (value.startsWith('data:')) {
    if (!new RegExp(`^data:${kind}/[\\w.+-]+;base64,`).test(value.slice(0, 100))) {
      throw bad(`'${field}' is not a base64 data URL of ${article(kind)} (data:${kind}/...;base64,...).`, field);
    }
    if (Buffer.byteLength(value) > MAX_INLINE_MEDIA_BYTES) {
      throw new RequestError(
        413,
        'payload_too_large',
        `'${field}' is ${(Buffer.byteLength(value) / 1048576).toFixed(1)} MB; uploads are limited to 4 MB after encoding. Host the file and send its URL as '${kind}Url'.`,
        { param: field },
      );
    }
    return value;
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw bad(`'${field}' is not a valid URL.`, field);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw bad(`'${field}' must be an http(s) URL or a data URL.`, field);
  return url.href;
}

/** The media the caller sent: kinds the model does not take refused, the ones it needs required. */
function planMedia(model: ModelInfo, body: VideoBody): VideoInput['media'] {
  const o = model.options;
  const accepted = strings(o.media);
  const media: VideoInput['media'] = {};
  for (const kind of Object.keys(MEDIA_FIELDS) as Array<keyof typeof MEDIA_FIELDS>) {
    const given = MEDIA_FIELDS[kind].filter((f) => body[f] !== undefined && body[f] !== null && body[f] !== '');
    if (given.length === 0) {
      if (strings(o.media_required).includes(kind)) {
        throw bad(
          `'${model.id}' needs ${article(kind)}: send it as '${kind}Url' (or '${kind}DataUrl', ${MAX_INLINE_MEDIA_BYTES / 1024 / 1024} MB at most).`,
          `${kind}Url`,
          'missing_required_parameter',
        );
      }
      continue;
    }
    if (!accepted.includes(kind)) {
      throw new RequestError(
        400,
        'unsupported_input_modality',
        `'${model.id}' does not take ${kind} input; remove '${given.join("', '")}' or choose a model that accepts ${kind}s.`,
        { param: given[0] },
      );
    }
    media[kind] = mediaValue(kind, given, body);
  }
  return media;
}
