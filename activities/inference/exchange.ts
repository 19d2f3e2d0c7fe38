// What the text pipeline needs of the HTTP exchange it answers, and nothing more: api/ fills it in
// (api/exchange.ts) from Koa's context, so the pipeline and its add-ons never see Koa, and a test
// can drive them with a plain object.
import type { Caller } from '../core/caller.js';
import type { MeteredCall } from '../metering/meteredCall.js';
import type { Envelope } from '../surfaces/errors.js';
import type { X402State } from '../x402/payments.js';

/** Where a stream's frames go (api/sse.ts writes them as Server-Sent Events). */
export interface StreamSink {
  /** the caller went away before the end */
  readonly closed: boolean;
  /** one `data:` frame; a promise only when the connection is full */
  data(payload: unknown, event?: string): Promise<void> | undefined;
  end(): void;
}

export interface Exchange {
  readonly caller: Caller;
  /** `req_<hex>` */
  readonly requestId: string;
  /** the error envelope of the surface that was called */
  readonly envelope: Envelope;
  /** `X-Billing-Mode` asked for pay-as-you-go */
  readonly forcePaygo: boolean;
  /** reached through the `/api/v1thinking/` base path */
  readonly thinkingPath: boolean;
  /** an accountless request paying with x402 */
  readonly x402: X402State | undefined;
  /** the request's path (`/api/subscription/...`, the x402 resource) */
  readonly path: string;
  /** the request's headers, lower-cased names */
  readonly headers: Record<string, string | string[] | undefined>;
  /** one request header, '' when absent */
  header(name: string): string;
  /** scheme and host the caller reached the gateway at */
  origin(): string;
  /** fires when the caller disconnects before the answer */
  signal(): AbortSignal;
  setHeader(name: string, value: string): void;
  /** the whole answer (JSON unless `type` says otherwise) */
  send(body: unknown, type?: string): void;
  /** opens the event stream: the status and headers leave now */
  stream(): StreamSink;
  /** a whole answer's charge stands once it is written out; refunded if the caller leaves first */
  chargeOnDelivery(metered: MeteredCall): void;
}
