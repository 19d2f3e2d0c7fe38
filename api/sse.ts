// Server-Sent Events to the caller, written straight to the socket (ctx.respond = false) so the
// route can await its whole stream, keep errors in scope, and respect backpressure. Disconnects
// are noticed on the response's 'close' (the request's fires as soon as its body is read).
import type { Context } from 'koa';
import { plainDecimals, toJson } from '../activities/json.js';

export class SseWriter {
  private ended = false;
  private corked = false;
  private gone = false;

  /** `onClientGone`: the caller disconnected before the stream ended (abort the upstream call there). */
  constructor(
    private readonly ctx: Context,
    onClientGone: () => void,
  ) {
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
      onClientGone();
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
    if (this.closed) return undefined;
    // plain decimals (`0.0000009`, not `9e-7`) in frames the gateway wrote and relayed ones alike
    const json = typeof payload === 'string' ? plainDecimals(payload) : toJson(payload);
    const text = `${event ? `event: ${event}\n` : ''}data: ${json}\n\n`;
    // Frames written in one turn of the event loop (say, the events of one upstream packet) leave
    // in one write: a system call per frame cost more than everything else the relay does.
    if (!this.corked) {
      this.corked = true;
      this.ctx.res.cork();
      process.nextTick(this.uncork);
    }
    if (this.ctx.res.write(text)) return undefined;
    return new Promise<void>((resolve) => {
      const done = () => {
        this.ctx.res.off('drain', done);
        this.ctx.res.off('close', done);
        resolve();
      };
      this.ctx.res.on('drain', done);
      this.ctx.res.on('close', done);
    });
  }

  private readonly uncork = () => {
    this.corked = false;
    this.ctx.res.uncork();
  };

  end(): void {
    if (this.ended) return;
    this.ended = true;
    if (!this.ctx.res.writableEnded) this.ctx.res.end();
  }
}
