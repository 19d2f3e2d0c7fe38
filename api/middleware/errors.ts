// The one place errors become responses. Routes choose their envelope first (middleware/surface.ts),
// before anything that can fail (authentication included), so even a 401 speaks the caller's
// dialect; the router's own 405 and 501 take the envelope of the routes on the path asked for.
import type { Middleware } from 'koa';
import { asRequestError, errorHeaders, renderError } from '../../activities/surfaces/errors.js';
import { RequestError } from '../../activities/core/errors.js';
import type { AppState } from '../state.js';
import { envelopeOfPath } from './surface.js';

/** The router's bare statuses (no route; a route without this method, its Allow header already set) as errors. */
function unanswered(status: number, method: string, path: string): void {
  if (status === 404)
    throw new RequestError(
      404,
      'not_found',
      `No route for ${method} ${path}. See the API reference for the available endpoints.`,
    );
  if (status === 405)
    throw new RequestError(
      405,
      'method_not_allowed',
      `${path} does not accept ${method}; the Allow header lists the methods it does.`,
    );
  if (status === 501) throw new RequestError(501, 'not_implemented', `The HTTP method ${method} is not supported.`);
}

export const handleErrors: Middleware<AppState> = async (ctx, next) => {
  try {
    await next();
    if (ctx.body === undefined) unanswered(ctx.status, ctx.method, ctx.path);
  } catch (raw) {
    const err = asRequestError(raw);
    // what the gateway did not expect (a 500, or the database failing it: a 503) is the operator's to see
    if (!(raw instanceof RequestError)) {
      console.error(`[api] ${ctx.state.requestId ?? '-'} ${ctx.method} ${ctx.path} failed:`, raw);
    }
    // Headers already on the wire (a stream in progress) cannot become an error response.
    if (ctx.headerSent) return;
    ctx.status = err.status;
    for (const [name, value] of Object.entries(errorHeaders(err))) ctx.set(name, value);
    ctx.body = {
      ...renderError(err, ctx.state.envelope ?? envelopeOfPath(ctx) ?? 'openai'),
      ...err.opts.topLevel,
    };
  }
};
