// Multipart bodies for routes that declare a form (validate.ts declareMultipart): fields from the
// form's schema, valid or broken in one place, the file field (`format: binary`) as a file part with
// JSONL-ish, binary or empty content; sometimes cut short, or framed with a boundary the header
// does not name.
import fc from 'fast-check';
import { mutated, valid } from './schemaArbitrary.js';
import { fuzzText } from './values.js';

type Schema = Record<string, any>;

export const BOUNDARY = 'fuzzB0undary';

const fileContent = fc.oneof(
  fc.constant('{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{}}\n'),
  fuzzText({ maxLength: 200 }),
  fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b).toString('latin1')),
  fc.constant(''),
);

function encode(fields: unknown, fileFields: Set<string>, content: string, filename: string): string {
  const entries = fields && typeof fields === 'object' && !Array.isArray(fields) ? Object.entries(fields) : [];
  let out = '';
  for (const [name, value] of entries) {
    const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? '');
    out += `--${BOUNDARY}\r\n`;
    if (fileFields.has(name))
      out += `Content-Disposition: form-data; name="${name}"; filename="${filename}"\r\nContent-Type: application/jsonl\r\n\r\n${content}\r\n`;
    else out += `Content-Disposition: form-data; name="${name.replace(/"/g, '')}"\r\n\r\n${text}\r\n`;
  }
  return `${out}--${BOUNDARY}--\r\n`;
}

/** A multipart body (latin1 bytes) for a form of this schema. */
export function multipartBody(schema: Schema): fc.Arbitrary<Buffer> {
  const fileFields = new Set(
    Object.entries((schema.properties ?? {}) as Record<string, Schema>)
      .filter(([, s]) => s.format === 'binary')
      .map(([k]) => k),
  );
  const fields = fc.oneof({ arbitrary: valid(schema), weight: 4 }, { arbitrary: mutated(schema), weight: 2 });
  return fc
    .record({
      fields,
      content: fileContent,
      filename: fc.oneof(fc.constant('batch.jsonl'), fc.constant('../../etc/passwd'), fuzzText({ maxLength: 40 })),
      cut: fc.oneof({ arbitrary: fc.constant(undefined), weight: 5 }, fc.nat()),
    })
    .map(({ fields: f, content, filename, cut }) => {
      const text = encode(f, fileFields, content, filename.replace(/["\r\n]/g, ''));
      return Buffer.from(cut === undefined ? text : text.slice(0, cut % (text.length + 1)), 'latin1');
    });
}
