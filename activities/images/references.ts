// Reference images (and masks) as the gateway takes them: a data URL (decoded here, at most 4 MB
// as sent) or an http(s) URL (fetched with the SSRF guard, activities/core/safeFetch.ts), then
// checked against the model's constraints from the catalog: how many, which formats (read from
// the bytes, not from what the sender claims), the smallest width and height, the largest size.
// Every refusal is a 400 `invalid_input_references` that says which reference and why; nothing
// is fetched before the count is known to fit.
import { RequestError } from '../core/errors.js';
import { MediaFetchError, safeFetch } from '../core/safeFetch.js';
import type { ImageReference } from '../providers/types.js';
import { type ImageFormat, MAX_UPLOAD_BYTES, type ReferenceConstraints } from './models.js';

export const bad = (message: string, param = 'input_references', code = 'invalid_input_references') =>
  new RequestError(400, code, message, { param });

const MEDIA_TYPES: Record<ImageFormat, string> = {
  png: 'image/png',
  jpeg: 'image/jpeg',
  webp: 'image/webp',
  gif: 'image/gif',
};

/** The format of an image from its first bytes, or undefined when it is none of the four. */
export function sniffFormat(b: Buffer): ImageFormat | undefined {
  if (b.length >= 8 && b.readUInt32BE(0) === 0x89504e47 && b.readUInt32BE(4) === 0x0d0a1a0a) return 'png';
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'jpeg';
  if (b.length >= 12 && b.toString('latin1', 0, 4) === 'RIFF' && b.toString('latin1', 8, 12) === 'WEBP') return 'webp';
  if (b.length >= 6 && /^GIF8[79]a$/.test(b.toString('latin1', 0, 6))) return 'gif';
  return undefined;
}

/** Width and height from the image's header (the first frame of a GIF), or undefined when unreadable. */
function imageSize(b: Buffer, format: ImageFormat): { width: number; height: number } | undefined {
  try {
    if (format === 'png') return { width: b.readUInt32BE(16), height: b.readUInt32BE(20) };
    if (format === 'gif') return { width: b.readUInt16LE(6), height: b.readUInt16LE(8) };
    if (format === 'webp') {
      const chunk = b.toString('latin1', 12, 16);
      if (chunk === 'VP8X') return { width: 1 + b.readUIntLE(24, 3), height: 1 + b.readUIntLE(27, 3) };
      if (chunk === 'VP8L') {
        const bits = b.readUInt32LE(21);
        return { width: 1 + (bits & 0x3fff), height: 1 + ((bits >> 14) & 0x3fff) };
      }
      if (chunk === 'VP8 ') return { width: b.readUInt16LE(26) & 0x3fff, height: b.readUInt16LE(28) & 0x3fff };
      return undefined;
    }
    // JPEG: walk the segments to the first start-of-frame marker
    let i = 2;
    while (i + 9 < b.length) {
      if (b[i] !== 0xff) return undefined;
      const marker = b[i + 1];
      const length = b.readUInt16BE(i + 2);
      if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc)
        return { height: b.readUInt16BE(i + 5), width: b.readUInt16BE(i + 7) };
      i += 2 + length;
    }
  } catch {
    // a header cut short
  }
  return undefined;
}

const DATA_URL = /^data:([^;,]*)(;[^,]*)?,/;

/** A data URL's bytes; the 4 MB upload limit is on the URL as sent. */
function decodeDataUrl(url: string, what: string): Buffer {
  if (url.length > Math.ceil((MAX_UPLOAD_BYTES * 4) / 3) + 256)
    throw bad(`${what} is larger than 4 MB. Send large images by http(s) URL instead.`);
  const m = DATA_URL.exec(url);
  if (!m || !/;base64$/i.test(m[2] ?? ''))
    throw bad(`${what} is a data URL that is not base64 ("data:image/png;base64,...").`);
  const payload = url.slice(m[0].length);
  if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(payload)) throw bad(`${what} is a data URL whose payload is not base64.`);
  return Buffer.from(payload, 'base64');
}

/** One reference's bytes: a data URL decoded, an http(s) URL fetched under the SSRF guard. */
async function load(url: string, what: string, maxBytes: number, signal: AbortSignal): Promise<Buffer> {
  if (url.startsWith('data:')) return decodeDataUrl(url, what);
  if (!/^https?:\/\//i.test(url)) throw bad(`${what} must be an http(s) URL or a base64 data URL.`);
  try {
    return (await safeFetch(url, { signal, maxBytes, errorCode: 'invalid_input_references' })).data;
  } catch (err) {
    if (err instanceof MediaFetchError) {
      if (err.reason !== 'bad_url' && err.reason !== 'too_large')
        console.warn(`[images] reference fetch refused (${err.reason}): ${err.detail ?? err.message}`);
      throw bad(`${what}: ${err.message}`);
    }
    throw err;
  }
}

/** Check one image's bytes against the constraints. */
function check(data: Buffer, what: string, c: ReferenceConstraints): ImageReference {
  const format = sniffFormat(data);
  if (!format || !c.formats.includes(format))
    throw bad(
      `${what} is ${format ? format.toUpperCase() : 'not a PNG, JPEG, WebP or GIF image'}; this model takes ${c.formats.join(', ')}.`,
    );
  if (data.length > c.maxBytes) throw bad(`${what} is ${data.length} bytes; this model takes at most ${c.maxBytes}.`);
  const size = imageSize(data, format);
  if (!size) throw bad(`${what}: its ${format.toUpperCase()} header could not be read.`);
  if (size.width < c.minWidth || size.height < c.minHeight)
    throw bad(`${what} is ${size.width}x${size.height}; this model needs at least ${c.minWidth}x${c.minHeight}.`);
  return { data, mediaType: MEDIA_TYPES[format] };
}

/**
 * The references, fetched and checked, in order. `sources` are URLs (data or http); `uploads`
 * are bytes that came in a multipart form (already limited to 4 MB each).
 */
export async function loadReferences(
  sources: Array<string | Buffer>,
  c: ReferenceConstraints,
  signal: AbortSignal,
  param = 'input_references',
): Promise<ImageReference[]> {
  try {
    return await Promise.all(
      sources.map(async (s, i) => {
        const what = sources.length === 1 && param !== 'input_references' ? param : `${param}[${i}]`;
        const data = typeof s === 'string' ? await load(s, what, c.maxBytes, signal) : s;
        return check(data, what, c);
      }),
    );
  } catch (err) {
    // point the envelope's `param` at the field the caller used
    if (err instanceof RequestError && err.code === 'invalid_input_references') throw bad(err.message, param);
    throw err;
  }
}
