// The built-in embedding models: sentence-embedding GGUFs (all-MiniLM-L6-v2) run in-process by
// llama.cpp through node-llama-cpp, one embedding context per file, loaded on first use like the
// local chat models (engine.ts: same runtime, same file search, same sha256 check).
//
// What makes the vectors the original model's (sentence-transformers): the text is WordPiece-
// tokenized and framed [CLS] … [SEP]; at most `max_input_tokens` tokens (the route option; 256 for
// all-MiniLM-L6-v2, sentence-transformers' max_seq_length) are embedded, the rest is cut off as
// sentence-transformers does; llama.cpp mean-pools the last layer (the GGUF's pooling type), and
// the pooled vector is L2-normalised here, since llama.cpp returns it unnormalised (a norm of about
// 6 for this model) while sentence-transformers' Normalize layer makes it a unit vector.
import { stat } from 'node:fs/promises';
import type { LlamaEmbeddingContext, LlamaModel, Token } from 'node-llama-cpp';
import { upstreamError } from '../../core/errors.js';
import type { EmbeddingResult, EmbeddingsAdapter } from '../types.js';
import { modelPath, PROVIDER_ID, runtime, threadsFor, verifySha256 } from './engine.js';
import { abortError } from './generate.js';

interface EmbeddingModel {
  model: LlamaModel;
  context: LlamaEmbeddingContext;
  /** tokens one input may have, [CLS] and [SEP] included */
  maxTokens: number;
}

const loaded = new Map<string, Promise<EmbeddingModel>>();

async function load(file: string, filePath: string, maxInputTokens: number | undefined): Promise<EmbeddingModel> {
  const llama = await runtime();
  try {
    const model = await llama.loadModel({ modelPath: filePath });
    const contextSize = model.trainContextSize;
    // Threads always explicit, by the engine's rule (LOCAL_THREADS, else 1 for files under 64 MB):
    // on 2 busy cores a ~100-token input took 150-180 ms on one thread and 850-920 ms on two.
    const threads = threadsFor((await stat(filePath)).size);
    const context = await model.createEmbeddingContext({ contextSize, threads });
    return { model, context, maxTokens: Math.min(maxInputTokens ?? contextSize, contextSize - 1) };
  } catch (err) {
    throw upstreamError(`local embedding model ${file} could not be loaded: ${(err as Error).message}`, 503, false, {
      code: 'local_model_load_failed',
      providerId: PROVIDER_ID,
    });
  }
}

async function embeddingModel(file: string, sha256?: string, maxInputTokens?: number): Promise<EmbeddingModel> {
  const filePath = modelPath(file);
  if (sha256) await verifySha256(file, filePath, sha256);
  let p = loaded.get(filePath);
  if (!p) {
    p = load(file, filePath, maxInputTokens);
    loaded.set(filePath, p);
    p.catch(() => loaded.delete(filePath));
  }
  return p;
}

/** [CLS] text [SEP], cut to `max` tokens as sentence-transformers cuts (the [SEP] stays). */
function frame(model: LlamaModel, text: string, max: number): Token[] {
  const { bos, sep } = model.tokens;
  const body = model.tokenize(text);
  if (bos == null || sep == null) return body.slice(0, max);
  return [bos, ...body.slice(0, Math.max(0, max - 2)), sep];
}

/** `v` scaled to length 1 (a zero vector stays zero). */
function normalize(v: readonly number[]): number[] {
  let sum = 0;
  for (const x of v) sum += x * x;
  const norm = Math.sqrt(sum);
  return norm === 0 ? [...v] : v.map((x) => x / norm);
}

export const localEmbeddings: EmbeddingsAdapter = {
  async embed(req, target, signal): Promise<EmbeddingResult> {
    const sha256 = typeof target.options.sha256 === 'string' ? target.options.sha256 : undefined;
    const max = typeof target.options.max_input_tokens === 'number' ? target.options.max_input_tokens : undefined;
    const em = await embeddingModel(req.model, sha256, max);
    const vectors: number[][] = [];
    let tokens = 0;
    for (const input of req.input) {
      if (signal.aborted) throw abortError(signal);
      // token arrays are in an upstream's tokenizer: the plan lets only text reach this model
      if (typeof input !== 'string') throw new Error('the local embedding model takes text, not token arrays');
      const framed = frame(em.model, input, em.maxTokens);
      const { vector } = await em.context.getEmbeddingFor(framed);
      vectors.push(normalize(vector));
      tokens += framed.length;
    }
    return { vectors, promptTokens: tokens };
  },
};

/** Free the embedding models (shutdown, tests), before the runtime goes. */
export async function closeEmbeddingModels(): Promise<void> {
  const models = [...loaded.values()];
  loaded.clear();
  for (const p of models) {
    const m = await p.catch(() => undefined);
    if (m) {
      await m.context.dispose().catch(() => {});
      await m.model.dispose().catch(() => {});
    }
  }
}
