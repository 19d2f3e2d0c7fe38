// Google Gemini's native API (catalog protocol 'gemini'):
//   POST {base}/v1beta/models/{model}:generateContent
//   POST {base}/v1beta/models/{model}:streamGenerateContent?alt=sse
// with the key in `x-goog-api-key`. Route options: `apiVersion` (default v1beta),
// `thinkingBudgetMax`, `skipThoughtSignatureValidator` (see request.ts).
import type { InferenceRequest, InferenceResult, StreamEvent } from '../../core/types.js';
import { readJson, send, transportError } from '../http.js';
import { parseSse } from '../sse.js';
import type { ChatAdapter, Provider, ProviderTarget } from '../types.js';
import { geminiStatusError } from './errors.js';
import { toGeminiRequest } from './request.js';
import { fromGeminiResponse } from './response.js';
import { geminiStreamEvents } from './stream.js';
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

export const geminiChat: ChatAdapter = {
  async complete(req: InferenceRequest, target: ProviderTarget, signal: AbortSignal): Promise<InferenceResult> {
    const body = JSON.stringify(await toGeminiRequest(req, target, signal));
    const res = await send(target.providerId, endpoint(target, req.model, 'generateContent'), {
      headers: headers(target, false),
      body,
      signal,
    });
    if (res.status < 200 || res.status >= 300) throw await geminiStatusError(target.providerId, res);
    return fromGeminiResponse(await readJson(target.providerId, res), req);
  },

  async *stream(req: InferenceRequest, target: ProviderTarget, signal: AbortSignal): AsyncGenerator<StreamEvent> {
    const body = JSON.stringify(await toGeminiRequest(req, target, signal));
    const res = await send(target.providerId, endpoint(target, req.model, 'streamGenerateContent'), {
      headers: headers(target, true),
      body,
      signal,
    });
    if (res.status < 200 || res.status >= 300) throw await geminiStatusError(target.providerId, res);
    try {
      yield* geminiStreamEvents(parseSse(res.body), req, target.providerId);
    } catch (err) {
      throw bodyError(target.providerId, err);
    } finally {
      // the consumer may stop early (client gone): release the upstream connection now
      if (!res.body.destroyed) {
        res.body.on('error', () => undefined); // undici reports the destroy itself as an error event
        res.body.destroy();
      }
    }
  },
};

export const geminiProvider: Provider = {
  protocol: 'gemini',
  chat: geminiChat,
};
