// A Gemini `GenerateContentResponse` as the internal result: thought parts are reasoning, function
// calls are tool calls (with ids made up when Gemini gives none), finish reasons and usage are
// normalized. The streaming translation (stream.ts) reuses the same small mappings.
import { randomBytes } from 'node:crypto';
import type {
  FinishReason,
  InferenceRequest,
  InferenceResult,
  TokenLogprob,
  ToolCall,
  Usage,
} from '../../core/types.js';
import type { GeminiCandidate, GeminiFunctionCall, GeminiResponse, GeminiUsageMetadata } from './wire.js';

/** Gemini's reasons for stopping that mean "the output was filtered". */
const FILTERED = new Set([
  'SAFETY',
  'RECITATION',
  'BLOCKLIST',
  'PROHIBITED_CONTENT',
  'SPII',
  'IMAGE_SAFETY',
  'IMAGE_PROHIBITED_CONTENT',
  'IMAGE_RECITATION',
]);

/**
 * STOP is 'tool_calls' when the reply called functions (Gemini says STOP either way); MAX_TOKENS is
 * 'length'; the filters are 'content_filter'. The rest (OTHER, LANGUAGE, MALFORMED_FUNCTION_CALL,
 * ...) end the reply without a better name: 'stop', with whatever content came.
 */
export function finishReason(reason: string | undefined, calledTools: boolean): FinishReason {
  if (reason === 'MAX_TOKENS') return 'length';
  if (reason && FILTERED.has(reason)) return 'content_filter';
  return calledTools ? 'tool_calls' : 'stop';
}

/**
 * `promptTokenCount` already includes the cached tokens; tool-use prompt tokens (results the API
 * fed back itself) are input too; completion = visible output + thoughts.
 */
export function usage(u: GeminiUsageMetadata | undefined): Usage | null {
  if (!u) return null;
  const thoughts = u.thoughtsTokenCount ?? 0;
  return {
    promptTokens: (u.promptTokenCount ?? 0) + (u.toolUsePromptTokenCount ?? 0),
    cachedTokens: u.cachedContentTokenCount ?? 0,
    cacheWriteTokens: 0,
    completionTokens: (u.candidatesTokenCount ?? 0) + thoughts,
    reasoningTokens: thoughts,
  };
}

/** Gemini 2.x function calls carry no id; ours must be unique within the conversation. */
export function toolCallId(call: GeminiFunctionCall, index: number): string {
  return call.id || `call_${index}_${randomBytes(9).toString('base64url')}`;
}

function toolCall(call: GeminiFunctionCall, index: number): ToolCall {
  return { id: toolCallId(call, index), name: call.name, arguments: JSON.stringify(call.args ?? {}) };
}

export function logprobs(c: GeminiCandidate | undefined): TokenLogprob[] | undefined {
  const chosen = c?.logprobsResult?.chosenCandidates;
  if (!chosen?.length) return undefined;
  const top = c?.logprobsResult?.topCandidates ?? [];
  return chosen.map((t, i) => ({
    token: t.token ?? '',
    logprob: t.logProbability ?? 0,
    topLogprobs: (top[i]?.candidates ?? []).map((a) => ({ token: a.token ?? '', logprob: a.logProbability ?? 0 })),
  }));
}

export function fromGeminiResponse(res: GeminiResponse, req: InferenceRequest): InferenceResult {
  const candidate = res.candidates?.[0];
  let content = '';
  let reasoning = '';
  const toolCalls: ToolCall[] = [];
  for (const part of candidate?.content?.parts ?? []) {
    if (part.functionCall) toolCalls.push(toolCall(part.functionCall, toolCalls.length));
    else if (typeof part.text === 'string') {
      if (part.thought) reasoning += part.text;
      else content += part.text;
    }
  }
  // A prompt blocked before generation has no candidate at all, only promptFeedback.blockReason.
  const reason =
    !candidate && res.promptFeedback?.blockReason
      ? 'content_filter'
      : finishReason(candidate?.finishReason, toolCalls.length > 0);
  const result: InferenceResult = { content, toolCalls, finishReason: reason, usage: usage(res.usageMetadata) };
  if (reasoning && !req.reasoning?.exclude) result.reasoning = reasoning;
  const lp = req.sampling.logprobs ? logprobs(candidate) : undefined;
  if (lp) result.logprobs = lp;
  if (res.responseId) result.upstreamId = res.responseId;
  return result;
}
