// Google Gemini's native API (catalog protocol 'gemini'):
//   POST {base}/v1beta/models/{model}:generateContent
//   POST {base}/v1beta/models/{model}:streamGenerateContent?alt=sse
// with the key in `x-goog-api-key`. Route options: `apiVersion` (default v1beta),
// `thinkingBudgetMax`, `skipThoughtSignatureValidator` (see request.ts).
// A request with stop sequences is always streamed upstream, even for a caller who did not ask
// for a stream: the gateway enforces the stops itself (stream.ts) and folds the events into one
// answer.
import type { InferenceRequest, InferenceResult, StreamEvent, TokenLogprob, ToolCall } from '../../core/types.js';
import { readJson, send, transportError } from '../http.js';
import { parseSse } from '../sse.js';
import type { ChatAdapter, Provider, ProviderTarget } from '../types.js';
import { geminiStatusError } from './errors.js';
import { toGeminiRequest } from './request.js';
import { fromGeminiResponse } from './response.js';
import { type GeminiStreamInfo, geminiStreamEvents, stopSequences } from './stream.js';
import { RequestError, upstreamError } from '../../core/errors.js';

function endpoint(target: ProviderTarget, model: string, method: 'generateContent' | 'streamGenerateContent'): string {
  const base = target.baseUrl.replace(/\/+$/, '');
  // A base URL that already names the API version (a proxy configured with it) is used as is.
  const version = /\/v1(alpha|beta)?\d*$/.test(base)
    ? ''
    : `/${typeof target.options.apiVersion === 'string' ? target.options.apiVersion : 'v1beta'}`;
  const name = model.replace(/^models\//, '');
  return `${base}${version}/models/${encodeURIComponent(name)}:${method}${method === 'streamGenerateContent' ? '?alt=sse' : ''}`;
}

function headers(target: ProviderTarget, stream: boolean): Record<string, string> {
  return {
    'content-type': 'application/json',
    accept: stream ? 'text/event-stream' : 'application/json',
    ...(target.apiKey ? { 'x-goog-api-key': target.apiKey } : {}),
    ...target.headers,
  };
}

/**
 * A failure while reading an accepted stream: aborts and timeouts keep their meaning; the
 * connection dropping under us is the stream being cut, like a body that ends without its last frame.
 */
function bodyError(providerId: string, err: unknown): RequestError {
  if (err instanceof RequestError) return err;
  const mapped = transportError(providerId, err);
  if (mapped.code !== 'upstream_unreachable') return mapped;
  return upstreamError(`${providerId} stream was cut: ${(err as Error).message}`, 502, true, {
    code: 'upstream_stream_cut',
    providerId,
  });
}

async function* streamEvents(
  req: InferenceRequest,
  target: ProviderTarget,
  signal: AbortSignal,
  info: GeminiStreamInfo,
): AsyncGenerator<StreamEvent> {
  const body = JSON.stringify(await toGeminiRequest(req, target, signal));
  const res = await send(target.providerId, endpoint(target, req.model, 'streamGenerateContent'), {
    headers: headers(target, true),
    body,
    signal,
  });
  if (res.status < 200 || res.status >= 300) throw await geminiStatusError(target.providerId, res);
  try {
    yield* geminiStreamEvents(parseSse(res.body), req, target.providerId, info);
  } catch (err) {
    throw bodyError(target.providerId, err);
  } finally {
    // the consumer may stop early (client gone): release the upstream connection now
    if (!res.body.destroyed) {
      res.body.on('error', () => undefined); // undici reports the destroy itself as an error event
      res.body.destroy();
    }
  }
}

/** A streamed answer as one result, as generateContent would have given it. */
async function foldEvents(events: AsyncIterable<StreamEvent>, info: GeminiStreamInfo): Promise<InferenceResult> {
  const result: InferenceResult = { content: '', toolCalls: [], finishReason: 'stop', usage: null };
  let reasoning = '';
  const lp: TokenLogprob[] = [];
  const calls: ToolCall[] = [];
  for await (const e of events) {
    if (e.type === 'text') {
      result.content += e.text;
      if (e.logprobs) lp.push(...e.logprobs);
    } else if (e.type === 'reasoning') reasoning += e.text;
    else if (e.type === 'tool_call') calls.push({ id: e.id ?? '', name: e.name ?? '', arguments: e.argumentsDelta });
    else if (e.type === 'finish') {
      result.finishReason = e.reason;
      if (e.stopSequence !== undefined) result.stopSequence = e.stopSequence;
    } else if (e.type === 'usage') result.usage = e.usage;
  }
  result.toolCalls = calls;
  if (reasoning) result.reasoning = reasoning;
  if (lp.length) result.logprobs = lp;
  if (info.responseId) result.upstreamId = info.responseId;
  return result;
}

export const geminiChat: ChatAdapter = {
  async complete(req: InferenceRequest, target: ProviderTarget, signal: AbortSignal): Promise<InferenceResult> {
    if (stopSequences(req).length) {
      const info: GeminiStreamInfo = {};
      return foldEvents(streamEvents(req, target, signal, info), info);
    }
    const body = JSON.stringify(await toGeminiRequest(req, target, signal));
    const res = await send(target.providerId, endpoint(target, req.model, 'generateContent'), {
      headers: headers(target, false),
      body,
      signal,
    });
    if (res.status < 200 || res.status >= 300) throw await geminiStatusError(target.providerId, res);
    return fromGeminiResponse(await readJson(target.providerId, res), req);
  },

  stream(req: InferenceRequest, target: ProviderTarget, signal: AbortSignal): AsyncGenerator<StreamEvent> {
    return streamEvents(req, target, signal, {});
  },
};

export const geminiProvider: Provider = {
  protocol: 'gemini',
  chat: geminiChat,
};
