// A whole multipart/form-data body read with busboy, for the routes whose forms are small enough to
// hold (an image edit's 4 MB images, a transcription's 25 MB of audio): the text fields a route
// knows and its file parts. Every way the form can be wrong (not multipart, a bad boundary, cut
// short, stalled, a file where text belongs or the reverse, too many or too large files) becomes a
// 400 (413 for a file over the limit) that says what to send. Unknown text fields are ignored, as
// unknown JSON fields are.
import type { IncomingMessage } from 'node:http';
import busboy from 'busboy';
import { RequestError } from '../activities/core/errors.js';

interface FormFile {
  /** the field's name, e.g. `image[]` */
  name: string;
  data: Buffer;
  filename: string;
  mimeType: string;
}

export interface Form {
  fields: Record<string, string>;
  files: FormFile[];
}

export interface FormRules {
  /** the text fields read; others are ignored */
  fields: ReadonlySet<string>;
  /** the file fields taken */
  fileFields: ReadonlySet<string>;
  maxFileBytes: number;
  maxFiles: number;
  /** what to send instead of `name`, for the messages */
  howToSend: string;
  /** the 413's message for a file over the limit */
  tooLarge(name: string): string;
  /** the `param` an error about a file field names (default: the field itself) */
  paramOf?(name: string): string;
  idleTimeoutMs: number;
}

const bad = (message: string, param: string | null = null, code = 'invalid_parameter_value') =>
  new RequestError(400, code, message, { param });

export function readForm(req: IncomingMessage, rules: FormRules): Promise<Form> {
  const paramOf = rules.paramOf ?? ((n: string) => n);
  return new Promise((resolve, reject) => {
    const fields: Record<string, string> = {};
    const files: FormFile[] = [];
    let settled = false;
    let pending = 0;
    let ended = false;
    const stalled = () => bad('The form stopped arriving midway; send it again.');
    let idle = setTimeout(() => fail(stalled()), rules.idleTimeoutMs);
    const touch = () => {
      clearTimeout(idle);
      idle = setTimeout(() => fail(stalled()), rules.idleTimeoutMs);
    };
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
      resolve({ fields, files });
    };
    let form: busboy.Busboy;
    try {
      form = busboy({
        headers: req.headers,
        defParamCharset: 'utf8',
        limits: {
          fileSize: rules.maxFileBytes + 1,
          files: rules.maxFiles + 1,
          fields: 20,
          fieldSize: 64 * 1024,
          headerPairs: 20,
        },
      });
    } catch (err) {
      clearTimeout(idle);
      return reject(bad(`The multipart body cannot be read: ${(err as Error).message}.`, null, 'invalid_content_type'));
    }
    form.on('field', (name, value, info) => {
      touch();
      if (rules.fileFields.has(name))
        return fail(bad(`'${name}' came as a text field: send it as a file part (with a filename).`, paramOf(name)));
      if (!rules.fields.has(name)) return;
      if (info.valueTruncated) return fail(bad(`The field '${name}' is too long.`, name));
      fields[name] = value;
    });
    form.on('file', (name, stream, info) => {
      touch();
      if (!rules.fileFields.has(name)) {
        stream.resume();
        return fail(bad(`Unexpected file field '${name}': ${rules.howToSend}`, name));
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
        fail(new RequestError(413, 'request_too_large', rules.tooLarge(name), { param: paramOf(name) })),
      );
      stream.on('end', () => {
        pending--;
        if (settled) return;
        if (size === 0) return fail(bad(`The '${name}' file is empty.`, paramOf(name)));
        files.push({ name, data: Buffer.concat(chunks), filename: info.filename ?? '', mimeType: info.mimeType });
        finish();
      });
    });
    form.on('filesLimit', () => fail(bad(`At most ${rules.maxFiles} files in this form.`, null)));
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
