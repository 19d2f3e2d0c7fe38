// An AbortSignal that fires when the caller disconnects before we answered, so a non-streaming
// upstream call stops instead of running (and costing) for nobody.
import type { Context } from 'koa';

export function clientAbortSignal(ctx: Context): AbortSignal {
  const controller = new AbortController();
  ctx.res.once('close', () => {
    if (!ctx.res.writableFinished) controller.abort(new Error('client disconnected'));
  });
  return controller.signal;
}
