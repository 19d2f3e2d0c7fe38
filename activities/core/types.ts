// The one internal request every text surface (chat completions, messages, responses, legacy
// completions) is translated into, and the one result/stream shape every provider adapter
// produces. Surfaces translate at the edge; providers translate to their wire protocol. Nothing in
// between knows either.

type Role = 'system' | 'user' | 'assistant' | 'tool';

/**
 * A prompt-cache breakpoint (Anthropic's `cache_control`, also accepted on chat content parts as
 * OpenRouter does): the prompt up to and including the part it marks may be cached. Upstreams
 * that cache automatically (OpenAI) or not at all ignore it.
 */
export interface CacheControl {
  type: 'ephemeral';
  ttl?: '5m' | '1h';
}

export type ContentPart =
  | { type: 'text'; text: string; cacheControl?: CacheControl }
  /** `url` is http(s) or a data: URL; `data` is base64 with its `mediaType` */
  | {
      type: 'image';
      url?: string;
      data?: string;
      mediaType?: string;
      detail?: 'auto' | 'low' | 'high';
      cacheControl?: CacheControl;
    }
  | { type: 'document'; data: string; mediaType: string; title?: string; cacheControl?: CacheControl };

/**
 * A block of a model's reasoning as its upstream signed it (Anthropic): sent back unchanged in
 * the assistant turn, it lets thinking stay on across a tool loop. `redacted` is the opaque data
 * of a `redacted_thinking` block.
 */
export type ThinkingBlock = { text: string; signature: string } | { redacted: string };

export interface ToolCall {
  id: string;
  name: string;
  /** JSON text, exactly as the model produced it */
  arguments: string;
}

export interface Message {
  role: Role;
  content: ContentPart[];
  /** assistant turns that called tools */
  toolCalls?: ToolCall[];
  /** assistant turns: the signed reasoning that preceded the content (Anthropic thinking blocks) */
  thinking?: ThinkingBlock[];
  /** tool results: which call this answers */
  toolCallId?: string;
  name?: string;
}

export interface ToolSpec {
  name: string;
  description?: string;
  /** JSON Schema of the arguments */
  parameters?: Record<string, unknown>;
  cacheControl?: CacheControl;
}

export type ToolChoice = 'auto' | 'none' | 'required' | { name: string };

export type ResponseFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | { type: 'json_schema'; name: string; schema: Record<string, unknown>; strict?: boolean; description?: string };

export type ReasoningEffort = 'none' | 'low' | 'medium' | 'high' | 'xhigh' | 'max';

export interface ReasoningOptions {
  /** ask the model to think (":thinking", Anthropic `thinking`, OpenAI `reasoning_effort`) */
  enabled?: boolean;
  effort?: ReasoningEffort;
  budgetTokens?: number;
  /** think, but do not return the reasoning text to the caller (":reasoning-exclude") */
  exclude?: boolean;
}

export interface Sampling {
  temperature?: number;
  topP?: number;
  topK?: number;
  minP?: number;
  frequencyPenalty?: number;
  presencePenalty?: number;
  repetitionPenalty?: number;
  seed?: number;
  stop?: string[];
  logitBias?: Record<string, number>;
  /** return log probabilities of the output tokens; `topLogprobs` alternatives each */
  logprobs?: boolean;
  topLogprobs?: number;
  /**
   * Self-hosted servers' own controls (legacy completions: `top_a`, `tfs`, `mirostat_mode`,
   * `min_tokens`, `stop_token_ids`, ...), by their wire names. Sent only to upstreams whose quirks
   * list the name (vLLM, llama.cpp server); every other upstream never sees them.
   */
  vendor?: Record<string, unknown>;
}

export interface InferenceRequest {
  /** the model's name AT THE UPSTREAM (the planner sets it per route) */
  model: string;
  /** system turns first, then the conversation */
  messages: Message[];
  tools?: ToolSpec[];
  toolChoice?: ToolChoice;
  parallelToolCalls?: boolean;
  responseFormat?: ResponseFormat;
  /** cap on output tokens (reasoning included); always set by the caller */
  maxTokens: number;
  sampling: Sampling;
  reasoning?: ReasoningOptions;
  /** a raw prompt instead of messages (legacy completions); providers that cannot take one get it as a user turn */
  prompt?: string;
  user?: string;
  /** the model provider's own web search (`provider: "native"`), for routes that offer it */
  webSearch?: { contextSize?: 'low' | 'medium' | 'high'; maxUses?: number };
}

