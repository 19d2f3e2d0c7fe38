// What every route declares first: which API surface it belongs to. That fixes the error
// envelope (so even a malformed body or a bad key is answered in the caller's dialect) and
// then parses the JSON body.
import compose from 'koa-compose';
import type { Middleware } from 'koa';
import type { Envelope } from '../errors.js';
import { useEnvelope } from './errors.js';
import { jsonBody } from './body.js';
import { config } from '../../activities/config.js';
import type { AppState } from '../state.js';

// Which envelope each surface middleware sets, so a route's contract can be read off the router.
const declared = new WeakMap<object, Envelope>();

/** The envelope a route's middleware declares, if it is a surface. */
export function declaredEnvelope(middleware: unknown): Envelope | undefined {
  return typeof middleware === 'function' ? declared.get(middleware) : undefined;
}

export function surface(envelope: Envelope): Middleware<AppState> {
  const middleware = compose([useEnvelope(envelope), jsonBody(config.bodyLimitBytes)]);
  declared.set(middleware, envelope);
  return middleware;
}
