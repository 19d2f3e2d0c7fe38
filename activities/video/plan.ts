// A video request checked against what its model accepts (the model's catalog options), before
// anything is reserved: duration, aspect ratio, resolution, media inputs and their size, the
// prompt. The result is the upstream's input (fal field names) and what the job costs at most.
// Unknown keys are ignored, as the spec says; a media field the model does not take is refused
// with a message naming it, because silently dropping an image would produce the wrong video.
import type { ModelInfo, Route } from '../catalog/catalog.js';
import { RequestError } from '../core/errors.js';

/** Media fields of the spec, by the kind of input they carry. */
export const MEDIA_FIELDS: Record<'image' | 'audio' | 'video', string[]> = {
  image: ['imageDataUrl', 'imageUrl', 'imageAttachmentId', 'image', 'reference_image', 'referenceImages'],
  audio: ['audioDataUrl', 'audioUrl', 'audio'],
  video: ['videoUrl', 'videoDataUrl', 'videoAttachmentId', 'video', 'referenceVideos'],
};

/** fal's input name for each kind (one input of each kind: the explicit field wins). */
const FAL_MEDIA_INPUT = { image: 'image_url', audio: 'audio_url', video: 'video_url' } as const;

/** Optional spec parameters a model may list under `params`, and the fal input each becomes. */
const PARAMS: Record<string, { fal: string; from: string[] }> = {
  negative_prompt: { fal: 'negative_prompt', from: ['negative_prompt'] },
  cfg_scale: { fal: 'cfg_scale', from: ['cfg_scale'] },
  guidance_scale: { fal: 'guidance_scale', from: ['guidance_scale'] },
  num_inference_steps: { fal: 'num_inference_steps', from: ['num_inference_steps'] },
  num_frames: { fal: 'num_frames', from: ['num_frames'] },
  frames_per_second: { fal: 'frames_per_second', from: ['frames_per_second'] },
  shift: { fal: 'shift', from: ['shift'] },
  generate_audio: { fal: 'generate_audio', from: ['generateAudio'] },
  enhance_prompt: { fal: 'enhance_prompt', from: ['enhancePrompt'] },
  enable_prompt_expansion: { fal: 'enable_prompt_expansion', from: ['enable_prompt_expansion'] },
  enable_safety_checker: { fal: 'enable_safety_checker', from: ['enable_safety_checker'] },
  camera_fixed: { fal: 'camera_fixed', from: ['camera_fixed', 'cameraFixed', 'camera_fix'] },
  motion: { fal: 'motion', from: ['motion', 'movementAmplitude'] },
};

/** Uploads inline in the request body (data URLs): 4 MB after encoding, larger assets by URL. */
export const MAX_INLINE_MEDIA_BYTES = 4 * 1024 * 1024;

export type VideoBody = Record<string, unknown> & { model: string };

export interface VideoPlan {
  model: ModelInfo;
  route: Route;
  /** the upstream model path jobs are submitted to (the route's, or its `/extend` sub-path) */
  submitPath: string;
  input: Record<string, unknown>;
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
  const input: Record<string, unknown> = {};

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
  input.prompt = prompt;

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
  const suffix = typeof route.options.duration_suffix === 'string' ? route.options.duration_suffix : '';
  input.duration = `${duration}${suffix}`;

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
    input.aspect_ratio = ratio;
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
    const spec = PARAMS[name];
    const from = spec?.from.find((f) => body[f] !== undefined && body[f] !== null);
    if (spec && from) input[spec.fal] = body[from];
  }

  // media: refuse kinds the model does not take, require the ones it needs
  const accepted = strings(o.media);
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
    input[FAL_MEDIA_INPUT[kind]] = mediaValue(kind, given, body);
  }

  const variants = Math.max(1, Math.floor(numberOption(model, 'variants', 1)));
  const perSecond = route.price.input;
  const maxUsd = perSecond * BigInt(Math.ceil(duration)) * BigInt(variants);
  return {
    model,
    route,
    submitPath: route.upstreamModel,
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
