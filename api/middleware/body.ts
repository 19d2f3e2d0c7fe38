// JSON request bodies, with the size limit applied after decompression (gzip, deflate, br), a
// nesting limit, NUL characters refused (middleware/nul.ts), and every failure turned into a
// clear 4xx instead of a 500.
//
// Hand-written rather than a generic body parser because it sits on every request's critical
// path: one content-type test, the raw bytes collected as they arrive (through a decompressor
// only when the request is compressed), one parse. Measured against @koa/bodyparser on the
// chat benchmark it takes about a third of the time (README, Benchmarks).
import type { IncomingMessage } from 'node:http';
import type { Readable, Transform } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import bourne from '@hapi/bourne';
import type { Middleware } from 'koa';
import { RequestError } from '../../activities/core/errors.js';
import type { AppState } from '../state.js';
import { refuseNulInJson } from './nul.js';

declare module 'koa' {
  interface Request {
    /** the parsed JSON body (`{}` when there is none); routes validate it with Ajv before use */
    body?: unknown;
  }
}

const PARSED_METHODS = new Set(['POST', 'PUT', 'PATCH']);
// JSON, and what clients send JSON as: curl's -d says form encoding, some say text/plain.
const JSON_TYPES = /^\s*(application\/(json|[^\s;]+\+json|x-www-form-urlencoded)|text\/plain)\s*(;|$)/i;
// Only objects and arrays are request bodies (as strict JSON body parsers have it).
const OBJECT_OR_ARRAY = /^[ \t\n\r]*[[{]/;

export interface BodyLimits {
  /** largest body, after decompression */
  limitBytes: number;
  /** deepest nesting of arrays and objects (`{}` is 1) */
  maxDepth: number;
}

export function jsonBody({ limitBytes, maxDepth }: BodyLimits): Middleware<AppState> {
  const tooLarge = () =>
    new RequestError(
      413,
      'request_too_large',
      `Request body is larger than the limit of ${limitBytes} bytes (measured after decompression).`,
    );
  return async (ctx, next) => {
    if (!PARSED_METHODS.has(ctx.method)) return next();
    const type = ctx.get('content-type');
    const length = Number(ctx.get('content-length') || 0);
    // no content type: JSON if there is a body at all
    if (type ? !JSON_TYPES.test(type) : !(length > 0)) {
      ctx.request.body = {};
      return next();
    }
    const encoding = (ctx.get('content-encoding') || 'identity').trim().toLowerCase();
    if (encoding === 'identity' && length > limitBytes) throw tooLarge();
    const text = await readBody(ctx.req, encoding, limitBytes, tooLarge);
    if (!text) {
      ctx.request.body = {};
      return next();
    }
    if (!OBJECT_OR_ARRAY.test(text))
      throw new RequestError(400, 'invalid_json', 'Request body is not valid JSON: it must be a JSON object.');
    // Before parsing: the parser itself is iterative, but much that reads a body afterwards (Ajv,
    // translation, pricing, JSON.stringify) recurses, and a deep enough body would overflow it.
    if (nestingExceeds(text, maxDepth))
      throw new RequestError(
        400,
        'invalid_json',
        `Request body is nested more than ${maxDepth} levels deep (arrays and objects); flatten it.`,
      );
    let body: unknown;
    try {
      body = bourne.parse(text, { protoAction: 'error' });
    } catch (err) {
      throw new RequestError(400, 'invalid_json', `Request body is not valid JSON: ${(err as Error).message}`);
    }
    // JSON can only carry a NUL as the escape `\u0000`: without that text, no walk is needed.
    if (text.includes('\\u0000')) refuseNulInJson(body);
    // only a \u escape can spell a lone surrogate (raw bytes arrive decoded as UTF-8)
    const where = text.includes('\\u') ? loneSurrogateAt(body) : undefined;
    if (where !== undefined) {
      throw new RequestError(
        400,
        'invalid_parameter_value',
        `${where ? `'${where}'` : 'The request body'} contains a lone UTF-16 surrogate (an unpaired \\ud800-\\udfff escape), which is not Unicode text. Send both halves of the pair, or neither.`,
        { param: where || null },
      );
    }
    ctx.request.body = body;
    return next();
  };
}

/**
 * Whether arrays and objects nest deeper than `max` in JSON text, counted without recursion (and
 * so on any depth) and without looking inside strings, which are skipped a whole string at a time.
 * Malformed text may be miscounted; the parser refuses it anyway.
 */
function nestingExceeds(text: string, max: number): boolean {
  if (fewBrackets(text, max)) return false;
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      i = closingQuote(text, i);
      if (i < 0) return false;
    } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (++depth > max) return true;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) depth--;
  }
  return false;
}

