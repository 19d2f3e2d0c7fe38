// Text generation: the chat capability's contract (translated, or the caller's own wire format passed through).
import type { InferenceRequest, InferenceResult, NativeFormat, NativeRequest, StreamEvent } from '../../core/types.js';
import type { ProviderTarget } from './target.js';

/** Text generation: the one internal request in, a result or a stream of events out. */
export interface ChatAdapter {
  complete(req: InferenceRequest, target: ProviderTarget, signal: AbortSignal): Promise<InferenceResult>;
  /**
   * Streams events. The upstream call is made on the first `next()`, and any failure to get a
   * successful response (connection error, non-2xx status, a stream that ends before its first
   * event) is thrown from THAT call, so the router can still fall back to another provider.
   * Later failures are thrown from later `next()` calls. Aborting `signal` ends the upstream call.
   */
  stream(req: InferenceRequest, target: ProviderTarget, signal: AbortSignal): AsyncIterable<StreamEvent>;
  /** the caller's own wire format, sent as it is (pass-through), when this upstream speaks it */
  native?: NativePassThrough;
  /** caller headers this upstream understands, handed on in `target.headers` (no other upstream gets them) */
  readonly forwardsHeaders?: readonly string[];
}

/**
 * Pass-through for an upstream that speaks a surface's wire format. Same contract as complete()
 * and stream(), with the caller's body instead of a translation; `req` is the translated request,
 * for what the gateway decides (upstream model, output cap, reasoning from suffixes). The result
 * carries `native` (the upstream's answer as it came); the stream yields each upstream frame as a
 * `native` event followed by the events derived from it (for billing), and yields nothing until
 * the first content arrives, so a failure before it can still fall back.
 */
export interface NativePassThrough {
  readonly format: NativeFormat;
  /** whether this request can go as written (false: the translated path serves it) */
  accepts(req: InferenceRequest, target: ProviderTarget): boolean;
  complete(
    native: NativeRequest,
    req: InferenceRequest,
    target: ProviderTarget,
    signal: AbortSignal,
  ): Promise<InferenceResult>;
  stream(
    native: NativeRequest,
    req: InferenceRequest,
    target: ProviderTarget,
    signal: AbortSignal,
  ): AsyncIterable<StreamEvent>;
}
