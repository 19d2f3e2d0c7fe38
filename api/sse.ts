// Server-Sent Events to the caller, written straight to the socket (ctx.respond = false) so the
// route can await its whole stream, keep errors in scope, and respect backpressure. Disconnects
// are noticed on the response's 'close' (the request's fires as soon as its body is read).
import type { Context } from 'koa';
import { plainDecimals, toJson } from '../activities/json.js';

export class SseWriter {
  private ended = false;
  private gone = false;
  /** frames of this turn of the event loop, not yet written */
  private pending = '';
  /** while the socket is full: settles once it can take more (or the caller is gone) */
  private full: Promise<void> | undefined;

  /** A caller who disconnects before the end aborts the upstream call through clientAbortSignal (clientAbort.ts). */
  constructor(private readonly ctx: Context) {
    ctx.respond = false;
    const socket = ctx.req.socket;
    socket.setTimeout(0);
    socket.setNoDelay(true);
    ctx.res.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-cache, no-transform',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
    });
    ctx.res.on('close', () => {
      if (this.ended) return;
      this.gone = true;
    });
  }

  /** The caller went away before the end. */
  get closed(): boolean {
    return this.gone;
  }

  /**
   * One `data:` frame (objects as JSON). Returns a promise only when the socket is full (it
   * resolves once the socket can take more); nothing to wait for otherwise, so the common case
   * costs no promise.
   */
  data(payload: unknown, event?: string): Promise<void> | undefined {
    if (this.gone) return undefined;
    // plain decimals (`0.0000009`, not `9e-7`) in frames the gateway wrote and relayed ones alike
    const json = typeof payload === 'string' ? plainDecimals(payload) : toJson(payload);
    // Frames written in one turn of the event loop (say, the events of one upstream packet) leave
    // in one write of one HTTP chunk: a system call per frame cost more than everything else the
    // relay does, and a write per frame (each its own chunk, corked) was still a tenth of a stream's CPU.
    if (this.pending === '') process.nextTick(this.flush);
    this.pending += event ? `event: ${event}\ndata: ${json}\n\n` : `data: ${json}\n\n`;
    return this.full;
  }

  private readonly flush = () => {
    const text = this.pending;
    this.pending = '';
    // end() took them, or nobody is listening any more
    if (text === '' || this.gone || this.ctx.res.writableEnded) return;
    if (this.ctx.res.write(text) || this.full) return;
    const res = this.ctx.res;
    this.full = new Promise<void>((resolve) => {
      const done = () => {
        res.off('drain', done);
        res.off('close', done);
        this.full = undefined;
        resolve();
      };
      res.on('drain', done);
      res.on('close', done);
    });
  };

  end(): void {
    if (this.ended) return;
    this.ended = true;
    const rest = this.pending;
    this.pending = '';
    if (this.ctx.res.writableEnded) return;
    // the last frames leave with the end of the response, in one write
    if (rest !== '' && !this.gone) this.ctx.res.end(rest);
    else this.ctx.res.end();
  }
}
