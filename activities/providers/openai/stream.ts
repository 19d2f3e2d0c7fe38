// Reading an OpenAI-protocol event stream: `data:` chunks until `[DONE]`, decoded into events,
// with read failures mapped (the caller aborting, a deadline, a cut). Used by the translated
// stream and by the pass-through, which also relays each chunk as it came (`relay`).
import type { StreamEvent } from '../../core/types.js';
import { discard, drainForReuse, readJson, transportError, type UpstreamResponse } from '../http.js';
import { jsonStringAt, sseBatches } from '../sse.js';
import { StreamDecoder, bodyError, fromChatResponse, fromCompletionResponse, resultEvents } from './response.js';
import { RequestError, upstreamError } from '../../core/errors.js';

/**
 * http.ts maps a plain abort to 499, but a deadline (`AbortSignal.timeout`, the natural per-attempt
 * limit) aborts with a TimeoutError, which it would call a failure to connect. It is a timeout:
 * retryable 504, so the router falls back.
 */
export function deadlineOr(providerId: string, err: unknown, signal: AbortSignal): RequestError {
  if (signal.aborted && (signal.reason as Error | undefined)?.name === 'TimeoutError') {
    return upstreamError(`no answer before the deadline: ${(signal.reason as Error).message}`, 504, true, {
      code: 'upstream_timeout',
      providerId,
    });
  }
  return transportError(providerId, err);
}

/** A failure while reading a stream that had started: the caller aborting, or the upstream stopping midway. */
function readError(providerId: string, err: unknown, signal: AbortSignal): RequestError {
  if (err instanceof RequestError) return err;
  const mapped = deadlineOr(providerId, err, signal);
  // an abort, a deadline, a body gone silent keep their meaning; a lost connection is a cut
  if (signal.aborted || mapped.code !== 'upstream_unreachable') return mapped;
  return streamCut(providerId, (err as Error).message);
}

const streamCut = (providerId: string, why: string) =>
  upstreamError(`the stream was cut: ${why}`, 502, true, { code: 'upstream_stream_cut', providerId });

const CONTENT = new Set<StreamEvent['type']>(['text', 'reasoning', 'tool_call']);

export interface ReadOptions {
  legacy: boolean;
  excludeReasoning: boolean;
  /**
   * Pass-through: yield each chunk as a `native` event before the events derived from it, and
   * nothing until the first content (or the finish), so a failure before it can still fall back.
   */
  relay: boolean;
}

// Events are yielded one by one rather than with `yield*` over an array: that wraps the array in
// an async iterator, one more await per event on the hottest loop of a stream. The upstream call
// is `open`ed on the first next() (as the ChatAdapter contract asks) by this generator itself, so
// an adapter returns it as it is instead of delegating to it (`yield*`: more awaits per event).
export async function* readStream(
  open: () => Promise<UpstreamResponse>,
  providerId: string,
  signal: AbortSignal,
  opts: ReadOptions,
): AsyncGenerator<StreamEvent> {
  const res = await open();
  if (String(res.headers['content-type'] ?? '').includes('application/json')) {
    // a server (or proxy) that ignored `stream: true` answered in one piece: replay it as events
    const json = await readJson(providerId, res).catch((err) => {
      throw deadlineOr(providerId, err, signal);
    });
    yield* resultEvents(
      opts.legacy
        ? fromCompletionResponse(providerId, json)
        : fromChatResponse(providerId, json, opts.excludeReasoning),
    );
    return;
  }
  const decoder = new StreamDecoder(providerId, opts.legacy, opts.excludeReasoning);
  let held: StreamEvent[] | undefined = opts.relay ? [] : undefined;
  let done = false;
  try {
    // Reading stops at [DONE], before the body's own end: iterate without destroying on return
    // (see drainForReuse), so the upstream connection is kept alive for the next request.
    reading: for await (const frames of sseBatches(res.body.iterator({ destroyOnReturn: false }))) {
      for (const frame of frames) {
        if (frame.data === '[DONE]') {
          done = true;
          break reading;
        }
        if (frame.data === '') continue;
        // most chunks of a pass-through only continue the text: relayed as they came, their text
        // read without parsing them (see plainTextDelta); the first with text lets the held ones go
        if (opts.relay && frame.event === undefined) {
          const text = plainTextDelta(frame.data);
          if (text !== undefined && (!held || text !== '')) {
            if (held) for (const e of held) yield e;
            held = undefined;
            yield { type: 'native', event: undefined, data: frame.data, text };
            continue;
          }
        }
        let chunk: unknown;
        try {
          chunk = JSON.parse(frame.data);
        } catch {
          throw upstreamError('a stream event is not JSON', 502, true, {
            code: 'upstream_bad_response',
            providerId,
            upstreamBody: frame.data.slice(0, 2000),
          });
        }
        // some servers name their error frames instead of (or besides) putting `error` in the data
        if (frame.event === 'error') throw bodyError(providerId, chunk) ?? bodyError(providerId, { error: chunk })!;
        const events = decoder.push(chunk);
        if (!opts.relay) {
          for (const e of events) yield e;
          continue;
        }
        events.unshift({ type: 'native', event: frame.event, data: frame.data, json: chunk });
        if (held && !decoder.finished && !events.some((e) => CONTENT.has(e.type))) {
          held.push(...events);
          continue;
        }
        if (held) events.unshift(...held);
        held = undefined;
        for (const e of events) yield e;
      }
    }
  } catch (err) {
    throw readError(providerId, err, signal);
  } finally {
    // complete: let the connection go back to the pool; stopped early or failed: drop it
    if (done) drainForReuse(res);
    else discard(res);
  }
  // A finish_reason without `[DONE]` is complete enough (some servers omit it); neither is a cut.
  if (!done && !decoder.finished) throw streamCut(providerId, 'it ended before [DONE]');
  if (held) for (const e of held) yield e;
  for (const e of decoder.end()) yield e;
}

const CONTENT_DELTA = '"delta":{"content":"';

/**
 * The text of a chunk that says nothing but more text for choice 0, e.g.
 * `{"id":…,"choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}`, read with a
 * few substring tests instead of JSON.parse; undefined for any chunk that may say more (a finish,
 * usage, an error, reasoning or tool calls, logprobs, a second choice, a `provider` field, another
 * layout), which is parsed and decoded as before. The decoder would yield the same text event
 * for it, and the relay shows its bytes as they came, so the caller sees no difference. A
 * malformed chunk of this shape is relayed rather than refused (its framing is checked, not every
 * byte): the gateway vouches for what it adds, not for every byte an upstream sends.
 */
export function plainTextDelta(data: string): string | undefined {
  if (data.charCodeAt(0) !== 123 /* { */ || data.charCodeAt(data.length - 1) !== 125 /* } */) return undefined;
  const at = data.indexOf(CONTENT_DELTA);
  if (at === -1) return undefined;
  const text = jsonStringAt(data, at + CONTENT_DELTA.length);
  // the delta holds nothing else (no role, reasoning, tool calls)
  if (!text || data.charCodeAt(text.end + 1) !== 125 /* } */) return undefined;
  // everything around the text: one choice, and nothing but nulls where a finish, usage or logprobs would be
  const rest = data.slice(0, at) + data.slice(text.end + 1);
  if (data.includes('\n') || rest.includes('"delta"') || /"(error|provider|x_groq)"/.test(rest)) return undefined;
  if (/"(finish_reason|usage|logprobs)":(?!null[,}])/.test(rest) || /"index":(?!0[,}])/.test(rest)) return undefined;
  return text.text;
}
