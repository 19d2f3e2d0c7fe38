// Object bodies are written as JSON here rather than by Koa, so numbers come out in plain decimal
// notation (`0.0000009`, not `9e-7`; see activities/json.ts). Runs outside handleErrors so error
// bodies (a 402's `availableBalance`) are written the same way.
import { Stream } from 'node:stream';
import type { Middleware } from 'koa';
import { toJson } from '../../activities/json.js';

export const writeJsonBody: Middleware = async (ctx, next) => {
  await next();
  const body: unknown = ctx.body;
  // What Koa itself would serialize: anything but text, bytes and streams.
  if (
    body === null ||
    typeof body !== 'object' ||
    Buffer.isBuffer(body) ||
    body instanceof Stream ||
    body instanceof Blob ||
    body instanceof ReadableStream ||
    body instanceof Response
  )
    return;
  ctx.body = toJson(body); // the Content-Type stays the JSON one Koa set for the object
};
