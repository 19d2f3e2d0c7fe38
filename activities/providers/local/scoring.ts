// Decision rows on a local model (family A, wire-details "Decisions"): each row's prompt ends at
// the answer slot `Answer: (`; llama.cpp evaluates it and gives the next-token probabilities of the
// whole vocabulary (no sampling, nothing generated); each option letter's log probability is read
// from them. The letters are the tokens the model itself writes after `(` in the option list.
//
// Batching: a request's rows share their beginning (the state, then the question), so they run on
// one borrowed sequence, one after another, each keeping the longest prefix the previous row left
// in the KV cache: the state is evaluated once per request, each row only its own end.
import type { LlamaModel, Token } from 'node-llama-cpp';
import { upstreamError } from '../../core/errors.js';
import type { ScoringAdapter, ScoringResult } from '../types.js';
import { localModel, PROVIDER_ID } from './engine.js';
import { abortError } from './generate.js';

/** The floor for a letter the model gives no probability at all (log 0), as generate.ts floors logprobs. */
const MIN_LOGPROB = -9999;

const letterTokens = new WeakMap<LlamaModel, Map<string, Token>>();

/**
 * The token of `letter` as it follows `(` (how the options are written), or a 503 naming the
 * letter when this tokenizer splits it (such a model cannot be a family A decision model).
 */
function letterToken(model: LlamaModel, letter: string): Token {
  let known = letterTokens.get(model);
  if (!known) {
    known = new Map();
    letterTokens.set(model, known);
  }
  const hit = known.get(letter);
  if (hit !== undefined) return hit;
  const open = model.tokenize('(');
  const withLetter = model.tokenize(`(${letter}`);
  const extra = withLetter.slice(open.length);
  if (extra.length !== 1 || withLetter.slice(0, open.length).some((t, i) => t !== open[i]))
    throw upstreamError(`the local model's tokenizer has no single token for the option letter ${letter}`, 503, false, {
      code: 'local_model_unsuitable',
      providerId: PROVIDER_ID,
    });
  known.set(letter, extra[0]);
  return extra[0];
}

export const localScoring: ScoringAdapter = {
  slot: 'completion',
  async score(req, target, signal): Promise<ScoringResult> {
    const sha256 = typeof target.options.sha256 === 'string' ? target.options.sha256 : undefined;
    const lm = await localModel(req.model, { sha256 });
    const bos = lm.model.tokens.bos;
    const prompts = req.rows.map((row) => {
      const tokens = lm.model.tokenize(row.prompt);
      const all = lm.model.tokens.shouldPrependBosToken && bos != null ? [bos, ...tokens] : tokens;
      if (all.length > lm.contextSize)
        throw upstreamError(
          `a scoring row needs ${all.length} tokens, more than the local model's context of ${lm.contextSize}; shorten the state or the question`,
          400,
          false,
          { code: 'context_length_exceeded', providerId: PROVIDER_ID },
        );
      return { tokens: all, letters: row.letters.map((l) => letterToken(lm.model, l)) };
    });
    const seq = await lm.pool.acquire(prompts[0]?.tokens ?? [], signal).catch((err) => {
      throw signal.aborted ? abortError(signal) : err;
    });
    let busy: Promise<unknown> = Promise.resolve();
    try {
      const scores: number[][] = [];
      let inputTokens = 0;
      for (const { tokens, letters } of prompts) {
        if (signal.aborted) throw abortError(signal);
        // keep what this row shares with what the sequence holds; the last token is always evaluated
        // again, since its logits are the answer
        const keep = Math.min(seq.compareContextTokens(tokens).firstDifferentIndex, tokens.length - 1);
        if (keep < seq.nextTokenIndex) await seq.eraseContextTokenRanges([{ start: keep, end: seq.nextTokenIndex }]);
        const rest = tokens.slice(keep);
        const evaluation = seq.controlledEvaluate(
          rest.map((t, i) => (i === rest.length - 1 ? [t, { generateNext: { probabilities: true } }] : t)),
        );
        busy = evaluation;
        const out = await evaluation;
        const probabilities = out[rest.length - 1]?.next.probabilities;
        if (!probabilities)
          throw upstreamError('the local model gave no next-token probabilities', 500, true, {
            code: 'local_inference_failed',
            providerId: PROVIDER_ID,
          });
        scores.push(
          letters.map((t) => {
            const p = probabilities.get(t) ?? 0;
            return p > 0 ? Math.max(Math.log(p), MIN_LOGPROB) : MIN_LOGPROB;
          }),
        );
        inputTokens += tokens.length;
      }
      return { scores, inputTokens, outputTokens: 0 };
    } finally {
      // the sequence goes back once llama.cpp no longer writes to it
      void busy.catch(() => {}).finally(() => lm.pool.release(seq));
    }
  },
};
