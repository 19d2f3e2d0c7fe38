// `/api/v1thinking/...`: the base path some NanoGPT clients use to turn reasoning on. A request
// there is the same request under `/api/v1/...` (rewritten before routing, so every route, its
// error envelope and its contract are the ones of /api/v1), with reasoning asked for on models
// that can reason, as the `:thinking` suffix asks (api/textRoute.ts); other models answer as usual.
import type { Middleware } from 'koa';
import type { AppState } from '../state.js';

const PREFIX = '/api/v1thinking/';

export const thinkingPath: Middleware<AppState> = (ctx, next) => {
  if (ctx.path.startsWith(PREFIX)) {
    ctx.path = `/api/v1/${ctx.path.slice(PREFIX.length)}`;
    ctx.state.thinkingPath = true;
  }
  return next();
};
