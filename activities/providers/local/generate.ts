// One generation on a local model: borrow a context sequence, reuse whatever prefix of the prompt
// it already holds, sample token by token (llama.cpp computes on its own threads), decode the
// text with its context, watch the stop conditions, and give the sequence back however it ends.
//
// Logprobs are llama.cpp's probabilities for the next token in the distribution the token was
// drawn from: under greedy decoding (temperature 0) the model's whole softmax; with sampling, the
// distribution after top-k / top-p / min-p and temperature (what the chosen token's chance really
// was). Penalties and logit_bias, when asked for, apply before either.
import type { LlamaContextSequence, Token } from 'node-llama-cpp';
import type { FinishReason, InferenceRequest, TokenLogprob, Usage } from '../../core/types.js';
import { PROVIDER_ID } from './engine.js';
import type { LocalModel } from './engine.js';
import type { Prompt } from './prompt.js';
import { samplerOptions } from './sampling.js';
import { StopMatcher } from '../stops.js';
import type { Piece } from '../stops.js';
import { RequestError, upstreamError } from '../../core/errors.js';

export interface GenerationEnd {
  finishReason: FinishReason;
  /** the request's stop sequence that ended the answer (not the chat template's own end markers) */
  stopSequence?: string;
  usage: Usage;
}

/** Tokens of context given to the detokenizer, so a token keeps its leading space. */
const DETOKENIZE_CONTEXT = 16;
/** A character split over byte tokens is at most 4 bytes: wait at most that long for the rest. */
const MAX_BYTE_TOKENS = 4;
/** The floor for a probability of 0, as OpenAI reports very unlikely tokens. */
const MIN_LOGPROB = -9999;
const MAX_TOP_LOGPROBS = 20;

/** One sampled token; confidence (its probability) and the distribution only when asked for. */
interface Sampled {
  token: Token;
  confidence?: number;
  /** the next-token distribution, most likely first */
  probabilities?: Map<Token, number>;
}

export function abortError(signal: AbortSignal): RequestError {
  if ((signal.reason as Error | undefined)?.name === 'TimeoutError') {
    return upstreamError('the local model did not finish in time', 504, true, {
      code: 'upstream_timeout',
      providerId: PROVIDER_ID,
    });
  }
  return upstreamError(`request to ${PROVIDER_ID} was aborted`, 499, false, {
    code: 'aborted',
    providerId: PROVIDER_ID,
  });
}

const logprobOf = (p: number | undefined) => (p && p > 0 ? Math.max(Math.log(p), MIN_LOGPROB) : MIN_LOGPROB);

function bytesOf(text: string): number[] | null {
  return text.includes('\uFFFD') ? null : [...Buffer.from(text, 'utf8')];
}

/** Whether the output part of `tokens` (its last `outputLength`) ends with `seq`. */
function endsWith(tokens: Token[], seq: Token[], outputLength: number): boolean {
  if (seq.length === 0 || seq.length > outputLength) return false;
  const from = tokens.length - seq.length;
  return seq.every((t, i) => tokens[from + i] === t);
}

function assertFits(lm: LocalModel, prompt: Prompt, maxTokens: number): void {
  if (prompt.tokens.length + maxTokens > lm.contextSize) {
    throw upstreamError(
      `this request needs ${prompt.tokens.length + maxTokens} tokens (${prompt.tokens.length} in the prompt + ${maxTokens} max output), ` +
        `more than the local model's context of ${lm.contextSize}`,
      400,
      false,
      { code: 'context_length_exceeded', providerId: PROVIDER_ID },
    );
  }
}

/**
 * Keep the sequence's state for the longest shared prefix and return how many prompt tokens that
 * covers. At least the last prompt token is always evaluated again: its logits start the answer.
 */
async function reusePrefix(seq: LlamaContextSequence, tokens: Token[]): Promise<number> {
  const keep = Math.min(seq.compareContextTokens(tokens).firstDifferentIndex, tokens.length - 1);
  if (keep >= seq.nextTokenIndex) return keep;
  try {
    await seq.eraseContextTokenRanges([{ start: keep, end: seq.nextTokenIndex }]);
    return keep;
  } catch {
    await seq.clearHistory(); // a model whose state cannot be cut: start over
    return 0;
  }
}

/** A sampled token's logprob entry, with its `topN` likeliest alternatives (`text`: a token as text). */
function tokenLogprob(sampled: Sampled, topN: number, text: (t: Token) => string): TokenLogprob {
  const own = text(sampled.token);
  const entry: TokenLogprob = { token: own, logprob: logprobOf(sampled.confidence), bytes: bytesOf(own) };
  if (topN > 0) {
    entry.topLogprobs = [];
    for (const [alt, p] of sampled.probabilities ?? []) {
      if (entry.topLogprobs.length >= topN) break;
      const altText = text(alt);
      entry.topLogprobs.push({ token: altText, logprob: logprobOf(p), bytes: bytesOf(altText) });
    }
  }
  return entry;
}

/**
 * Generate the answer to `prompt`, handing each released piece of text to `onPiece` as soon as
 * it is final. Resolves with the finish reason and the real token counts.
 */
