// The request's sampling knobs as llama.cpp sampler options. What the caller leaves unset gets
// llama.cpp's own defaults (temperature 0.8, top-k 40, top-p 0.95, min-p 0.05), the upstream
// default, as for every other provider. Temperature 0 is greedy decoding.
import { randomInt } from 'node:crypto';
import type { SequenceEvaluateOptions, Token, TokenBias } from 'node-llama-cpp';
import { llamaLib } from './llama.js';
import type { Sampling } from '../../core/types.js';
import { PROVIDER_ID } from './engine.js';
import type { LocalModel } from './engine.js';
import { upstreamError } from '../../core/errors.js';

const DEFAULTS = { temperature: 0.8, topK: 40, topP: 0.95, minP: 0.05 };

/** How many recent tokens (prompt and output) the repetition penalties look at, as in llama.cpp. */
const PENALTY_WINDOW = 64;

/**
 * Evaluate options for one generation. `history` is read at every step (prompt + output so far)
 * for the repetition penalties.
 */
export function samplerOptions(lm: LocalModel, s: Sampling, history: () => Token[]): SequenceEvaluateOptions {
  const temperature = s.temperature ?? DEFAULTS.temperature;
  const opts: SequenceEvaluateOptions = {
    temperature,
    // top-k 0 = off in llama.cpp; top-p 1 and min-p 0 are no-ops
    topK: s.topK ?? DEFAULTS.topK,
    topP: s.topP ?? DEFAULTS.topP,
    minP: s.minP ?? DEFAULTS.minP,
    // node-llama-cpp would seed from the clock in seconds: two unseeded requests in the same second
    // would then sample the same text
    seed: s.seed ?? randomInt(2 ** 31),
  };
  const penalty = s.repetitionPenalty ?? 1;
  const frequency = s.frequencyPenalty ?? 0;
  const presence = s.presencePenalty ?? 0;
  if (penalty !== 1 || frequency !== 0 || presence !== 0) {
    opts.repeatPenalty = {
      punishTokens: () => history().slice(-PENALTY_WINDOW),
      maxPunishTokens: PENALTY_WINDOW,
      penalty,
      frequencyPenalty: frequency,
      presencePenalty: presence,
    };
  }
  if (s.logitBias && Object.keys(s.logitBias).length > 0) opts.tokenBias = tokenBias(lm, s.logitBias);
  return opts;
}

/** OpenAI's logit_bias: token id → value added to its logit (-100 bans it, +100 all but forces it). */
function tokenBias(lm: LocalModel, bias: Record<string, number>): TokenBias {
  const vocab = lm.model.fileInfo.metadata?.tokenizer?.ggml?.tokens?.length ?? Infinity;
  const out = new (llamaLib().TokenBias)(lm.model.tokenizer);
  for (const [key, value] of Object.entries(bias)) {
    const id = Number(key);
    if (!Number.isInteger(id) || id < 0 || id >= vocab) {
      throw upstreamError(
        `logit_bias names token ${key}, which is not in this model's vocabulary (0..${vocab - 1})`,
        400,
        false,
        {
          code: 'invalid_logit_bias',
          providerId: PROVIDER_ID,
        },
      );
    }
    out.set(id as Token, { logit: value });
  }
  return out;
}
