// A Messages API answer (`type:"message"`) as an InferenceResult, plus the two mappings the
// stream shares: stop reasons and usage.
import type { FinishReason, InferenceResult, ThinkingBlock, ToolCall, Usage } from '../../core/types.js';
import type { JsonTool, MessagesPlan } from './request.js';

const STOP_REASONS: Record<string, FinishReason> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  // a server tool paused a long turn; what came so far is a complete answer for our callers
  pause_turn: 'stop',
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  tool_use: 'tool_calls',
  refusal: 'content_filter',
};

/** `hasToolCalls` false with stop_reason tool_use means only the JSON-mode tool was called. */
export function finishReasonOf(stopReason: unknown, hasToolCalls: boolean): FinishReason {
  const reason = STOP_REASONS[String(stopReason)] ?? 'stop';
  return reason === 'tool_calls' && !hasToolCalls ? 'stop' : reason;
}

// Anthropic's wire usage. Its `input_tokens` EXCLUDES cache reads and writes.
export interface AnthropicUsage {
  input_tokens?: number | null;
  output_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  /** the cache writes by lifetime (5-minute and 1-hour breakpoints are priced differently) */
  cache_creation?: { ephemeral_5m_input_tokens?: number | null; ephemeral_1h_input_tokens?: number | null } | null;
  output_tokens_details?: { thinking_tokens?: number | null } | null;
  /** server tools run in the turn (the web search tool's count) */
  server_tool_use?: { web_search_requests?: number | null } | null;
}

/** Normalized usage: promptTokens includes cache reads and writes; completionTokens includes thinking. */
export function toUsage(u: AnthropicUsage | null | undefined): Usage | null {
  if (!u || (u.input_tokens == null && u.output_tokens == null)) return null;
  const cacheRead = u.cache_read_input_tokens ?? 0;
  const cacheWrite = u.cache_creation_input_tokens ?? 0;
  return {
    promptTokens: (u.input_tokens ?? 0) + cacheRead + cacheWrite,
    cachedTokens: cacheRead,
    cacheWriteTokens: cacheWrite,
    ...(u.cache_creation?.ephemeral_1h_input_tokens
      ? { cacheWrite1hTokens: Math.min(cacheWrite, u.cache_creation.ephemeral_1h_input_tokens) }
      : {}),
    completionTokens: u.output_tokens ?? 0,
    // Anthropic folds thinking into output_tokens; only newer answers break it out
    reasoningTokens: u.output_tokens_details?.thinking_tokens ?? 0,
    ...(Number.isInteger(u.server_tool_use?.web_search_requests)
      ? { webSearchRequests: u.server_tool_use!.web_search_requests! }
      : {}),
  };
}

/** The JSON text a JSON-mode tool call carries, unwrapped when its schema was wrapped. */
export function jsonToolText(tool: JsonTool, input: unknown): string {
  const value =
    tool.wrapped && input !== null && typeof input === 'object' ? (input as { value?: unknown }).value : input;
  return JSON.stringify(value ?? null);
}

interface ContentBlock {
  type: string;
  text?: string;
  thinking?: string;
  signature?: string;
  data?: string;
  id?: string;
  name?: string;
  input?: unknown;
  /** a text block's sources (native web search: `web_search_result_location`s) */
  citations?: Array<{ type?: string; url?: string; title?: string }> | null;
}

export function fromMessage(
  msg: {
    id?: string;
    content: ContentBlock[];
    stop_reason?: string | null;
    stop_sequence?: string | null;
    usage?: AnthropicUsage;
  },
  plan: MessagesPlan,
): InferenceResult {
  let content = '';
  let reasoning = '';
  let json: string | undefined;
  const toolCalls: ToolCall[] = [];
  const thinkingBlocks: ThinkingBlock[] = [];
  const citations: NonNullable<InferenceResult['citations']> = [];
  for (const block of msg.content) {
    if (block.type === 'text') {
      const start = content.length;
      content += block.text ?? '';
      // a native web search's sources cite the whole text block they are on
      for (const c of block.citations ?? [])
        if (c?.type === 'web_search_result_location' && typeof c.url === 'string')
          citations.push({ url: c.url, title: c.title ?? '', start_index: start, end_index: content.length });
    } else if (block.type === 'thinking') {
      reasoning += block.thinking ?? '';
      if (typeof block.signature === 'string' && block.signature)
        thinkingBlocks.push({ text: block.thinking ?? '', signature: block.signature });
    } else if (block.type === 'redacted_thinking' && typeof block.data === 'string')
      thinkingBlocks.push({ redacted: block.data });
    else if (block.type === 'tool_use' && plan.jsonTool && block.name === plan.jsonTool.name)
      json = jsonToolText(plan.jsonTool, block.input);
    else if (block.type === 'tool_use')
      toolCalls.push({ id: String(block.id), name: String(block.name), arguments: JSON.stringify(block.input ?? {}) });
    // server tool blocks and future block types carry nothing for our callers
  }
  return {
    // a JSON-mode answer must parse, so any text the model wrote before the call is dropped
    content: json ?? content,
    ...(reasoning && !plan.hideReasoning ? { reasoning } : {}),
    ...(thinkingBlocks.length && !plan.hideReasoning ? { thinkingBlocks } : {}),
    toolCalls,
    finishReason: finishReasonOf(msg.stop_reason, toolCalls.length > 0),
    ...(msg.stop_reason === 'stop_sequence' && typeof msg.stop_sequence === 'string'
      ? { stopSequence: msg.stop_sequence }
      : {}),
    usage: toUsage(msg.usage),
    ...(msg.id ? { upstreamId: msg.id } : {}),
    ...(citations.length && !json ? { citations } : {}),
  };
}