/**
 * At most `max` opening brackets in all: no nesting can exceed it. Most bodies pass this
 * native-speed test (an order of magnitude cheaper than the character scan) and go no further.
 */
function fewBrackets(text: string, max: number): boolean {
  let n = 0;
  for (let i = text.indexOf('{'); i !== -1; i = text.indexOf('{', i + 1)) if (++n > max) return false;
  for (let i = text.indexOf('['); i !== -1; i = text.indexOf('[', i + 1)) if (++n > max) return false;
  return true;
}

/** The index of the quote that closes the string opened at `open`, or -1. */
function closingQuote(text: string, open: number): number {
  let q = text.indexOf('"', open + 1);
  while (q > 0) {
    let backslashes = 0;
    while (text.charCodeAt(q - 1 - backslashes) === 0x5c) backslashes++;
    if (backslashes % 2 === 0) return q;
    q = text.indexOf('"', q + 1);
  }
  return -1;
}

// Half of a UTF-16 surrogate pair with no other half. JSON lets an escape spell one (`"\ud800"`), but
// it is no character: UTF-8 cannot encode it and PostgreSQL refuses it in text and JSON, so a request
// carrying one would fail wherever it is stored, after the money was spent. Refused before anything runs.
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Where in `value` a string (or key) holds a lone surrogate: `messages[0].content` ('' for the root), or undefined. */
function loneSurrogateAt(value: unknown): string | undefined {
  // a loop, not recursion: the body may nest deeper than the stack
  const stack: Array<[unknown, string]> = [[value, '']];
  while (stack.length) {
    const [v, path] = stack.pop()!;
    if (typeof v === 'string') {
      if (LONE_SURROGATE.test(v)) return path;
    } else if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) stack.push([v[i], `${path}[${i}]`]);
    } else if (v !== null && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) {
        const at = path ? `${path}.${k}` : k;
        if (LONE_SURROGATE.test(k)) return at;
        stack.push([x, at]);
      }
    }
  }
  return undefined;
}

function decoder(encoding: string): Transform | null {
  switch (encoding) {
    case 'gzip':
    case 'x-gzip':
      return createGunzip();
    case 'deflate':
      return createInflate();
    case 'br':
      return createBrotliDecompress();
    default:
      return null;
  }
}

/** The body as text, inflated if need be; rejects past `limit` bytes (after inflating). */
function readBody(
  req: IncomingMessage,
  encoding: string,
  limit: number,
  tooLarge: () => RequestError,
): Promise<string> {
  let source: Readable = req;
  let inflate: Transform | null = null;
  if (encoding !== 'identity') {
    inflate = decoder(encoding);
    if (!inflate) {
      return Promise.reject(
        new RequestError(
          415,
          'unsupported_content_encoding',
          `Unsupported Content-Encoding "${encoding}"; use gzip, deflate, br or none.`,
        ),
      );
    }
    source = req.pipe(inflate);
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (err: Error | null, text?: string) => {
      if (done) return;
      done = true;
      if (inflate) req.unpipe(inflate);
      if (err) {
        // stop reading (and inflating) what nobody will use; the connection closes after the answer
        inflate?.destroy();
        req.resume();
        reject(err);
      } else resolve(text!);
    };
    source.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) return finish(tooLarge());
      chunks.push(chunk);
    });
    source.once('end', () =>
      finish(null, chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8')),
    );
    source.once('error', (err) =>
      finish(
        source === req
          ? new RequestError(400, 'invalid_body', 'The request body could not be read.')
          : new RequestError(
              400,
              'invalid_body',
              `The request body could not be decompressed as ${encoding}: ${err.message}`,
            ),
      ),
    );
    req.once('aborted', () => finish(new RequestError(400, 'invalid_body', 'The request body ended early.')));
  });
}
