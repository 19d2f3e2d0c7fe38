// JSON request bodies, with the size limit applied after decompression (gzip, deflate, br), limits
// on nesting and on the number of values (jsonShape.ts), NUL characters refused (middleware/nul.ts),
// and every failure turned into a clear 4xx instead of a 500.
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
import { exceededLimit, type JsonLimits, tooComplexMessage } from '../jsonShape.js';

declare module 'koa' {
  interface Request {
    /** the parsed JSON body (`{}` when there is none); routes validate it with Ajv before use */
    body?: unknown;
    /** the body's bytes as sent, for a route that declared it wants them (a signed webhook: see rawBody) */
    rawBody?: Buffer;
    /**
     * A large body left unread for its route to read as it arrives (`streamAbove`): its bytes,
     * inflated, within the limit, and the limits on its JSON's shape. `body` is then undefined; the
     * route validates what it reads.
     */
    streamedBody?: { chunks: () => AsyncGenerator<Buffer>; limits: JsonLimits };
  }
}

// DELETE too: the session routes (and the teams API) name what to delete in the body, as the spec's
// teams table does (`DELETE .../members {sessionId}`); a DELETE without a body still parses to `{}`.
const PARSED_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
// JSON, and what clients send JSON as: curl's -d says form encoding, some say text/plain.
const JSON_TYPES = /^\s*(application\/(json|[^\s;]+\+json|x-www-form-urlencoded)|text\/plain)\s*(;|$)/i;
// Only objects and arrays are request bodies (as strict JSON body parsers have it).
const OBJECT_OR_ARRAY = /^[ \t\n\r]*[[{]/;

export interface BodyLimits extends JsonLimits {
  /** largest body, after decompression */
  limitBytes: number;
  /**
   * A route that reads its body as a stream: bodies announced as larger than this, or of unknown
   * size (chunked, compressed), are left for it to read (`ctx.request.streamedBody`); smaller ones are
   * parsed whole, which is faster for them.
   */
  streamAbove?: number;
  /** a streamed body that sends nothing for this many ms is refused (408); read per request */
  streamIdleMs?: () => number;
}

export function jsonBody(limits: BodyLimits): Middleware<AppState> {
  const { limitBytes, streamAbove } = limits;
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
    if (encoding === 'identity' && length > limitBytes) {
      discardRest(ctx.req, limitBytes);
      throw tooLarge();
    }
    if (streamAbove !== undefined && (encoding !== 'identity' || !(length > 0) || length > streamAbove)) {
      let read = false;
      ctx.request.streamedBody = {
        chunks: () => {
          read = true;
          return bodyChunks(ctx.req, encoding, limitBytes, tooLarge, limits.streamIdleMs?.() ?? 30_000);
        },
        limits: { maxDepth: limits.maxDepth, maxValues: limits.maxValues },
      };
      try {
        return await next();
      } finally {
        // refused before its route read it (a bad key): drop it, no more than a limit's worth
        if (!read) discardRest(ctx.req, limitBytes);
      }
    }
    const text = await readBody(ctx.req, encoding, limitBytes, tooLarge);
    if (!text) {
      ctx.request.body = {};
      return next();
    }
    if (!OBJECT_OR_ARRAY.test(text))
      throw new RequestError(400, 'invalid_json', 'Request body is not valid JSON: it must be a JSON object.');
    const exceeded = exceededLimit(text, limits);
    if (exceeded) throw new RequestError(400, 'invalid_json', tooComplexMessage(exceeded, limits));
    let body: unknown;
    try {
      body = bourne.parse(text, { protoAction: 'error' });
    } catch (err) {
      throw new RequestError(400, 'invalid_json', `Request body is not valid JSON: ${(err as Error).message}`);
    }
    refuseUnstorableText(text, body);
    ctx.request.body = body;
    return next();
  };
}

/**
 * The body's bytes exactly as sent, unparsed (`ctx.request.rawBody`), for a route that must check a
 * signature over them before it reads them (a payment processor's webhook). Same size limit; no
 * decompression (a signature is over the bytes sent).
 */
export function rawBody(limitBytes: number): Middleware<AppState> {
  const tooLarge = () =>
    new RequestError(413, 'request_too_large', `Request body is larger than the limit of ${limitBytes} bytes.`);
  return async (ctx, next) => {
    ctx.request.body = {};
    if (!PARSED_METHODS.has(ctx.method)) return next();
    const encoding = (ctx.get('content-encoding') || 'identity').trim().toLowerCase();
    if (encoding !== 'identity')
      throw new RequestError(415, 'unsupported_content_encoding', 'This route takes an uncompressed body.');
    if (Number(ctx.get('content-length') || 0) > limitBytes) {
      discardRest(ctx.req, limitBytes);
      throw tooLarge();
    }
    ctx.request.rawBody = await readBytes(ctx.req, encoding, limitBytes, tooLarge);
    return next();
  };
}

/**
 * Reads what is left of a refused body only to drop it (so the client, still sending, receives the
 * answer rather than a reset) and closes the connection once another `limit` bytes have come: a
 * client may not keep the gateway reading an upload of any size for nothing.
 */
export function discardRest(req: IncomingMessage, limit: number): void {
  let dropped = 0;
  req.on('data', (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped > limit) req.socket.destroy();
  });
  req.resume();
}

