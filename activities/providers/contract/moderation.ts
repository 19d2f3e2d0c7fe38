// Moderation: the moderation capability's contract.
import type { ProviderTarget } from './target.js';

/** One input's verdict, as OpenAI's moderations API words it (category names are the upstream's). */
export interface ModerationVerdict {
  flagged: boolean;
  categories: Record<string, boolean>;
  category_scores: Record<string, number>;
  /** which input types each category was judged on (omni models); passed through when present */
  category_applied_input_types?: Record<string, string[]>;
}

/**
 * Texts in, one verdict per text out, in order. A partial or malformed answer is the route's
 * failure (retryable: the next route is tried), never a verdict of "not flagged".
 */
export interface ModerationAdapter {
  classify(
    req: { model: string; input: string[] },
    target: ProviderTarget,
    signal: AbortSignal,
  ): Promise<ModerationVerdict[]>;
}