/**
 * Token counts, normalized once. `promptTokens` INCLUDES cached and cache-write tokens (the
 * OpenAI convention); an Anthropic adapter adds its `cache_read_input_tokens` and
 * `cache_creation_input_tokens` to `input_tokens` to get it. `completionTokens` includes reasoning.
 */
export interface Usage {
  promptTokens: number;
  cachedTokens: number;
  cacheWriteTokens: number;
  /** of the cache writes, those kept for an hour (Anthropic's `ttl: '1h'`, priced higher), when reported */
  cacheWrite1hTokens?: number;
  completionTokens: number;
  reasoningTokens: number;
  /** searches a native web search ran, when the upstream counts them (Anthropic's server_tool_use) */
  webSearchRequests?: number;
}

export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter';

export interface TokenLogprob {
  token: string;
  logprob: number;
  bytes?: number[] | null;
  topLogprobs?: Array<{ token: string; logprob: number; bytes?: number[] | null }>;
}

export interface InferenceResult {
  content: string;
  reasoning?: string;
  toolCalls: ToolCall[];
  finishReason: FinishReason;
  /** the stop sequence that ended the answer, when the upstream says which */
  stopSequence?: string;
  /** the reasoning as signed blocks, when the upstream signs it (Anthropic) */
  thinkingBlocks?: ThinkingBlock[];
  /** null when the upstream did not report usage (the caller then counts it) */
  usage: Usage | null;
  logprobs?: TokenLogprob[];
  /** the upstream's own id for the generation, when it gives one */
  upstreamId?: string;
  /**
   * sha256 (hex) of the exact request body sent and response body received, for upstreams that
   * sign their answers over them (TEE models; the gateway checks the signature against these)
   */
  bodyDigests?: { request: string; response: string };
  /** pass-through: the upstream's answer exactly as it came (see NativeRequest) */
  native?: Record<string, unknown>;
  /** native web search: the sources the upstream cited, as spans of `content` */
  citations?: Array<{ url: string; title: string; start_index: number; end_index: number }>;
}

/** What a streaming adapter yields, in order; `finish` and `usage` come last (either order). */
export type StreamEvent =
  | { type: 'text'; text: string; logprobs?: TokenLogprob[] }
  | { type: 'reasoning'; text: string }
  /** the first delta of a call carries id and name; later ones only more argument text */
  | { type: 'tool_call'; index: number; id?: string; name?: string; argumentsDelta: string }
  /** a thinking block is complete: its signature (or, for a redacted block, its data) */
  | { type: 'reasoning_signature'; signature: string }
  | { type: 'reasoning_redacted'; data: string }
  | { type: 'finish'; reason: FinishReason; stopSequence?: string }
  | { type: 'usage'; usage: Usage }
  /**
   * Pass-through: one SSE frame of the upstream's own stream, as it came (`json`: its data,
   * parsed). Native frames come before the events derived from them; a surface that relays
   * the native frames ignores the derived ones, which exist for billing. A frame that only
   * continues the text is not parsed and has no derived events: `text` is that text, billed as
   * a `text` event would be (one event per frame instead of two, on a stream's hottest path).
   */
  // biome-ignore lint/suspicious/noExplicitAny: wire JSON
  | { type: 'native'; event?: string; data: string; json?: any; text?: string };

/**
 * The caller's body in a wire format some upstreams speak natively. When the route's adapter
 * speaks it, the body goes upstream as the caller wrote it, with only the gateway's edits
 * (upstream model name, output cap, stream usage, vendor quirks); other routes get the
 * translated internal request. `body` has had the gateway-only fields removed by its surface.
 */
export type NativeFormat = 'anthropic-messages' | 'openai-chat';
export interface NativeRequest {
  format: NativeFormat;
  body: Record<string, unknown>;
}

/** A text request body once its schema has passed: wire JSON, read field by field by its surface. */
// biome-ignore lint/suspicious/noExplicitAny: the surface's translation checks every field it reads
export type TextBody = Record<string, any>;
