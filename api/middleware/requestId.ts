// Every response carries a server-generated X-Request-ID; logs, ledger entries and request
// records use the same id, so one value ties a customer's report to everything we know.
import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';
import type { AppState } from '../state.js';

export const requestId: Middleware<AppState> = async (ctx, next) => {
  // the UUID's hex without its four dashes, cut out rather than replaced with a regex
  const u = randomUUID();
  const id = `req_${u.slice(0, 8)}${u.slice(9, 13)}${u.slice(14, 18)}${u.slice(19, 23)}${u.slice(24)}`;
  ctx.state.requestId = id;
  ctx.set('X-Request-ID', id);
  await next();
};
