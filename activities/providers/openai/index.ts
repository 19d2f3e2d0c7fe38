// The adapter for every upstream speaking OpenAI's chat-completions protocol: OpenAI itself,
// OpenRouter, Together, Groq, DeepInfra, Fireworks, and self-hosted vLLM, llama.cpp server and
// Ollama. One code path; the vendors' differences are data (quirks.ts).
import type { InferenceRequest, InferenceResult, StreamEvent } from '../../inference/types.js';
import { readJson, send, statusError, transportError } from '../http.js';
import type { UpstreamResponse } from '../http.js';
import { parseSse } from '../sse.js';
import { UpstreamError } from '../types.js';
import type { ProviderAdapter, ProviderTarget } from '../types.js';
import { quirksFor } from './quirks.js';
import { endpointUrl, requestHeaders, toChatBody, toCompletionBody, usesCompletionsEndpoint } from './request.js';
import { StreamDecoder, bodyError, fromChatResponse, fromCompletionResponse, resultEvents } from './response.js';

/** POST the request to the right endpoint; a non-2xx answer becomes the upstream's own error. */
async function call(req: InferenceRequest, target: ProviderTarget, signal: AbortSignal, stream: boolean): Promise<{ res: UpstreamResponse; legacy: boolean }> {
  const q = quirksFor(target.providerId, target.options);
  const legacy = usesCompletionsEndpoint(req, q);
  const body = legacy ? toCompletionBody(req, q, stream) : toChatBody(req, q, stream);
  const url = endpointUrl(target.baseUrl, legacy ? 'completions' : 'chat/completions');
  const res = await send(target.providerId, url, { headers: requestHeaders(target, q, stream), body: JSON.stringify(body), signal })
    .catch((err) => { throw deadlineOr(target.providerId, err, signal); });
  if (res.status < 200 || res.status >= 300) throw await statusError(target.providerId, res);
  return { res, legacy };
}

async function complete(req: InferenceRequest, target: ProviderTarget, signal: AbortSignal): Promise<InferenceResult> {
  const { res, legacy } = await call(req, target, signal, false);
  const json = await readJson(target.providerId, res).catch((err) => { throw deadlineOr(target.providerId, err, signal); });
  return legacy ? fromCompletionResponse(target.providerId, json) : fromChatResponse(target.providerId, json, !!req.reasoning?.exclude);
}

/**
 * http.ts maps a plain abort to 499, but a deadline (`AbortSignal.timeout`, the natural per-attempt
 * limit) aborts with a TimeoutError, which it would call a failure to connect. It is a timeout:
 * retryable 504, so the router falls back.
 */
function deadlineOr(providerId: string, err: unknown, signal: AbortSignal): UpstreamError {
  if (signal.aborted && (signal.reason as Error | undefined)?.name === 'TimeoutError') {
    return new UpstreamError(`${providerId} did not answer in time`, 504, true, { code: 'upstream_timeout', providerId });
  }
  return transportError(providerId, err);
}

/** A failure while reading a stream that had started: the caller aborting, or the upstream stopping midway. */
function readError(providerId: string, err: unknown, signal: AbortSignal): UpstreamError {
  if (err instanceof UpstreamError) return err;
  const mapped = deadlineOr(providerId, err, signal);
  if (signal.aborted || mapped.opts.code === 'upstream_timeout') return mapped;
  return streamCut(providerId, (err as Error).message);
}

const streamCut = (providerId: string, why: string) =>
  new UpstreamError(`${providerId} stream was cut: ${why}`, 502, true, { code: 'upstream_stream_cut', providerId });

// An async generator runs nothing until the first next(): the upstream call, and any failure to
// get a good response, belong to that first next() as the ProviderAdapter contract requires.
async function* stream(req: InferenceRequest, target: ProviderTarget, signal: AbortSignal): AsyncGenerator<StreamEvent> {
  const { res, legacy } = await call(req, target, signal, true);
  const exclude = !!req.reasoning?.exclude;
  if (String(res.headers['content-type'] ?? '').includes('application/json')) {
    // a server (or proxy) that ignored `stream: true` answered in one piece: replay it as events
    const json = await readJson(target.providerId, res).catch((err) => { throw deadlineOr(target.providerId, err, signal); });
    yield* resultEvents(legacy ? fromCompletionResponse(target.providerId, json) : fromChatResponse(target.providerId, json, exclude));
    return;
  }
  const decoder = new StreamDecoder(target.providerId, legacy, exclude);
  let done = false;
  try {
    for await (const frame of parseSse(res.body)) {
      if (frame.data === '[DONE]') {
        done = true;
        break;
      }
      if (frame.data === '') continue;
      let chunk: unknown;
      try {
        chunk = JSON.parse(frame.data);
      } catch {
        throw new UpstreamError(`${target.providerId} sent a stream event that is not JSON`, 502, true, {
          code: 'upstream_bad_response', providerId: target.providerId, upstreamBody: frame.data.slice(0, 2000),
        });
      }
      // some servers name their error frames instead of (or besides) putting `error` in the data
      if (frame.event === 'error') throw bodyError(target.providerId, chunk) ?? bodyError(target.providerId, { error: chunk })!;
      for (const event of decoder.push(chunk)) yield event;
    }
  } catch (err) {
    throw readError(target.providerId, err, signal);
  } finally {
    // the consumer stopped early or something failed: free the upstream connection now
    if (!done) res.body.destroy();
  }
  // A finish_reason without `[DONE]` is complete enough (some servers omit it); neither is a cut.
  if (!done && !decoder.finished) throw streamCut(target.providerId, 'it ended before [DONE]');
  yield* decoder.end();
}

export const openaiAdapter: ProviderAdapter = {
  protocol: 'openai',
  complete,
  stream,
};
