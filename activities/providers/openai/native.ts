// Pass-through for callers of chat completions: their body goes to an OpenAI-compatible upstream
// as they wrote it (content parts, tool definitions with `strict`, `response_format`, vendor
// fields all survive), and the upstream's answer and chunks come back as they are. The gateway
// changes only what it owns, and what the vendor's quirks require: the upstream model name, the
// output cap (the reservation's, under the vendor's field name), `stream_options.include_usage`
// (billing reads the usage), reasoning as the vendor spells it, and the fields the vendor would
// reject (quirks.ts). Usage is still read from the chunks (StreamDecoder) for billing.
import type { InferenceRequest, InferenceResult, NativeRequest, StreamEvent } from '../../core/types.js';
import { readJson, send, statusError } from '../http.js';
import type { NativePassThrough, ProviderTarget } from '../types.js';
import { quirksFor, type OpenAIQuirks } from './quirks.js';
import { endpointUrl, reasoningFields, requestHeaders } from './request.js';
import { fromChatResponse } from './response.js';
import { deadlineOr, readStream } from './stream.js';

type Body = Record<string, unknown>;

/** The caller's chat body as this vendor takes it. */
function upstreamBody(
  native: NativeRequest,
  req: InferenceRequest,
  q: OpenAIQuirks,
  providerId: string,
  stream: boolean,
): Body {
  const {
    max_tokens: _max,
    max_completion_tokens: _maxCompletion,
    reasoning: _reasoning,
    reasoning_effort: _effort,
    stream: _stream,
    stream_options: streamOptions,
    ...rest
  } = native.body;
  // `rest` is already this request's own copy: completed in place, `model` where the caller put it
  const body: Body = rest;
  body.model = req.model;
  // the cap the reservation was made for, always sent, so the bill can never exceed it
  body[q.maxTokensField] = req.maxTokens;
  Object.assign(body, reasoningFields(req.reasoning, q));
  if (stream) {
    body.stream = true;
    const options = streamOptions && typeof streamOptions === 'object' ? (streamOptions as Body) : {};
    if (q.streamUsage) body.stream_options = { ...options, include_usage: true };
    else if (streamOptions !== undefined) body.stream_options = streamOptions;
  }
  if (!q.extendedSampling) leaveOut(body, EXTENDED_SAMPLING);
  if (!q.sendUser && body.user !== undefined) delete body.user;
  // (OpenAI with message names takes every turn as it is: no copy of the list then)
  if (Array.isArray(body.messages) && (providerId !== 'openai' || !q.messageNames)) {
    body.messages = body.messages.map((m: Body) => {
      let out = m;
      // `developer` is OpenAI's newer name for a system turn; other servers know only `system`
      if (out.role === 'developer' && providerId !== 'openai') out = { ...out, role: 'system' };
      if (!q.messageNames && 'name' in out) {
        const { name: _name, ...unnamed } = out;
        out = unnamed;
      }
      return out;
    });
  }
  leaveOut(body, q.dropParams);
  return body;
}

/** Sampling fields only some vendors take (quirks' `extendedSampling`). */
const EXTENDED_SAMPLING = ['top_k', 'min_p', 'repetition_penalty'];

/**
 * Takes `keys` out of the body, touching only those present: callers seldom send them, and a
 * `delete` is a call into the runtime even when there is nothing to delete.
 */
function leaveOut(body: Body, keys: readonly string[]): void {
  for (const k of keys) if (body[k] !== undefined) delete body[k];
}

async function post(
  native: NativeRequest,
  req: InferenceRequest,
  target: ProviderTarget,
  signal: AbortSignal,
  stream: boolean,
) {
  const q = quirksFor(target.providerId, target.options);
  const body = upstreamBody(native, req, q, target.providerId, stream);
  const res = await send(target.providerId, endpointUrl(target.baseUrl, 'chat/completions'), {
    headers: requestHeaders(target, q, stream),
    body: JSON.stringify(body),
    signal,
    wire: target.wire,
  }).catch((err) => {
    throw deadlineOr(target.providerId, err, signal);
  });
  if (res.status < 200 || res.status >= 300) throw await statusError(target.providerId, res);
  return res;
}

export const openaiPassThrough: NativePassThrough = {
  format: 'openai-chat',

  // Hidden reasoning must be taken out of the answer: that needs the translated path.
  accepts: (req) => !req.reasoning?.exclude && req.prompt === undefined,

  async complete(
    native: NativeRequest,
    req: InferenceRequest,
    target: ProviderTarget,
    signal: AbortSignal,
  ): Promise<InferenceResult> {
    const res = await post(native, req, target, signal, false);
    const json = await readJson(target.providerId, res, target.wire).catch((err) => {
      throw deadlineOr(target.providerId, err, signal);
    });
    const result: InferenceResult = fromChatResponse(target.providerId, json, false);
    result.native = json;
    return result;
  },

  stream(
    native: NativeRequest,
    req: InferenceRequest,
    target: ProviderTarget,
    signal: AbortSignal,
  ): AsyncGenerator<StreamEvent> {
    return readStream(() => post(native, req, target, signal, true), target.providerId, signal, {
      legacy: false,
      excludeReasoning: false,
      relay: true,
    });
  },
};
