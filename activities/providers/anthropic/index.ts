// The native Anthropic Messages API (protocol 'anthropic'): POST {base}/v1/messages, JSON or
// SSE, and POST {base}/v1/messages/count_tokens.
import type { InferenceRequest, InferenceResult, StreamEvent } from '../../core/types.js';
import { readJson } from '../http.js';
import type { ChatAdapter, Provider, ProviderTarget, TokenCountAdapter } from '../types.js';
import { anthropicPassThrough } from './native.js';
import { toMessagesRequest } from './request.js';
import { fromMessage } from './response.js';
import { readFrames, toStreamEvents } from './stream.js';
import { abortAware, post } from './transport.js';
import { discard, drainForReuse } from '../http.js';
import { upstreamError } from '../../core/errors.js';

export const anthropicChat: ChatAdapter = {
  native: anthropicPassThrough,
  forwardsHeaders: ['anthropic-beta'],

  async complete(req: InferenceRequest, target: ProviderTarget, signal: AbortSignal): Promise<InferenceResult> {
    const plan = toMessagesRequest(req);
    const res = await post(target, '/v1/messages', plan.body, signal);
    const msg = await readJson(target.providerId, res).catch((err) => {
      throw abortAware(target, signal, err);
    });
    if (msg?.type !== 'message' || !Array.isArray(msg.content)) {
      throw upstreamError(`${target.providerId} sent an answer that is not a message`, 502, true, {
        code: 'upstream_bad_response',
        providerId: target.providerId,
        upstreamBody: JSON.stringify(msg).slice(0, 2000),
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
    Object.entries(body).filter(([k]) =>
      ['model', 'system', 'messages', 'tools', 'tool_choice', 'thinking'].includes(k),
    ),
  );
  const res = await post(target, '/v1/messages/count_tokens', counted, signal);
  const j = await readJson(target.providerId, res).catch((err) => {
    throw abortAware(target, signal, err);
  });
  if (typeof j?.input_tokens !== 'number') {
    throw upstreamError(`${target.providerId} sent no input_tokens`, 502, true, {
      code: 'upstream_bad_response',
      providerId: target.providerId,
      upstreamBody: JSON.stringify(j).slice(0, 2000),
    });
  }
  return j.input_tokens;
}

/** Anthropic's own counter, when a key is configured; when it fails, the gateway's estimate answers. */
const anthropicTokenCount: TokenCountAdapter = {
  count: async (req, target, signal) =>
    target.apiKey ? await countTokens(req, target, signal).catch(() => undefined) : undefined,
};

export const anthropicProvider: Provider = {
  protocol: 'anthropic',
  chat: anthropicChat,
  tokenCount: anthropicTokenCount,
};