/**
 * Refuses a parsed JSON value (from `text`) holding what PostgreSQL cannot store: a NUL, a lone
 * surrogate. `path` names where the value sits in the body (`requests[3]`; '' for the body itself).
 */
export function refuseUnstorableText(text: string, value: unknown, path = ''): void {
  // JSON can only carry a NUL as the escape `\u0000`: without that text, no walk is needed.
  if (text.includes('\\u0000')) refuseNulInJson(value, path);
  // only a \u escape can spell a lone surrogate (raw bytes arrive decoded as UTF-8)
  const where = text.includes('\\u') ? loneSurrogateAt(value, path) : undefined;
  if (where !== undefined) {
    throw new RequestError(
      400,
      'invalid_parameter_value',
      `${where ? `'${where}'` : 'The request body'} contains a lone UTF-16 surrogate (an unpaired \\ud800-\\udfff escape), which is not Unicode text. Send both halves of the pair, or neither.`,
      { param: where || null },
    );
  }
}

// Half of a UTF-16 surrogate pair with no other half. JSON lets an escape spell one (`"\ud800"`), but
// it is no character: UTF-8 cannot encode it and PostgreSQL refuses it in text and JSON, so a request
// carrying one would fail wherever it is stored, after the money was spent. Refused before anything runs.
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Where in `value` a string (or key) holds a lone surrogate: `messages[0].content` ('' for the root), or undefined. */
function loneSurrogateAt(value: unknown, root = ''): string | undefined {
  // a loop, not recursion: the body may nest deeper than the stack
  const stack: Array<[unknown, string]> = [[value, root]];
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
  return readBytes(req, encoding, limit, tooLarge).then((bytes) => bytes.toString('utf8'));
}

/**
 * The body's bytes as they arrive, inflated if need be, with the same refusals as a body read whole
 * (413 past `limit` after inflating, 415, 400 when it breaks off; 408 when it sends nothing for
 * `idleMs`). Read at the consumer's pace: the socket is not read further while a chunk is being
 * handled. A consumer that stops early (a bad row) leaves the rest to be dropped, so the client
 * still receives the answer.
 */
async function* bodyChunks(
  req: IncomingMessage,
  encoding: string,
  limit: number,
  tooLarge: () => RequestError,
  idleMs: number,
): AsyncGenerator<Buffer> {
  const inflate = encoding === 'identity' ? null : decoder(encoding);
  if (encoding !== 'identity' && !inflate)
    throw new RequestError(
      415,
      'unsupported_content_encoding',
      `Unsupported Content-Encoding "${encoding}"; use gzip, deflate, br or none.`,
    );
  const source: Readable = inflate ? req.pipe(inflate) : req;
  // not destroyed on an early return: the rest is drained below rather than the socket reset
  const chunks = source.iterator({ destroyOnReturn: false }) as AsyncIterator<Buffer>;
  let size = 0;
  let whole = false;
  // a client that stops sending holds what its route keeps open for it (a transaction): dropped
  const read = () =>
    new Promise<IteratorResult<Buffer>>((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new RequestError(408, 'request_timeout', `The body sent nothing for ${idleMs / 1000} s and was dropped.`),
          ),
        idleMs,
      );
      chunks.next().then(
        (next) => {
          clearTimeout(timer);
          resolve(next);
        },
        (err) => {
          clearTimeout(timer);
          reject(err);
        },
      );
    });
  try {
    for (let next = await read(); !next.done; next = await read()) {
      size += next.value.length;
      if (size > limit) throw tooLarge();
      yield next.value;
    }
    whole = true;
  } catch (err) {
    if (err instanceof RequestError) throw err;
    throw new RequestError(
      400,
      'invalid_body',
      inflate
        ? `The request body could not be decompressed as ${encoding}: ${(err as Error).message}`
        : 'The request body could not be read.',
    );
  } finally {
    if (!whole) {
      // the iterator lets go of the stream (its 'readable' listener would keep 'data' from flowing);
      // not awaited: after a stall it waits for the read still pending
      chunks.return?.().catch(() => undefined);
      if (inflate) {
        req.unpipe(inflate);
        inflate.destroy();
      }
      discardRest(req, limit);
    }
  }
}

function readBytes(
  req: IncomingMessage,
  encoding: string,
  limit: number,
  tooLarge: () => RequestError,
): Promise<Buffer> {
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
    // Chunks as they came, joined once at the end. (Copying them into one buffer of the announced
    // length instead measured worse: 24 such buffers held through slow uploads raised peak RSS.)
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (err: Error | null, bytes?: Buffer) => {
      if (done) return;
      done = true;
      if (inflate) req.unpipe(inflate);
      if (err) {
        // stop inflating what nobody will use, and read no more than another limit's worth
        inflate?.destroy();
        discardRest(req, limit);
        reject(err);
      } else resolve(bytes!);
    };
    source.on('data', (chunk: Buffer) => {
      if (done) return; // refused: the rest is read only to be dropped
      if (size + chunk.length > limit) return finish(tooLarge());
      chunks.push(chunk);
      size += chunk.length;
    });
    source.once('end', () => finish(null, chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size)));
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
