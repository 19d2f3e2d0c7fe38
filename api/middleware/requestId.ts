// Every response carries a server-generated X-Request-ID; logs, ledger entries and request
// records use the same id, so one value ties a customer's report to everything we know.
import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';
import type { AppState } from '../state.js';

/** `req_` and a random UUID's hex: also for answers Node's HTTP layer writes (api/clientErrors.ts). */
export function newRequestId(): string {
  // the UUID's hex without its four dashes, cut out rather than replaced with a regex
  const u = randomUUID();
  return `req_${u.slice(0, 8)}${u.slice(9, 13)}${u.slice(14, 18)}${u.slice(19, 23)}${u.slice(24)}`;
}

// Not async, like the other middleware that only look before they pass on: `return next()` hands
// on the rest of the chain's promise instead of making one more of its own and awaiting into it
// (koa-compose turns a throw into a rejection either way).
export const requestId: Middleware<AppState> = (ctx, next) => {
  const id = newRequestId();
  ctx.state.requestId = id;
  ctx.set('X-Request-ID', id);
  return next();
};
