// OpenAI-style image edit forms (multipart/form-data, as `openai.images.edit` sends them): text
// fields (model, prompt, n, size, quality, response_format, user, output_format, ...) and image
// parts `image` (or `image[]`, repeated for several references) and `mask`. Read whole with busboy
// (every part is at most 4 MB, the spec's upload limit, so at most 17 of them are held), and every
// way the form can be wrong becomes a 400 (413 for an image over the limit) that says what to send.
import type { IncomingMessage } from 'node:http';
import busboy from 'busboy';
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
const MAX_IMAGES = 16;

const bad = (message: string, param: string | null = null, code = 'invalid_parameter_value') =>
  new RequestError(400, code, message, { param });

export function readImageForm(req: IncomingMessage, idleTimeoutMs: number): Promise<ImageForm> {
  return new Promise((resolve, reject) => {
    const fields: Record<string, string> = {};
    const images: Buffer[] = [];
    let mask: Buffer | undefined;
    let settled = false;
    let pending = 0;
    let ended = false;
    const fail = (err: RequestError) => {
      if (settled) return;
      settled = true;
      clearTimeout(idle);
      req.unpipe();
      req.resume(); // drop the rest of the body
      reject(err);
    };
    const finish = () => {
      if (settled || !ended || pending > 0) return;
      settled = true;
      clearTimeout(idle);
      resolve({ fields, images, mask });
    };
    let idle = setTimeout(() => fail(bad('The form stopped arriving midway; send it again.')), idleTimeoutMs);
    const touch = () => {
      clearTimeout(idle);
      idle = setTimeout(() => fail(bad('The form stopped arriving midway; send it again.')), idleTimeoutMs);
    };
    let form: busboy.Busboy;
    try {
      form = busboy({
        headers: req.headers,
        defParamCharset: 'utf8',
        limits: {
          fileSize: MAX_UPLOAD_BYTES + 1,
          files: MAX_IMAGES + 1,
          fields: 20,
          fieldSize: 64 * 1024,
          headerPairs: 20,
        },
      });
    } catch (err) {
      return fail(bad(`The multipart body cannot be read: ${(err as Error).message}.`, null, 'invalid_content_type'));
    }
    form.on('field', (name, value, info) => {
      touch();
      if (name === 'image' || name === 'image[]' || name === 'mask')
        return fail(bad(`'${name}' came as a text field: send the image as a file part (with a filename).`, name));
      if (!FIELDS.has(name)) return; // unknown fields are ignored, as on the JSON routes
      if (info.valueTruncated) return fail(bad(`The field '${name}' is too long.`, name));
      fields[name] = value;
    });
    form.on('file', (name, stream) => {
      touch();
      if (name !== 'image' && name !== 'image[]' && name !== 'mask') {
        stream.resume();
        return fail(bad(`Unexpected file field '${name}': send images as 'image' (or 'image[]') and 'mask'.`, name));
      }
      pending++;
      // a form that ends midway errors the part's stream too ("Unexpected end of form")
      stream.on('error', (err) => fail(bad(`The multipart body cannot be read: ${err.message}.`)));
      const chunks: Buffer[] = [];
      let size = 0;
      stream.on('data', (c: Buffer) => {
        touch();
        size += c.length;
        chunks.push(c);
      });
      stream.on('limit', () =>
        fail(
          new RequestError(
            413,
            'request_too_large',
            `The '${name}' image is larger than 4 MB; send a smaller image, or use the JSON form with an http(s) URL.`,
            { param: name === 'mask' ? 'mask' : 'image' },
          ),
        ),
      );
      stream.on('end', () => {
        pending--;
        if (settled) return;
        if (size === 0) return fail(bad(`The '${name}' image is empty.`, name === 'mask' ? 'mask' : 'image'));
        const data = Buffer.concat(chunks);
        if (name === 'mask') {
          if (mask) return fail(bad("Send one 'mask'.", 'mask'));
          mask = data;
        } else images.push(data);
        finish();
      });
    });
    form.on('filesLimit', () => fail(bad(`At most ${MAX_IMAGES} images per edit.`, 'image')));
    form.on('fieldsLimit', () => fail(bad('The form has too many fields.')));
    form.on('error', (err) => fail(bad(`The multipart body cannot be read: ${(err as Error).message}.`)));
    form.on('close', () => {
      ended = true;
      finish();
    });
    req.on('aborted', () => fail(new RequestError(499, 'client_closed', 'The client went away.')));
    req.pipe(form);
  });
}
