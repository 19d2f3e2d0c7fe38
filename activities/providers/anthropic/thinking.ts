// Extended thinking: how our reasoning options become Anthropic's `thinking` block, and the
// sampling rules Anthropic enforces while it is on.
import type { InferenceRequest, ReasoningEffort } from '../../core/types.js';

/** Anthropic rejects a smaller budget, and the budget must stay below `max_tokens`. */
const MIN_THINKING_BUDGET = 1024;

/**
 * Share of `max_tokens` given to thinking when only an effort is asked for (the rest is left for
 * the answer). `enabled` with neither effort nor budget means medium. The result is clamped to
 * [1024, max_tokens - 1].
 */
const EFFORT_BUDGET_SHARE: Record<Exclude<ReasoningEffort, 'none'>, number> = {
  low: 0.2,
  medium: 0.5,
  high: 0.8,
  xhigh: 0.9,
  max: 0.95,
};

export interface ThinkingConfig {
  type: 'enabled';
  budget_tokens: number;
}

/**
 * The `thinking` block for a request, or undefined when thinking stays off: not asked for, effort
 * 'none', or `max_tokens` too small to hold the minimum budget (we never raise `max_tokens`: it is
 * the caller's cost cap, so thinking is dropped instead of failing the request).
 */
export function thinkingFor(req: InferenceRequest): ThinkingConfig | undefined {
  const r = req.reasoning;
  if (!r || r.enabled === false || r.effort === 'none') return undefined;
  const asked = r.enabled === true || r.effort !== undefined || (r.budgetTokens ?? 0) > 0 || r.exclude === true;
  if (!asked) return undefined;
  if (req.maxTokens <= MIN_THINKING_BUDGET) return undefined;
  const wanted =
    r.budgetTokens && r.budgetTokens > 0
      ? r.budgetTokens
      : Math.floor(req.maxTokens * EFFORT_BUDGET_SHARE[(r.effort ?? 'medium') as Exclude<ReasoningEffort, 'none'>]);
  return { type: 'enabled', budget_tokens: Math.min(Math.max(wanted, MIN_THINKING_BUDGET), req.maxTokens - 1) };
}

/**
 * Sampling as Anthropic takes it. Its temperature range is 0..1 (OpenAI's is 0..2), so higher
 * values are clamped rather than rejected. With thinking on, Anthropic rejects any temperature
 * but 1, any top_k, and top_p below 0.95: those are left out (the upstream default applies).
 */
export function samplingFor(req: InferenceRequest, thinking: boolean): Record<string, unknown> {
  const s = req.sampling ?? {};
  const out: Record<string, unknown> = {};
  if (s.temperature !== undefined) {
    const t = Math.min(Math.max(s.temperature, 0), 1);
    if (!thinking || t === 1) out.temperature = t;
  }
  if (s.topP !== undefined && (!thinking || s.topP >= 0.95)) out.top_p = s.topP;
  if (s.topK !== undefined && !thinking) out.top_k = s.topK;
  // Anthropic rejects stop sequences that are only whitespace
  const stops = (s.stop ?? []).filter((x) => x.trim() !== '');
  if (stops.length) out.stop_sequences = stops;
  return out;
}
