// What every route declares first: which API surface it belongs to. That fixes the error
// envelope (so even a malformed body or a bad key is answered in the caller's dialect); then
// the URL's parameters are checked for what cannot be stored (NUL) and the JSON body is parsed.
import compose from 'koa-compose';
import type { Middleware } from 'koa';
import type { Envelope } from '../../activities/surfaces/errors.js';
import { jsonBody, rawBody } from './body.js';
import { refuseNulInUrl } from './nul.js';
import { config } from '../../activities/config.js';
import { RequestError } from '../../activities/core/errors.js';
import type { AppContext, AppState } from '../state.js';

/** Each route's surface middleware and the envelope it declares (for envelopeOfPath). */
const declared = new WeakMap<Middleware<AppState>, Envelope>();

/**
 * `limits`: a route whose bodies are larger by design (an inline batch's 20 MiB of requests) raises
 * the body limits for itself, never below the configured ones. `jsonOnly`: a POST whose body is not
 * declared JSON (`application/json` or `+json`) is refused with `invalid_content_type`, rather
 * than read as JSON whatever it says it is (the image API's rule). `raw`: the body is not parsed but
 * kept as the bytes sent (`ctx.request.rawBody`, at most `limitBytes`), for a signed webhook.
 * `streamAbove`: a large body is left for the route to read as a stream (middleware/body.ts).
 */
export function surface(
  envelope: Envelope,
  limits: { limitBytes?: number; maxValues?: number; jsonOnly?: boolean; raw?: boolean; streamAbove?: number } = {},
): Middleware<AppState> {
  const middleware = compose<AppContext>([
    (ctx, next) => {
      ctx.state.envelope = envelope;
      return next();
    },
    ...(limits.jsonOnly ? [refuseNonJson] : []),
    refuseNulInUrl,
    limits.raw
      ? rawBody(limits.limitBytes ?? config.bodyLimitBytes)
      : jsonBody({
          limitBytes: Math.max(config.bodyLimitBytes, limits.limitBytes ?? 0),
          maxDepth: config.maxJsonDepth,
          maxValues: Math.max(config.maxJsonValues, limits.maxValues ?? 0),
          streamAbove: limits.streamAbove,
          streamIdleMs: () => config.fileUploadIdleTimeoutMs, // as for uploads: the same reason
        }),
  ]);
  declared.set(middleware, envelope);
  return middleware;
}

const JSON_TYPE = /^\s*application\/([^\s;]+\+)?json\s*(;|$)/i;

async function refuseNonJson(ctx: AppContext, next: () => Promise<unknown>) {
  const type = ctx.get('content-type');
  if (ctx.method === 'POST' && !JSON_TYPE.test(type)) {
    ctx.req.resume(); // the body is not read
    throw new RequestError(
      400,
      'invalid_content_type',
      `This route takes JSON (Content-Type: application/json), not ${type ? `'${type.slice(0, 100)}'` : 'an untyped body'}.`,
    );
  }
  await next();
}

/**
 * The envelope declared by the routes on the requested path, whatever their method: for the
 * router's own 405 and 501, which no route ran for. `ctx.matched` is @koa/router's list of the
 * route layers whose path matched; a layer's `stack` holds the route's middleware as registered.
 */
export function envelopeOfPath(ctx: AppContext): Envelope | undefined {
  const layers = (ctx as { matched?: Array<{ stack: Middleware<AppState>[] }> }).matched ?? [];
  for (const layer of layers) {
    const envelope = layer.stack.length ? declared.get(layer.stack[0]!) : undefined;
    if (envelope) return envelope;
  }
  return undefined;
}

/** The envelope a route's middleware declares, if it is a surface (the fuzz suite reads routes' contracts this way). */
export function declaredEnvelope(middleware: unknown): Envelope | undefined {
  return typeof middleware === 'function' ? declared.get(middleware as Middleware<AppState>) : undefined;
}
