// Counting a prompt's input tokens without generating anything (POST /v1/messages/count_tokens):
// the tokenCount capability's contract. Optional: for a route whose protocol has none, or whose
// counter answers nothing, the gateway answers its documented estimate (billing/pricing.ts).
import type { InferenceRequest } from '../../core/types.js';
import type { ProviderTarget } from './target.js';

export interface TokenCountAdapter {
  /**
   * The input tokens `req` (its upstream model already set) takes on this route. Undefined when
   * the upstream cannot count just now (no key configured, its counter failed or refused): the
   * estimate answers instead, as the route documents. A failure of the gateway's own counting (a
   * local tokenizer that will not load) is thrown: it is a fault, not an estimate.
   */
  count(req: InferenceRequest, target: ProviderTarget, signal: AbortSignal): Promise<number | undefined>;
}
