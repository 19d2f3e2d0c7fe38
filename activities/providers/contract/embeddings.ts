// Embeddings: the embeddings capability's contract.
import type { ProviderTarget } from './target.js';

interface EmbeddingRequest {
  /** the upstream model name */
  model: string;
  /** texts, or token arrays in the upstream's own tokenizer (only for models that take them) */
  input: string[] | number[][];
  /** fewer dimensions than the model's own (only for models that can reduce them) */
  dimensions?: number;
  /** the caller's end-user id, passed on for the upstream's abuse monitoring */
  user?: string;
}

export interface EmbeddingResult {
  /** one float vector per input, in input order */
  vectors: number[][];
  /** the input tokens the upstream counted; null = it did not say */
  promptTokens: number | null;
}

/**
 * Inputs in, one vector per input out. The whole batch answers or fails together (a partial
 * answer is a failure: nothing is billed for it). Failures are RequestErrors, as for chat.
 */
export interface EmbeddingsAdapter {
  embed(req: EmbeddingRequest, target: ProviderTarget, signal: AbortSignal): Promise<EmbeddingResult>;
}
