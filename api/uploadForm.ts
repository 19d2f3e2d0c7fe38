// The Files API's upload form (multipart/form-data: `purpose` and `file`), read with busboy as it
// arrives: the file part is handed on as a stream the moment its headers are read, so the bytes go
// to the database piece by piece and the API never holds a whole file.
//
// Field order: the official openai SDK sends the fields in the order of the object the caller wrote,
// and `files.create({ file, purpose })` puts `file` first. So `purpose` may come after the file;
// whether it was right is known only at the end of the form (`done`), which the store awaits before
// it commits (StoreFileInput.beforeCommit). A wrong `purpose` that comes first stops the upload at once.
//
// Every way the form can be wrong (not multipart, a bad boundary, truncated, a second file, an
// unknown or repeated field, a file too large, a client that goes away) fails the file stream and
// `done` with a RequestError whose message says what to send instead.
import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import busboy from 'busboy';
import { RequestError } from '../activities/core/errors.js';

interface UploadedPart {
  stream: Readable;
  filename: string;
}

export interface UploadForm {
  /** the `file` part, as soon as its headers have arrived */
  file: Promise<UploadedPart>;
  /** the form has been read to its end, with every field valid; resolves to `purpose` */
  done: Promise<string>;
  /** the first failure, if any (a mid-file failure also errors the part's stream) */
  failure(): RequestError | undefined;
  /** stop reading the form (the upload failed elsewhere): the rest of the body is the caller's to drop */
  abandon(): void;
}

/**
 * The form's fields: `purpose` (only `batch` is uploaded; outputs are written by batches) and `file`.
 * Declared on the route (validate.ts declareMultipart) and the source of the checks below.
 */
export const uploadFormSchema = {
  type: 'object',
  required: ['purpose', 'file'],
  additionalProperties: false,
  properties: {
    purpose: { enum: ['batch'] },
    file: { type: 'string', format: 'binary', description: 'the JSONL file' },
  },
} as const;
const PURPOSES: readonly string[] = uploadFormSchema.properties.purpose.enum;
const HOW = "Send multipart/form-data with the fields 'purpose' (= batch) and 'file' (the JSONL file).";

const bad = (message: string, param: string | null = null, code = 'invalid_parameter_value') =>
  new RequestError(400, code, message, { param });

/** A file name as stored: no directories, no control characters, at most 255 characters. */
function cleanFilename(raw: string | undefined): string {
  const base = (raw ?? '').split(/[/\\]/).pop() ?? '';
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is removed
  const clean = Array.from(base.replace(/[\u0000-\u001f\u007f]/g, '').trim())
    .slice(0, 255)
    .join('');
  return clean || 'upload.jsonl';
}

/** A promise with its resolve and reject at hand (Promise.withResolvers, which Node 20 lacks). */
function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (err: RequestError) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** The form's reader, or why the body cannot be one (not multipart, no usable boundary). */
function openForm(req: IncomingMessage, maxFileBytes: number): busboy.Busboy | RequestError {
  const type = req.headers['content-type'] ?? '';
  if (!/^multipart\/form-data\s*;/i.test(type))
    return bad(
      `Expected a multipart/form-data body, got ${type ? `'${type}'` : 'none'}. ${HOW}`,
      null,
      'invalid_content_type',
    );
  try {
    return busboy({
      headers: req.headers,
      defParamCharset: 'utf8',
      // busboy stops AT its limit: one byte more tells a file of exactly maxFileBytes from a larger one
      limits: { fileSize: maxFileBytes + 1, files: 1, fields: 4, fieldSize: 1024, parts: 6, headerPairs: 20 },
    });
  } catch (err) {
    // busboy refuses a content type without a usable boundary at once
    return bad(`The multipart body cannot be read: ${(err as Error).message}. ${HOW}`, null, 'invalid_content_type');
  }
}

