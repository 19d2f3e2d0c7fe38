// The native Anthropic Messages API (protocol 'anthropic'): POST {base}/v1/messages, JSON or
// SSE, and POST {base}/v1/messages/count_tokens.
import type { InferenceRequest, InferenceResult, StreamEvent } from '../../inference/types.js';
import { readJson, send, statusError, transportError, type UpstreamResponse } from '../http.js';
import { UpstreamError, type ProviderAdapter, type ProviderTarget } from '../types.js';
import { abortedError } from './errors.js';
import { toMessagesRequest } from './request.js';
import { fromMessage } from './response.js';
import { readFrames, toStreamEvents } from './stream.js';

export const ANTHROPIC_VERSION = '2023-06-01';

export const anthropicAdapter: ProviderAdapter = {
  protocol: 'anthropic',

  async complete(req: InferenceRequest, target: ProviderTarget, signal: AbortSignal): Promise<InferenceResult> {
    const plan = toMessagesRequest(req);
    const res = await post(target, '/v1/messages', plan.body, signal);
    const msg = await readJson(target.providerId, res).catch((err) => { throw abortAware(target, signal, err); });
    if (msg?.type !== 'message' || !Array.isArray(msg.content)) {
      throw new UpstreamError(`${target.providerId} sent an answer that is not a message`, 502, true, {
        code: 'upstream_bad_response', providerId: target.providerId, upstreamBody: JSON.stringify(msg).slice(0, 2000),
      });
    }
    return fromMessage(msg, plan);
  },

  async *stream(req: InferenceRequest, target: ProviderTarget, signal: AbortSignal): AsyncGenerator<StreamEvent> {
    const plan = toMessagesRequest(req, { stream: true });
    const res = await post(target, '/v1/messages', plan.body, signal);
    // Reading stops at message_stop, before the body's own end: an iterator that destroyed the
    // body on return would close the keep-alive connection after every stream.
    const chunks = res.body.iterator({ destroyOnReturn: false });
    let complete = false;
    try {
      yield* toStreamEvents(readFrames(chunks, target.providerId, signal), plan, target.providerId);
      complete = true;
    } finally {
      if (complete) drainForReuse(res);
      else discard(res);
    }
  },
};

/** Input tokens the request would use, from Anthropic's own counter (free, rate-limited separately). */
export async function countTokens(req: InferenceRequest, target: ProviderTarget, signal: AbortSignal): Promise<number> {
  const { body } = toMessagesRequest(req);
  // count_tokens takes only what shapes the prompt; generation parameters are rejected
  const counted = Object.fromEntries(
    Object.entries(body).filter(([k]) => ['model', 'system', 'messages', 'tools', 'tool_choice', 'thinking'].includes(k)),
  );
  const res = await post(target, '/v1/messages/count_tokens', counted, signal);
  const j = await readJson(target.providerId, res).catch((err) => { throw abortAware(target, signal, err); });
  if (typeof j?.input_tokens !== 'number') {
    throw new UpstreamError(`${target.providerId} sent no input_tokens`, 502, true, {
      code: 'upstream_bad_response', providerId: target.providerId, upstreamBody: JSON.stringify(j).slice(0, 2000),
    });
  }
  return j.input_tokens;
}

/** POST a JSON body; any non-2xx answer becomes an UpstreamError carrying Anthropic's message. */
async function post(target: ProviderTarget, path: string, body: unknown, signal: AbortSignal): Promise<UpstreamResponse> {
  const res = await send(target.providerId, endpoint(target.baseUrl, path), {
    headers: {
      'content-type': 'application/json',
      'anthropic-version': ANTHROPIC_VERSION,
      ...(target.apiKey ? { 'x-api-key': target.apiKey } : {}),
      // catalog/route headers (e.g. anthropic-beta) last: they may also pin another version
      ...target.headers,
    },
    body: JSON.stringify(body),
    signal,
  }).catch((err) => { throw abortAware(target, signal, err); });
  if (res.status < 200 || res.status >= 300) throw await statusError(target.providerId, res);
  return res;
}

/**
 * Read what follows message_stop (normally only the chunked-encoding end) in the background, so
 * the connection returns to the pool; an upstream that never ends the body loses it after a while.
 */
function drainForReuse(res: UpstreamResponse): void {
  res.body.dump({ limit: Number.MAX_SAFE_INTEGER, signal: AbortSignal.timeout(10_000) }).catch(() => {});
}

/** Stopped early or failed: drop the connection. Its destroy error is noise (the failure was already thrown). */
function discard(res: UpstreamResponse): void {
  if (res.body.destroyed) return;
  res.body.on('error', () => {});
  res.body.destroy();
}

/** The catalog's base is the bare host; one that already ends in /v1 is accepted too. */
function endpoint(baseUrl: string, path: string): string {
  const base = baseUrl.replace(/\/+$/, '');
  return base.endsWith('/v1') ? base + path.slice(3) : base + path;
}

/** An abort is never a provider failure (see abortedError). */
function abortAware(target: ProviderTarget, signal: AbortSignal, err: unknown): UpstreamError {
  return signal.aborted ? abortedError(target.providerId, signal) : transportError(target.providerId, err);
}
