// Next-token scoring (decision models, family A): the scoring capability's contract.
import type { ProviderTarget } from './target.js';

/** One scoring row: its whole prompt (ending as the adapter's `slot` says) and its option letters. */
export interface ScoringRow {
  prompt: string;
  /** the valid answers, in option order: 'A', 'B', … */
  letters: string[];
}

export interface ScoringResult {
  /** per row, the next-token log probability of each letter, in option order */
  scores: number[][];
  /** the prompt tokens evaluated (every row's whole prompt, as an upstream would bill them) */
  inputTokens: number;
  /** tokens generated: 0 from a model read in-process, 1 a row from an upstream that must sample one */
  outputTokens: number;
}

/**
 * Next-token scores of option letters, nothing generated (wire-details "Decisions"). `slot`: how
 * the rows' prompts must end for this protocol: 'completion' at the letter itself (`Answer: (`),
 * 'chat' with an instruction to answer with the letter (the reply's first token is read).
 * The whole request answers or fails together; failures are RequestErrors, as for chat.
 */
export interface ScoringAdapter {
  readonly slot: 'completion' | 'chat';
  score(
    req: { model: string; rows: ScoringRow[] },
    target: ProviderTarget,
    signal: AbortSignal,
  ): Promise<ScoringResult>;
}
