// POST /api/generate-video, as Ajv checks it: the spec's field table, types and ranges only.
// Unknown keys are allowed (the spec: "unknown keys are ignored"); whether a field suits the
// chosen model (durations, aspect ratios, media inputs) is checked in activities/video/plan.ts.
const str = { type: 'string' } as const;
const strOrNum = { type: ['string', 'number'] } as const;
const bool = { type: 'boolean' } as const;
const num = { type: 'number' } as const;
const strings = { type: 'array', items: { type: 'string' } } as const;

export const videoRequestSchema = {
  type: 'object',
  required: ['model'],
  properties: {
    model: { type: 'string', minLength: 1 },
    prompt: str,
    negative_prompt: str,
    conversationUUID: { type: 'string', maxLength: 200 },
    duration: strOrNum,
    seconds: strOrNum,
    aspect_ratio: str,
    orientation: { enum: ['landscape', 'portrait'] },
    resolution: str,
    size: str,
    mode: { enum: ['text-to-video', 'image-to-video', 'reference-to-video', 'video-edit'] },
    generateAudio: bool,
    enhancePrompt: bool,
    pro_mode: bool,
    pro: bool,
    enable_prompt_expansion: bool,
    enable_safety_checker: bool,
    camera_fix: bool,
    camera_fixed: bool,
    cameraFixed: bool,
    adjust_fps_for_interpolation: bool,
    seed: strOrNum,
    num_frames: num,
    frames_per_second: { type: 'number', minimum: 5, maximum: 24 },
    num_inference_steps: { type: 'number', minimum: 1, maximum: 50 },
    guidance_scale: { type: 'number', minimum: 0, maximum: 20 },
    cfg_scale: num,
    shift: num,
    num_interpolated_frames: num,
    imageDataUrl: str,
    imageUrl: str,
    imageAttachmentId: str,
    image: str,
    reference_image: str,
    referenceImages: strings,
    audioDataUrl: str,
    audioUrl: str,
    audio: str,
    audioDuration: num,
    videoUrl: str,
    videoDataUrl: str,
    videoAttachmentId: str,
    video: str,
    referenceVideos: strings,
    voice_language: { enum: ['en', 'zh'] },
    voice_speed: { type: 'number', minimum: 0.8, maximum: 2 },
  },
} as const;

/** POST /api/generate-video/extend: a Midjourney-style job's variant, continued. */
export const videoExtendSchema = {
  type: 'object',
  properties: {
    runId: { type: 'string', minLength: 1 },
    taskId: { type: 'string', minLength: 1 },
    index: { type: 'integer', minimum: 0, maximum: 3 },
    prompt: str,
  },
  required: ['index'],
} as const;

export const videoCancelSchema = {
  type: 'object',
  required: ['runId'],
  properties: { runId: { type: 'string', minLength: 1 } },
} as const;
