// The text pipeline's view of one HTTP exchange (activities/inference/exchange.ts), filled from
// Koa's context: one object per request whose methods read `ctx` when asked, so a request that
// never needs the abort signal or the origin never builds them.
import type { Caller } from '../activities/core/caller.js';
import type { Exchange, StreamSink } from '../activities/inference/exchange.js';
import type { MeteredCall } from '../activities/metering/meteredCall.js';
import type { Envelope } from '../activities/surfaces/errors.js';
import type { X402State } from '../activities/x402/payments.js';
import { clientAbortSignal } from './clientAbort.js';
import { chargeOnDelivery } from './delivery.js';
import { publicOrigin } from './paths.js';
import { SseWriter } from './sse.js';
import type { AppContext } from './state.js';

export class KoaExchange implements Exchange {
  constructor(private readonly ctx: AppContext) {}

  get caller(): Caller {
    return this.ctx.state.caller;
  }
  get requestId(): string {
    return this.ctx.state.requestId;
  }
  get envelope(): Envelope {
    return this.ctx.state.envelope ?? 'openai';
  }
  get forcePaygo(): boolean {
    return this.ctx.state.forcePaygo === true;
  }
  get thinkingPath(): boolean {
    return this.ctx.state.thinkingPath === true;
  }
  get x402(): X402State | undefined {
    return this.ctx.state.x402;
  }
  get path(): string {
    return this.ctx.path;
  }
  get headers(): Record<string, string | string[] | undefined> {
    return this.ctx.headers;
  }
  header(name: string): string {
    return this.ctx.get(name);
  }
  origin(): string {
    return publicOrigin(this.ctx);
  }
  signal(): AbortSignal {
    return clientAbortSignal(this.ctx);
  }
  setHeader(name: string, value: string): void {
    this.ctx.set(name, value);
  }
  send(body: unknown, type?: string): void {
    if (type) this.ctx.type = type;
    this.ctx.body = body;
  }
  stream(): StreamSink {
    return new SseWriter(this.ctx);
  }
  chargeOnDelivery(metered: MeteredCall): void {
    chargeOnDelivery(this.ctx, metered);
  }
}
