// OpenAI-style image edit forms (multipart/form-data, as `openai.images.edit` sends them): text
// fields (model, prompt, n, size, quality, response_format, user, output_format, ...) and image
// parts `image` (or `image[]`, repeated for several references) and `mask`, read by multipartForm.ts.
import type { IncomingMessage } from 'node:http';
import { readForm } from './multipartForm.js';
import { RequestError } from '../activities/core/errors.js';
import { MAX_UPLOAD_BYTES } from '../activities/images/models.js';

export interface ImageForm {
  fields: Record<string, string>;
  images: Buffer[];
  mask?: Buffer;
}

/** The declared contract of the form, for the router's readers (validate.ts declareMultipart). */
export const imageFormSchema = {
  type: 'object',
  required: ['image', 'prompt'],
  properties: {
    image: { type: 'string', format: 'binary', description: 'the image(s) to edit; also `image[]`' },
    mask: { type: 'string', format: 'binary' },
    prompt: { type: 'string' },
    model: { type: 'string' },
    n: { type: 'string' },
    size: { type: 'string' },
    quality: { type: 'string' },
    response_format: { type: 'string' },
    output_format: { type: 'string' },
    user: { type: 'string' },
  },
} as const;
const FIELDS = new Set(Object.keys(imageFormSchema.properties).filter((k) => k !== 'image' && k !== 'mask'));
const FILE_FIELDS = new Set(['image', 'image[]', 'mask']);
const MAX_IMAGES = 16;

/**
 * The form: every part is at most 4 MB (the spec's upload limit), so at most 17 are held. Several
 * references repeat `image` (or `image[]`); one `mask` at most.
 */
export async function readImageForm(req: IncomingMessage, idleTimeoutMs: number): Promise<ImageForm> {
  const form = await readForm(req, {
    fields: FIELDS,
    fileFields: FILE_FIELDS,
    maxFileBytes: MAX_UPLOAD_BYTES,
    maxFiles: MAX_IMAGES,
    howToSend: "send images as 'image' (or 'image[]') and 'mask'.",
    tooLarge: (name) =>
      `The '${name}' image is larger than 4 MB; send a smaller image, or use the JSON form with an http(s) URL.`,
    paramOf: (name) => (name === 'mask' ? 'mask' : 'image'),
    idleTimeoutMs,
  });
  const masks = form.files.filter((f) => f.name === 'mask');
  if (masks.length > 1) throw new RequestError(400, 'invalid_parameter_value', "Send one 'mask'.", { param: 'mask' });
  return {
    fields: form.fields,
    images: form.files.filter((f) => f.name !== 'mask').map((f) => f.data),
    mask: masks[0]?.data,
  };
}
