// fal.ai's queue API as a video provider (and its image models, images.ts): the protocol-neutral video job (types.ts VideoInput)
// mapped to fal's field names, fal's statuses to the spec's normalized states, fal's results to
// output videos (queue.ts speaks the wire).
import type { Provider, ProviderTarget, VideoAdapter, VideoInput, VideoResult, VideoState } from '../types.js';
import { falImages } from './images.js';
import { falCancel, falResult, falStatus, falSubmit, jobFailure } from './queue.js';

/** fal's statuses, and the bridges' FAILED / CANCELED, as normalized states. */
const STATES: Record<string, VideoState> = {
  IN_QUEUE: 'queued',
  IN_PROGRESS: 'processing',
  COMPLETED: 'completed',
  FAILED: 'failed',
  CANCELED: 'cancelled',
  CANCELLED: 'cancelled',
};

/** fal's input name for each kind of media (one input of each kind). */
const MEDIA_INPUT = { image: 'image_url', audio: 'audio_url', video: 'video_url' } as const;

/**
 * The job as fal's input, and the path it is submitted to. Parameters keep their spec names
 * (fal uses the same ones); route option `duration_suffix: "s"` sends `"8s"` to the models that
 * want it. An extension goes to the model's `/extend` sub-path as `{task_id, index[, prompt]}`
 * (the Midjourney-style bridges).
 */
function falInput(model: string, input: VideoInput, target: ProviderTarget) {
  if (input.extend) {
    return {
      path: `${model}/extend`,
      body: {
        task_id: input.extend.providerRequestId,
        index: input.extend.index,
        ...(input.prompt ? { prompt: input.prompt } : {}),
      },
    };
  }
  const suffix = typeof target.options.duration_suffix === 'string' ? target.options.duration_suffix : '';
  const body: Record<string, unknown> = { prompt: input.prompt, duration: `${input.durationSeconds}${suffix}` };
  if (input.aspectRatio !== undefined) body.aspect_ratio = input.aspectRatio;
  if (input.resolution !== undefined) body.resolution = input.resolution;
  if (input.seed !== undefined) body.seed = input.seed;
  Object.assign(body, input.params);
  for (const kind of ['image', 'audio', 'video'] as const) {
    const media = input.media[kind];
    if (media !== undefined) body[MEDIA_INPUT[kind]] = media;
  }
  return { path: model, body };
}

/** fal's outputs: `{video:{url,content_type,duration}}`, or several as `{videos:[...]}` (Midjourney-style). */
function outputVideos(out: Record<string, unknown>) {
  const list = Array.isArray(out.videos) ? out.videos : out.video ? [out.video] : [];
  return list
    .filter((v): v is Record<string, unknown> => !!v && typeof v === 'object' && typeof v.url === 'string')
    .map((v) => ({
      url: v.url as string,
      contentType: typeof v.content_type === 'string' ? v.content_type : undefined,
      duration: typeof v.duration === 'number' && v.duration > 0 ? v.duration : undefined,
    }));
}

function pick(o: Record<string, unknown>, keys: string[]): Record<string, unknown> | undefined {
  const out = Object.fromEntries(keys.filter((k) => o[k] !== undefined).map((k) => [k, o[k]]));
  return Object.keys(out).length ? out : undefined;
}

const falVideo: VideoAdapter = {
  submit(target, model, input, signal) {
    const { path, body } = falInput(model, input, target);
    return falSubmit(target, path, body, signal);
  },

  async status(target, model, requestId, signal) {
    const reply = await falStatus(target, model, requestId, signal);
    let state = STATES[reply.status.toUpperCase()] ?? 'unknown';
    // fal reports a run that failed as COMPLETED with an error on newer deployments
    if (state === 'completed' && reply.error) state = 'failed';
    return { ...reply, state, label: reply.status };
  },

  async result(target, model, requestId, signal): Promise<VideoResult> {
    const result = await falResult(target, model, requestId, signal);
    if (!result.ok) return result;
    const out = result.output;
    // Some fal pipelines flag instead of refusing: `has_nsfw_concepts: [true]` means the output is
    // blanked or unfit to hand out, so the job fails as NSFW (and is not charged).
    const flags = Array.isArray(out.has_nsfw_concepts) ? out.has_nsfw_concepts : [out.has_nsfw_concepts];
    if (flags.some((f) => f === true)) {
      return {
        ok: false,
        failure: {
          message: `${target.providerId} flagged the output as NSFW (has_nsfw_concepts)`,
          type: 'content_policy_violation',
          nsfw: true,
        },
      };
    }
    return { ok: true, videos: outputVideos(out), details: pick(out, ['seed', 'prompt', 'timings']) };
  },

  cancel: falCancel,
  jobFailure,
};

export const falProvider: Provider = {
  protocol: 'fal',
  video: falVideo,
  images: falImages,
};