/** What is wrong with a text field of the form, if anything: `purpose`, once, is the only one. */
function fieldProblem(name: string, value: string, truncated: boolean, purposeSeen: boolean): RequestError | undefined {
  if (name === 'file') return bad("'file' came as a text field: send it as a file part (with a filename).", 'file');
  if (name !== 'purpose') return bad(`Unrecognized form field '${name}'. ${HOW}`, name);
  if (purposeSeen) return bad("The field 'purpose' was sent twice; send it once.", 'purpose');
  if (truncated) return bad("The field 'purpose' is too long.", 'purpose');
  if (!PURPOSES.includes(value))
    return bad(
      `Invalid 'purpose': '${value.slice(0, 40)}'. Files are uploaded here for batches: purpose=batch.`,
      'purpose',
    );
  return undefined;
}

export function readUploadForm(req: IncomingMessage, maxFileBytes: number, idleTimeoutMs: number): UploadForm {
  let failed: RequestError | undefined;
  let part: UploadedPart | undefined;
  let purpose: string | undefined;
  let finished = false;
  const { promise: file, resolve: resolveFile, reject: rejectFile } = deferred<UploadedPart>();
  const { promise: done, resolve: resolveDone, reject: rejectDone } = deferred<string>();
  // whoever does not await one of them must not crash the process with an unhandled rejection
  file.catch(() => undefined);
  done.catch(() => undefined);

  const abandon = () => {
    req.unpipe();
    part?.stream.resume();
  };
  const fail = (err: RequestError) => {
    if (failed || finished) return;
    failed = err;
    req.unpipe();
    part?.stream.destroy(err);
    rejectFile(err);
    rejectDone(err);
  };

  const form = openForm(req, maxFileBytes);
  if (form instanceof RequestError) {
    fail(form);
    return { file, done, failure: () => failed, abandon };
  }

  form.on('field', (name, value, info) => {
    const problem = fieldProblem(name, value, info.valueTruncated, purpose !== undefined);
    if (problem) return fail(problem);
    purpose = value;
  });
  form.on('file', (name, stream, info) => {
    if (name !== 'file') {
      stream.resume();
      return fail(bad(`Unexpected file field '${name}': the file goes in the field 'file'. ${HOW}`, name));
    }
    stream.on('limit', () =>
      fail(
        new RequestError(413, 'file_too_large', `The file is larger than the upload limit of ${maxFileBytes} bytes.`, {
          param: 'file',
        }),
      ),
    );
    // whoever reads the stream sees its failure; once read to its end, a failure of the form after it
    // (a bad field) destroys it with nobody listening, which must not be an uncaught error
    stream.on('error', () => undefined);
    part = { stream, filename: cleanFilename(info.filename) };
    resolveFile(part);
  });
  form.on('filesLimit', () => fail(bad(`Send one file per upload, in the field 'file'.`, 'file')));
  form.on('fieldsLimit', () => fail(bad(`Too many form fields. ${HOW}`)));
  form.on('partsLimit', () => fail(bad(`Too many form parts. ${HOW}`)));
  form.on('error', (err: Error) => fail(bad(`The multipart body is malformed: ${err.message}. ${HOW}`)));
  form.on('close', () => {
    if (failed) return;
    if (!part) return fail(bad(`Missing the 'file' field. ${HOW}`, 'file', 'missing_required_parameter'));
    if (purpose === undefined)
      return fail(bad(`Missing the 'purpose' field. ${HOW}`, 'purpose', 'missing_required_parameter'));
    finished = true;
    resolveDone(purpose);
  });
  // a client that goes away mid-upload: the request never completes
  req.on('close', () => {
    clearTimeout(idle);
    if (!req.complete) fail(new RequestError(400, 'upload_aborted', 'The upload was interrupted before it ended.'));
  });
  // a client that stops sending: its upload holds a connection and an open transaction, so it is dropped
  const stalled = () =>
    fail(
      new RequestError(
        408,
        'upload_timeout',
        `The upload sent nothing for ${idleTimeoutMs / 1000} s and was dropped; send the file again.`,
      ),
    );
  const idle = setTimeout(stalled, idleTimeoutMs);
  req.on('data', () => idle.refresh());
  req.on('end', () => clearTimeout(idle));
  req.pipe(form);
  return { file, done, failure: () => failed, abandon };
}
