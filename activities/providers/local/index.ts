// The built-in `local` provider: GGUF models run in-process with llama.cpp (node-llama-cpp). The
// route's upstream model is the model FILE name (found by modelFiles.ts); its options may carry
// the file's sha256. This is what a fresh install answers with when no upstream key is set.
import type { InferenceRequest, InferenceResult, StreamEvent, TokenLogprob } from '../../core/types.js';
import type { ChatAdapter, Provider, ProviderTarget } from '../types.js';
import { EventQueue } from './eventQueue.js';
import { localSpeech } from './speech.js';
import { closeLocalModels as closeEngine, localModel } from './engine.js';
import { closeEmbeddingModels, localEmbeddings } from './embeddings.js';
import { localScoring } from './scoring.js';
import type { LocalModel } from './engine.js';
import { abortError, generate } from './generate.js';
import { assertSupported, buildPrompt } from './prompt.js';
import { localAvailability } from './modelFiles.js';
import type { Prompt } from './prompt.js';

/** Wait for `p`, but give up (with the abort's error) as soon as the caller aborts. */
function untilAborted<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(abortError(signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortError(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** Check the request, load the model (once per file) and build the prompt's tokens. */
async function prepare(
  req: InferenceRequest,
  target: ProviderTarget,
  signal: AbortSignal,
): Promise<{ lm: LocalModel; prompt: Prompt }> {
  assertSupported(req);
  const sha256 = typeof target.options.sha256 === 'string' ? target.options.sha256 : undefined;
  const lm = await untilAborted(localModel(req.model, { sha256 }), signal);
  return { lm, prompt: buildPrompt(lm, req) };
}

async function complete(req: InferenceRequest, target: ProviderTarget, signal: AbortSignal): Promise<InferenceResult> {
  const { lm, prompt } = await prepare(req, target, signal);
  const text: string[] = [];
  const logprobs: TokenLogprob[] = [];
  const end = await generate(lm, req, prompt, signal, (piece) => {
    text.push(piece.text);
    logprobs.push(...piece.logprobs);
  });
  return {
    content: text.join(''),
    toolCalls: [],
    finishReason: end.finishReason,
    ...(end.stopSequence !== undefined ? { stopSequence: end.stopSequence } : {}),
    usage: end.usage,
    ...(req.sampling.logprobs ? { logprobs } : {}),
  };
}

/**
 * Generation runs on its own, pushing events into a queue the reader drains; it listens to the
 * caller's signal directly, so an abort frees the model even while the reader is not pulling. A
 * reader that stops early (return()) stops the generation too.
 */
async function* stream(
  req: InferenceRequest,
  target: ProviderTarget,
  signal: AbortSignal,
): AsyncGenerator<StreamEvent> {
  const stop = new AbortController();
  const queue = new EventQueue<StreamEvent>();
  const onAbort = () => {
    stop.abort(signal.reason);
    queue.abort(abortError(signal));
  };
  if (signal.aborted) onAbort();
  else signal.addEventListener('abort', onAbort, { once: true });
  const withLogprobs = !!req.sampling.logprobs;
  const run = (async () => {
    const { lm, prompt } = await prepare(req, target, stop.signal);
    const end = await generate(lm, req, prompt, stop.signal, (piece) =>
      queue.push(
        withLogprobs
          ? { type: 'text', text: piece.text, logprobs: piece.logprobs }
          : { type: 'text', text: piece.text },
      ),
    );
    queue.push({
      type: 'finish',
      reason: end.finishReason,
      ...(end.stopSequence !== undefined ? { stopSequence: end.stopSequence } : {}),
    });
    queue.push({ type: 'usage', usage: end.usage });
  })().then(
    () => queue.end(),
    (err) => queue.fail(err),
  );
  try {
    yield* queue;
  } finally {
    signal.removeEventListener('abort', onAbort);
    if (!stop.signal.aborted) stop.abort(new Error('the reader closed the stream'));
    await run;
  }
}

export const localChat: ChatAdapter = {
  complete,
  stream,
};

/** Tokens of `text` in a local model's tokenizer (no start token added). */
export async function countTokens(file: string, text: string): Promise<number> {
  const lm = await localModel(file);
  return lm.model.tokenize(text).length;
}

/**
 * The exact prompt tokens the local provider would evaluate for this request (template or plain
 * text, start token included): the number its usage reports as promptTokens.
 */
export async function countPromptTokens(file: string, req: InferenceRequest): Promise<number> {
  const lm = await localModel(file);
  return buildPrompt(lm, req).tokens.length;
}

export const localProvider: Provider = {
  protocol: 'local',
  chat: localChat,
  speech: localSpeech,
  embeddings: localEmbeddings,
  scoring: localScoring,
  // the model's own tokenizer: exactly the prompt tokens its usage would report
  tokenCount: { count: (req) => countPromptTokens(req.model, req) },
  availability: localAvailability,
};

/** Free every loaded model (embedding contexts first) and then the runtime (shutdown, tests). */
export async function closeLocalModels(): Promise<void> {
  await closeEmbeddingModels();
  await closeEngine();
}
