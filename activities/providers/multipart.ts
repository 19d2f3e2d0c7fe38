// A multipart/form-data body (RFC 7578) of text fields and file parts, for the upstream routes that
// take forms (OpenAI's image edits and audio transcriptions). Built whole: the parts are at most a
// few MB each and already in memory.
import { randomBytes } from 'node:crypto';

export interface FilePart {
  name: string;
  filename: string;
  data: Buffer;
  mediaType: string;
}

export function multipart(
  text: Record<string, string | number>,
  files: FilePart[],
): { body: Buffer; contentType: string } {
  const boundary = `----switchyard${randomBytes(12).toString('hex')}`;
  const parts: Buffer[] = [];
  for (const [name, value] of Object.entries(text)) {
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`));
  }
  for (const f of files) {
    parts.push(
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="${f.name}"; filename="${f.filename}"\r\n` +
          `Content-Type: ${f.mediaType}\r\n\r\n`,
      ),
      f.data,
      Buffer.from('\r\n'),
    );
  }
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(parts), contentType: `multipart/form-data; boundary=${boundary}` };
}
