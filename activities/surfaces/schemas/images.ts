// The image routes' request bodies (spec "Images"), as Ajv checks them. `model` is not `required`
// here on /api/v1/images: its absence is the image API's own code, `missing_model`. Unknown fields
// are allowed, as on chat: clients send vendor extensions. Reference shapes (URL strings, data
// URLs, `{type:'image_url', image_url:{url}}`) are checked where the references are read, which
// can say which one is wrong.
const shared = {
  prompt: { type: 'string', minLength: 1, maxLength: 32_000 },
  n: { type: 'integer', minimum: 1, maximum: 10 },
  quality: { type: 'string', minLength: 1 },
  output_format: { type: 'string', enum: ['png', 'jpeg', 'jpg', 'webp'] },
  seed: { type: 'integer' },
  user: { type: 'string', maxLength: 256 },
  negative_prompt: { type: 'string', maxLength: 10_000 },
  strength: { type: 'number', minimum: 0, maximum: 1 },
  guidance_scale: { type: 'number', minimum: 0, maximum: 20 },
  num_inference_steps: { type: 'integer', minimum: 1, maximum: 100 },
  imageDataUrl: { type: 'string', minLength: 1 },
  imageDataUrls: { type: 'array', minItems: 1, items: { type: 'string', minLength: 1 } },
  maskDataUrl: { type: 'string', minLength: 1 },
  response_format: { type: 'string', enum: ['b64_json', 'url'] },
} as const;

/** POST /api/v1/images */
export const imagesRequestSchema = {
  type: 'object',
  properties: {
    ...shared,
    model: { type: 'string' },
    nImages: { type: 'integer', minimum: 1, maximum: 10 },
    resolution: { type: 'string', minLength: 1 },
    aspect_ratio: { type: 'string', minLength: 1 },
    // items (URL strings, data URLs, imageUrlObject) are checked by the route: a wrong one is `invalid_input_references`
    input_references: { type: 'array', maxItems: 64 },
    image_url: { type: 'string', minLength: 1 },
    images: { type: 'array', items: { type: 'string', minLength: 1 } },
    stream: { type: 'boolean' },
  },
} as const;

/** POST /v1/images/generations (and the JSON form of /v1/images/edits) */
export const generationsRequestSchema = {
  type: 'object',
  required: ['prompt'],
  properties: {
    ...shared,
    model: { type: 'string', minLength: 1 },
    size: { type: 'string', minLength: 1 },
    kontext_max_mode: { type: 'boolean' },
    // JSON edits: OpenAI's `images` [{image_url}] or plain URLs
    image: {
      anyOf: [
        { type: 'string', minLength: 1 },
        { type: 'array', items: { type: 'string', minLength: 1 } },
      ],
    },
    images: {
      type: 'array',
      items: {
        anyOf: [
          { type: 'string', minLength: 1 },
          { type: 'object', required: ['image_url'], properties: { image_url: { type: 'string', minLength: 1 } } },
        ],
      },
    },
    mask: { type: 'string', minLength: 1 },
  },
} as const;

/** POST /api/generate-image (legacy) */
export const legacyImageRequestSchema = {
  type: 'object',
  required: ['prompt'],
  properties: {
    prompt: shared.prompt,
    model: { type: 'string', minLength: 1 },
    width: { type: 'integer', minimum: 64, maximum: 4096 },
    height: { type: 'integer', minimum: 64, maximum: 4096 },
    resolution: { type: 'string', minLength: 1 },
    negative_prompt: shared.negative_prompt,
    nImages: { type: 'integer', minimum: 1, maximum: 10 },
    num_steps: { type: 'integer', minimum: 1, maximum: 100 },
    sampler_name: { type: 'string' },
    scale: { type: 'number', minimum: 0, maximum: 20 },
    seed: shared.seed,
    imageDataUrl: shared.imageDataUrl,
    kontext_max_mode: { type: 'boolean' },
  },
} as const;
