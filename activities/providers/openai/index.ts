// The adapter for every upstream speaking OpenAI's chat-completions protocol: OpenAI itself,
// OpenRouter, Together, Groq, DeepInfra, Fireworks, and self-hosted vLLM, llama.cpp server and
// Ollama. One code path; the vendors' differences are data (quirks.ts). Speech and embeddings
// are their own files beside it.
import type { InferenceRequest, InferenceResult, StreamEvent } from '../../core/types.js';
import { readJson, send, statusError } from '../http.js';
import type { UpstreamResponse } from '../http.js';
import type { ChatAdapter, Provider, ProviderTarget } from '../types.js';
import { openaiEmbeddings } from './embeddings.js';
import { openaiModeration } from './moderation.js';
import { openaiImages } from './images.js';
import { openaiPassThrough } from './native.js';
import { openaiScoring } from './scoring.js';
import { openaiSpeech } from './speech.js';
import { openaiTranscription } from './transcription.js';
import { quirksFor } from './quirks.js';
import { endpointUrl, requestHeaders, toChatBody, toCompletionBody, usesCompletionsEndpoint } from './request.js';
import { fromChatResponse, fromCompletionResponse } from './response.js';
import { deadlineOr, readStream } from './stream.js';

/** POST the request to the right endpoint; a non-2xx answer becomes the upstream's own error. */
async function call(
  req: InferenceRequest,
  target: ProviderTarget,
  signal: AbortSignal,
  stream: boolean,
  q = quirksFor(target.providerId, target.options),
): Promise<{ res: UpstreamResponse; legacy: boolean }> {
  const legacy = usesCompletionsEndpoint(req, q);
  const body = legacy ? toCompletionBody(req, q, stream) : toChatBody(req, q, stream);
  const url = endpointUrl(target.baseUrl, legacy ? 'completions' : 'chat/completions');
  const res = await send(target.providerId, url, {
    headers: requestHeaders(target, q, stream),
    body: JSON.stringify(body),
    signal,
    wire: target.wire,
  }).catch((err) => {
    throw deadlineOr(target.providerId, err, signal);
  });
  if (res.status < 200 || res.status >= 300) throw await statusError(target.providerId, res);
  return { res, legacy };
}

async function complete(req: InferenceRequest, target: ProviderTarget, signal: AbortSignal): Promise<InferenceResult> {
  const { res, legacy } = await call(req, target, signal, false);
  const json = await readJson(target.providerId, res, target.wire).catch((err) => {
    throw deadlineOr(target.providerId, err, signal);
  });
  return legacy
    ? fromCompletionResponse(target.providerId, json)
    : fromChatResponse(target.providerId, json, !!req.reasoning?.exclude);
}

// readStream makes the upstream call on the first next(): it, and any failure to get a good
// response, belong to that first next() as the ChatAdapter contract requires.
function stream(req: InferenceRequest, target: ProviderTarget, signal: AbortSignal): AsyncGenerator<StreamEvent> {
  const q = quirksFor(target.providerId, target.options);
  return readStream(async () => (await call(req, target, signal, true, q)).res, target.providerId, signal, {
    legacy: usesCompletionsEndpoint(req, q),
    excludeReasoning: !!req.reasoning?.exclude,
    relay: false,
  });
}

export const openaiChat: ChatAdapter = {
  complete,
  stream,
  native: openaiPassThrough,
};

export const openaiProvider: Provider = {
  protocol: 'openai',
  chat: openaiChat,
  speech: openaiSpeech,
  embeddings: openaiEmbeddings,
  images: openaiImages,
  transcription: openaiTranscription,
  scoring: openaiScoring,
  moderation: openaiModeration,
};
