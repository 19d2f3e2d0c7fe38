// The one place errors become responses. Routes choose their envelope with useEnvelope()
// before anything that can fail (authentication included), so even a 401 speaks the
// caller's dialect.
import type { Middleware } from 'koa';
import { ApiError, asApiError, renderError, type Envelope } from '../errors.js';

export function useEnvelope(envelope: Envelope): Middleware {
  return async (ctx, next) => {
    ctx.state.envelope = envelope;
    await next();
  };
}

export const handleErrors: Middleware = async (ctx, next) => {
  try {
    await next();
    if (ctx.status === 404 && ctx.body === undefined) {
      throw new ApiError(404, 'not_found', `No route for ${ctx.method} ${ctx.path}. See the API reference for the available endpoints.`);
    }
  } catch (raw) {
    const err = asApiError(raw);
    if (err.code === 'internal_error') {
      console.error(`[api] ${ctx.state.requestId ?? '-'} ${ctx.method} ${ctx.path} failed:`, raw);
    }
    // Headers already on the wire (a stream in progress) cannot become an error response.
    if (ctx.headerSent) return;
    ctx.status = err.status;
    for (const [name, value] of Object.entries(err.opts.headers ?? {})) ctx.set(name, value);
    ctx.body = renderError(err, (ctx.state.envelope as Envelope | undefined) ?? 'openai');
  }
};
