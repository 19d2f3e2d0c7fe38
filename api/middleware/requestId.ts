// Every response carries a server-generated X-Request-ID; logs, ledger entries and request
// records use the same id, so one value ties a customer's report to everything we know.
import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';
import type { AppState } from '../state.js';

export const requestId: Middleware<AppState> = async (ctx, next) => {
  const id = `req_${randomUUID().replace(/-/g, '')}`;
  ctx.state.requestId = id;
  ctx.set('X-Request-ID', id);
  await next();
};
