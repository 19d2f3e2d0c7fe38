// JSON request bodies, with the size limit applied after decompression (gzip, deflate, br are
// inflated by the parser) and every parser failure turned into a clear 4xx instead of a 500.
import { bodyParser } from '@koa/bodyparser';
import type { Middleware } from 'koa';
import { ApiError } from '../errors.js';

export function jsonBody(limitBytes: number): Middleware {
  return bodyParser({
    enableTypes: ['json'],
    jsonLimit: limitBytes,
    // curl's -d sends form encoding by default, and some clients send no type at all; a JSON
    // API should still understand them. (The list is merged by index into the parser's own
    // defaults, so it restates the JSON types first.)
    extendTypes: { json: ['application/json', 'application/*+json', 'application/x-www-form-urlencoded', 'text/plain'] },
    detectJSON: (ctx) => !ctx.get('content-type') && Number(ctx.get('content-length') || 0) > 0,
    onError(error) {
      const status = (error as { status?: number }).status ?? 400;
      if (status === 413) {
        throw new ApiError(413, 'request_too_large', `Request body is larger than the limit of ${limitBytes} bytes (measured after decompression).`);
      }
      if (status === 415) {
        throw new ApiError(415, 'unsupported_content_encoding', `Unsupported Content-Encoding; use gzip, deflate, br or none.`);
      }
      throw new ApiError(400, 'invalid_json', `Request body is not valid JSON: ${error.message}`);
    },
  });
}