// biome-ignore lint/complexity/noExcessiveLinesPerFunction: one token loop; every step shares its state
export async function generate(
  lm: LocalModel,
  req: InferenceRequest,
  prompt: Prompt,
  signal: AbortSignal,
  onPiece: (piece: Piece) => void,
): Promise<GenerationEnd> {
  assertFits(lm, prompt, req.maxTokens);
  const seq = await lm.pool.acquire(prompt.tokens, signal).catch((err) => {
    throw signal.aborted ? abortError(signal) : err;
  });

  const history: Token[] = [...prompt.tokens];
  const wantLogprobs = !!req.sampling.logprobs;
  const topN = wantLogprobs ? Math.max(0, Math.min(req.sampling.topLogprobs ?? 0, MAX_TOP_LOGPROBS)) : 0;
  const stops = new StopMatcher(prompt.stopTexts);
  let decodedUpTo = history.length;
  let pendingLogprobs: TokenLogprob[] = [];
  let carry: TokenLogprob[] = []; // logprobs of released pieces that had no text: ride on the next text
  let completionTokens = 0;
  let finishReason: FinishReason = 'stop';
  let stoppedByText = false;
  let matched: string | null = null;

  const release = (pieces: Piece[]) => {
    for (const p of pieces) {
      if (p.text === '') {
        carry.push(...p.logprobs);
        continue;
      }
      onPiece({ text: p.text, logprobs: carry.length ? [...carry, ...p.logprobs] : p.logprobs });
      carry = [];
    }
  };
  const detokenize = (tokens: Token[], before: number) =>
    lm.model.detokenize(tokens, false, history.slice(Math.max(0, before - DETOKENIZE_CONTEXT), before));

  let onAbort = () => {};
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(abortError(signal));
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
  aborted.catch(() => {});

  let cached = 0;
  let reusing: Promise<unknown> = Promise.resolve();
  let it: AsyncGenerator<Sampled, void, unknown> | undefined;
  try {
    const reuse = reusePrefix(seq, prompt.tokens);
    reusing = reuse;
    cached = await Promise.race([reuse, aborted]);
    if (req.maxTokens <= 0) finishReason = 'length';
    else {
      const metadata = { confidence: wantLogprobs, probabilities: topN > 0 };
      it = seq.evaluateWithMetadata(
        prompt.tokens.slice(cached),
        metadata,
        samplerOptions(lm, req.sampling, () => history),
      ) as AsyncGenerator<Sampled, void, unknown>;
      for (;;) {
        let step: IteratorResult<Sampled, void>;
        try {
          step = await Promise.race([it.next(), aborted]);
        } catch (err) {
          if (err instanceof RequestError) throw err;
          throw upstreamError(`the local model failed while generating: ${(err as Error).message}`, 500, true, {
            code: 'local_inference_failed',
            providerId: PROVIDER_ID,
          });
        }
        if (step.done) break; // an end-of-generation token: a natural stop

        const { token } = step.value;
        const at = history.length;
        history.push(token);
        completionTokens++;
        if (wantLogprobs) pendingLogprobs.push(tokenLogprob(step.value, topN, (t) => detokenize([t], at)));

        // Decode what is pending; a character whose bytes are split over tokens waits for the rest.
        const text = detokenize(history.slice(decodedUpTo), decodedUpTo);
        if (!text.endsWith('\uFFFD') || history.length - decodedUpTo >= MAX_BYTE_TOKENS) {
          decodedUpTo = history.length;
          const { release: out, stopped } = stops.push({ text, logprobs: pendingLogprobs });
          pendingLogprobs = [];
          release(out);
          if (stopped !== null) {
            stoppedByText = true;
            matched = stopped;
            break;
          }
        }
        if (prompt.stopTokens.some((s) => endsWith(history, s, completionTokens))) break;
        if (completionTokens >= req.maxTokens) {
          finishReason = 'length';
          break;
        }
      }
    }
    if (!stoppedByText) {
      // the end: bytes still waiting, then text held back for a stop sequence that never came
      if (decodedUpTo < history.length) {
        const { release: out, stopped } = stops.push({
          text: detokenize(history.slice(decodedUpTo), decodedUpTo),
          logprobs: pendingLogprobs,
        });
        release(out);
        if (stopped !== null) {
          finishReason = 'stop';
          matched = stopped;
        }
      }
      release(stops.flush());
    }
    if (carry.length) onPiece({ text: '', logprobs: carry });
  } finally {
    signal.removeEventListener('abort', onAbort);
    // Ending the evaluation waits for a token still being computed; the sequence goes back after
    // that, so it is never lent while llama.cpp still writes to it. The caller need not wait.
    const busy = it ? it.return(undefined) : reusing;
    void busy.catch(() => {}).finally(() => lm.pool.release(seq));
  }

  const requested = matched !== null && (req.sampling.stop ?? []).includes(matched);
  return {
    finishReason,
    ...(requested ? { stopSequence: matched! } : {}),
    usage: {
      promptTokens: prompt.tokens.length,
      cachedTokens: cached,
      cacheWriteTokens: 0,
      completionTokens,
      reasoningTokens: 0,
    },
  };
}
