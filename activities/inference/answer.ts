// How every text surface runs its prepared call, once: non-streaming (complete, refuse an empty
// answer, settle) and streaming (open with fallback before the first byte, then the stream, then
// settle what was produced). Surfaces (their codecs) only say how their frames look. Failures
// before anything was produced release the reservation and are ordinary errors; after the first
// byte, the surface reports them in-stream and what was produced is billed.
import type { Route } from '../catalog/catalog.js';
import { RequestError } from '../core/errors.js';
import type { FinishReason, InferenceResult, StreamEvent, Usage } from '../core/types.js';
import { asRequestError, renderError } from '../surfaces/errors.js';
import type { Exchange, StreamSink } from './exchange.js';
import { type Bill, hasOutput, type InferenceCall, producedText } from './execute.js';

const errorCode = (err: unknown) => (err as { code?: string }).code ?? 'error';

/** What a whole answer's call produced, settled. */
export type Completed = Awaited<ReturnType<typeof completeOnce>>;

export async function completeOnce(
  ex: Exchange,
  call: InferenceCall,
  /** what counts as an answer on this surface (default: any text, tool call or reasoning) */
  answered: (r: InferenceResult) => boolean = hasOutput,
): Promise<{ result: InferenceResult; route: Route; usage: Usage; bill: Bill }> {
  let outcome: Awaited<ReturnType<InferenceCall['complete']>>;
  try {
    outcome = await call.complete(ex.signal());
  } catch (err) {
    await call.fail(errorCode(err));
    throw err;
  }
  const { result, route } = outcome;
  if (!answered(result)) {
    await call.fail('empty_response');
    throw new RequestError(
      502,
      'empty_response',
      `${route.provider.id} returned an empty response. Nothing was charged; retry the request.`,
    );
  }
  const { usage, bill } = await call.settle(result.usage, producedText(result));
  return { result, route, usage, bill };
}

/** What a streaming surface writes; streamOnce decides when. */
export interface StreamSurface {
  /** frames before the first event */
  start?(): Promise<void> | undefined;
  /** a promise only when there is something to wait for (a full socket) */
  event(e: StreamEvent): Promise<void> | undefined;
  /** nothing was produced: nothing is charged, and the caller is told */
  empty(error: RequestError): Promise<void> | undefined;
  /** after settlement; `failure` = the stream broke after it began; `stopSequence` = the one that ended it, when known */
  end(outcome: {
    finish: FinishReason;
    stopSequence?: string;
    usage: Usage;
    bill: Bill;
    failure?: RequestError;
  }): Promise<void>;
}

/**
 * `passedThrough`: the upstream speaks this surface's format and its own frames arrive as `native`
 * events, to be relayed (see InferenceCall.openStream); otherwise the surface renders the events.
 */
export async function streamOnce(
  ex: Exchange,
  call: InferenceCall,
  surfaceFor: (sse: StreamSink, route: Route, passedThrough: boolean) => StreamSurface,
): Promise<void> {
  // The connection's own signal, as for a whole answer (api/clientAbort.ts): one per connection, not per stream.
  let opened: Awaited<ReturnType<InferenceCall['openStream']>>;
  try {
    opened = await call.openStream(ex.signal());
  } catch (err) {
    await call.fail(errorCode(err));
    throw err;
  }
  const sse = ex.stream();
  try {
    await relay(call, opened, sse, surfaceFor(sse, opened.route, opened.passedThrough));
  } catch (err) {
    // The headers are out, so whatever failed from here on (rendering, the settlement, the surface's
    // own end, such as storing the answer) cannot become an error response: the caller gets an error
    // frame in the route's envelope and the end of the stream, never a connection left open.
    // handleErrors logs it.
    const envelope = ex.envelope;
    await sse.data(renderError(asRequestError(err), envelope), envelope === 'message' ? 'error' : undefined);
    throw err;
  } finally {
    sse.end();
  }
}

/** The stream from its first frame to its settlement and last frame. */
async function relay(
  call: InferenceCall,
  opened: Awaited<ReturnType<InferenceCall['openStream']>>,
  sse: StreamSink,
  surface: StreamSurface,
): Promise<void> {
  let produced = '';
  let finish: FinishReason = 'stop';
  let stopSequence: string | undefined;
  let usage: Usage | null = null;
  let failure: unknown;
  // not async: an event that needs no waiting costs no promise
  const take = (e: StreamEvent): Promise<void> | undefined => {
    // a relayed frame that only continues the text carries that text (see StreamEvent)
    if (e.type === 'text' || e.type === 'reasoning' || e.type === 'native') produced += e.text ?? '';
    else if (e.type === 'tool_call') produced += e.argumentsDelta;
    else if (e.type === 'finish') {
      finish = e.reason;
      stopSequence = e.stopSequence;
    } else if (e.type === 'usage') usage = e.usage;
    return surface.event(e);
  };
  try {
    await surface.start?.();
    if (opened.first) await take(opened.first);
    for (;;) {
      const next = await opened.rest.next();
      if (next.done) break;
      const full = take(next.value);
      if (full) await full;
    }
  } catch (err) {
    failure = err;
  }

  if (!produced && !failure && !sse.closed) {
    await call.fail('empty_response');
    await surface.empty(
      new RequestError(
        502,
        'empty_response',
        'The provider returned an empty response. Nothing was charged; retry the request.',
      ),
    );
    return;
  }
  const status = sse.closed ? 'client_closed' : failure ? 'failed_midway' : 'completed';
  // A caller who left, or an upstream that broke, still consumed what was produced; a provider's
  // usage for a cut stream is unknown, so it is estimated from the text (see the README).
  const { usage: billed, bill } = await call.settle(failure || sse.closed ? null : usage, produced, status);
  // what was produced has been streamed to the caller: this charge stands whatever follows
  call.metered.delivered();
  // logged for the operator; told to the caller without the upstream's own words
  const broke = failure === undefined ? undefined : call.metered.brokeMidway(failure);
  // the bill says what broke the stream it charged for (the pricing extension's `error`)
  if (broke) bill.error = { status: broke.status, message: broke.message };
  await surface.end({ finish, stopSequence, usage: billed, bill, failure: broke });
}
