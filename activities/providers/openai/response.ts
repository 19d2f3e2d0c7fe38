// biome-ignore-all lint/suspicious/noExplicitAny: wire JSON, checked field by field
// OpenAI wire answers -> internal results and stream events. Read tolerantly: the vendors behind
// this protocol agree on the core and differ at the edges (the reasoning field's name, where the
// usage arrives, finish reasons such as "eos"), and every difference is absorbed here.
import { randomBytes } from 'node:crypto';
import type { FinishReason, InferenceResult, StreamEvent, TokenLogprob, ToolCall, Usage } from '../../core/types.js';
import { type RequestError, upstreamError, isRetryableStatus } from '../../core/errors.js';

const finishReasons: Record<string, FinishReason> = {
  stop: 'stop',
  eos: 'stop',
  eos_token: 'stop',
  end_turn: 'stop',
  stop_sequence: 'stop',
  length: 'length',
  max_tokens: 'length',
  model_length: 'length',
  tool_calls: 'tool_calls',
  function_call: 'tool_calls',
  tool_use: 'tool_calls',
  content_filter: 'content_filter',
  safety: 'content_filter',
};

/** Unknown or missing reasons read as "stop"; some servers say "stop" after a tool call, which is really "tool_calls". */
function toFinishReason(raw: unknown, calledTools: boolean): FinishReason {
  const r = (typeof raw === 'string' && finishReasons[raw]) || 'stop';
  return r === 'stop' && calledTools ? 'tool_calls' : r;
}

const count = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);

/** OpenAI's usage already counts cached tokens inside prompt_tokens and reasoning inside completion_tokens. */
function toUsage(u: any): Usage | null {
  if (!u || typeof u !== 'object' || (u.prompt_tokens === undefined && u.completion_tokens === undefined)) return null;
  return {
    promptTokens: count(u.prompt_tokens),
    // DeepSeek-style servers report the cache hit at the top level
    cachedTokens: count(u.prompt_tokens_details?.cached_tokens) || count(u.prompt_cache_hit_tokens),
    // OpenRouter reports cache writes (Anthropic/Gemini upstreams) here
    cacheWriteTokens: count(u.prompt_tokens_details?.cache_write_tokens),
    completionTokens: count(u.completion_tokens),
    reasoningTokens: count(u.completion_tokens_details?.reasoning_tokens),
  };
}

/** `logprobs.content` of a chat choice (or chunk). */
function toLogprobs(content: unknown): TokenLogprob[] | undefined {
  if (!Array.isArray(content)) return undefined;
  return content.map((t: any) => ({
    token: String(t.token ?? ''),
    logprob: count(t.logprob),
    bytes: Array.isArray(t.bytes) ? t.bytes : null,
    topLogprobs: Array.isArray(t.top_logprobs)
      ? t.top_logprobs.map((a: any) => ({
          token: String(a.token ?? ''),
          logprob: count(a.logprob),
          bytes: Array.isArray(a.bytes) ? a.bytes : null,
        }))
      : [],
  }));
}

/** The legacy /completions shape: parallel arrays `tokens`, `token_logprobs`, `top_logprobs` (token -> logprob maps). */
function fromLegacyLogprobs(lp: any): TokenLogprob[] | undefined {
  if (!lp || !Array.isArray(lp.tokens)) return undefined;
  return lp.tokens.map((token: unknown, i: number) => {
    const top = Array.isArray(lp.top_logprobs) ? lp.top_logprobs[i] : null;
    return {
      token: String(token),
      // null only for an echoed first prompt token, which has no probability; we never echo
      logprob: count(lp.token_logprobs?.[i]),
      topLogprobs:
        top && typeof top === 'object' ? Object.entries(top).map(([t, l]) => ({ token: t, logprob: count(l) })) : [],
    };
  });
}

const newCallId = () => `call_${randomBytes(12).toString('hex')}`;

function toToolCalls(raw: unknown): ToolCall[] {
  if (!Array.isArray(raw)) return [];
  return raw.map((c: any) => ({
    // some self-hosted servers omit ids; the conversation needs one to answer the call
    id: typeof c.id === 'string' && c.id ? c.id : newCallId(),
    name: String(c.function?.name ?? ''),
    arguments: argumentsText(c.function?.arguments),
  }));
}

// Arguments are JSON text on the wire; a few servers send the object itself.
const argumentsText = (a: unknown): string =>
  typeof a === 'string' ? a : a === undefined || a === null ? '' : JSON.stringify(a);

/** vLLM (new and old), DeepSeek and OpenRouter name it differently; vLLM may send both with the same text. */
function reasoningOf(m: any): string | undefined {
  if (typeof m?.reasoning_content === 'string') return m.reasoning_content;
  if (typeof m?.reasoning === 'string') return m.reasoning;
  return undefined;
}

const statusByType: Record<string, number> = {
  invalid_request_error: 400,
  authentication_error: 401,
  permission_error: 403,
  not_found_error: 404,
  rate_limit_error: 429,
  rate_limit_exceeded: 429,
  tokens: 429,
  insufficient_quota: 429,
};

/**
 * An error reported inside a 200 answer: an SSE `data: {"error":{...}}` frame (OpenAI, OpenRouter),
 * vLLM's `{"object":"error","message","code"}`, or a body with `error` instead of `choices`.
 */
export function bodyError(providerId: string, json: any): RequestError | undefined {
  const e = json?.error ?? (json?.object === 'error' ? json : undefined);
  if (e === undefined || e === null) return undefined;
  const err = typeof e === 'object' ? e : { message: String(e) };
  const code = Number(err.code);
  const status = code >= 400 && code < 600 ? code : (statusByType[err.type] ?? statusByType[err.code] ?? 502);
  const message = typeof err.message === 'string' && err.message ? err.message : 'unknown error';
  return upstreamError(message, status, isRetryableStatus(status), {
    code: 'upstream_error',
    providerId,
    upstreamBody: JSON.stringify(json).slice(0, 2000),
  });
}

function badResponse(providerId: string, json: unknown, what: string): RequestError {
  return upstreamError(`it sent ${what}`, 502, true, {
    code: 'upstream_bad_response',
    providerId,
    upstreamBody: JSON.stringify(json).slice(0, 2000),
  });
}

/** vLLM says which stop string ended the text (`stop_reason`; a number is a stop token id). */
const stopSequenceOf = (choice: any): { stopSequence?: string } =>
  typeof choice?.stop_reason === 'string' && choice.stop_reason ? { stopSequence: choice.stop_reason } : {};

export function fromChatResponse(providerId: string, json: any, excludeReasoning: boolean): InferenceResult {
  const failed = bodyError(providerId, json);
  if (failed) throw failed;
  const choice = json?.choices?.[0];
  if (!choice || typeof choice !== 'object') throw badResponse(providerId, json, 'an answer without choices');
  const m = choice.message ?? {};
  const toolCalls = toToolCalls(m.tool_calls);
  const reasoning = excludeReasoning ? undefined : reasoningOf(m);
  const logprobs = toLogprobs(choice.logprobs?.content);
  return {
    content: typeof m.content === 'string' ? m.content : '',
    ...(reasoning ? { reasoning } : {}),
    toolCalls,
    finishReason: toFinishReason(choice.finish_reason, toolCalls.length > 0),
    ...stopSequenceOf(choice),
    usage: toUsage(json.usage),
    ...(logprobs ? { logprobs } : {}),
    ...(typeof json.id === 'string' ? { upstreamId: json.id } : {}),
    ...citationsOf(m.annotations),
  };
}

/** A native web search's `url_citation` annotations (OpenAI's and OpenRouter's shape). */
function citationsOf(annotations: unknown): Pick<InferenceResult, 'citations'> {
  if (!Array.isArray(annotations)) return {};
  const citations = annotations
    .map((a: any) => (a?.type === 'url_citation' ? a.url_citation : undefined))
    .filter((c: any) => typeof c?.url === 'string')
    .map((c: any) => ({
      url: c.url,
      title: typeof c.title === 'string' ? c.title : '',
      start_index: Number.isInteger(c.start_index) ? c.start_index : 0,
      end_index: Number.isInteger(c.end_index) ? c.end_index : 0,
    }));
  return citations.length ? { citations } : {};
}

export function fromCompletionResponse(providerId: string, json: any): InferenceResult {
  const failed = bodyError(providerId, json);
  if (failed) throw failed;
  const choice = json?.choices?.[0];
  if (!choice || typeof choice !== 'object') throw badResponse(providerId, json, 'an answer without choices');
  const logprobs = fromLegacyLogprobs(choice.logprobs);
  return {
    content: typeof choice.text === 'string' ? choice.text : '',
    toolCalls: [],
    finishReason: toFinishReason(choice.finish_reason, false),
    ...stopSequenceOf(choice),
    usage: toUsage(json.usage),
    ...(logprobs ? { logprobs } : {}),
    ...(typeof json.id === 'string' ? { upstreamId: json.id } : {}),
  };
}

/** A whole result as the events a stream of it would have produced. */
export function resultEvents(r: InferenceResult): StreamEvent[] {
  const out: StreamEvent[] = [];
  if (r.reasoning) out.push({ type: 'reasoning', text: r.reasoning });
  if (r.content) out.push({ type: 'text', text: r.content, ...(r.logprobs ? { logprobs: r.logprobs } : {}) });
  for (const [index, c] of r.toolCalls.entries()) {
    out.push({ type: 'tool_call', index, id: c.id, name: c.name, argumentsDelta: c.arguments });
  }
  out.push({
    type: 'finish',
    reason: r.finishReason,
    ...(r.stopSequence !== undefined ? { stopSequence: r.stopSequence } : {}),
  });
  if (r.usage) out.push({ type: 'usage', usage: r.usage });
  return out;
}

/**
 * Turns stream chunks (`chat.completion.chunk`, or legacy `text_completion`) into StreamEvents.
 * Finish and usage are held until the end: usage may come with the finishing chunk or in a later
 * chunk with empty `choices`, and the contract wants both last, usage once.
 */
export class StreamDecoder {
  /** a choice carried a finish_reason: the generation is complete even if `[DONE]` never comes */
  finished = false;
  private finishRaw: unknown;
  private stopSequence: { stopSequence?: string } = {};
  private usage: Usage | null = null;
  /** upstream tool-call key -> our dense index, in order of first appearance */
  private calls = new Map<string, number>();
  private lastCall = '';

  constructor(
    private readonly providerId: string,
    private readonly legacy: boolean,
    private readonly excludeReasoning: boolean,
  ) {}

  push(chunk: any): StreamEvent[] {
    const failed = bodyError(this.providerId, chunk);
    if (failed) throw failed;
    // Groq has reported stream usage under `x_groq`
    const usage = toUsage(chunk?.usage ?? chunk?.x_groq?.usage);
    if (usage) this.usage = usage;
    const choice = Array.isArray(chunk?.choices) ? chunk.choices[0] : undefined;
    if (!choice || typeof choice !== 'object') return [];
    if (choice.finish_reason === 'error')
      throw bodyError(this.providerId, { error: choice.error ?? { message: 'the generation failed midway' } })!;
    const out = this.legacy ? this.legacyEvents(choice) : this.chatEvents(choice);
    if (choice.finish_reason) {
      this.finished = true;
      this.finishRaw = choice.finish_reason;
      this.stopSequence = stopSequenceOf(choice);
    }
    return out;
  }

  /** The closing events, once the stream ended properly. */
  end(): StreamEvent[] {
    const out: StreamEvent[] = [
      { type: 'finish', reason: toFinishReason(this.finishRaw, this.calls.size > 0), ...this.stopSequence },
    ];
    if (this.usage) out.push({ type: 'usage', usage: this.usage });
    return out;
  }

  private legacyEvents(choice: any): StreamEvent[] {
    if (typeof choice.text !== 'string' || choice.text === '') return [];
    const logprobs = fromLegacyLogprobs(choice.logprobs);
    return [{ type: 'text', text: choice.text, ...(logprobs ? { logprobs } : {}) }];
  }

  private chatEvents(choice: any): StreamEvent[] {
    const out: StreamEvent[] = [];
    const d = choice.delta ?? {};
    const reasoning = reasoningOf(d);
    if (reasoning && !this.excludeReasoning) out.push({ type: 'reasoning', text: reasoning });
    // the first chunk is usually `{role:"assistant", content:""}`: nothing to say yet
    if (typeof d.content === 'string' && d.content !== '') {
      const logprobs = toLogprobs(choice.logprobs?.content);
      out.push({ type: 'text', text: d.content, ...(logprobs ? { logprobs } : {}) });
    }
    if (Array.isArray(d.tool_calls)) {
      for (const tc of d.tool_calls) out.push(...this.toolCallEvents(tc));
    }
    return out;
  }

  private toolCallEvents(tc: any): StreamEvent[] {
    const argumentsDelta = argumentsText(tc.function?.arguments);
    // Without an index (some servers), a new id starts a new call and anything else continues the last.
    const upstream =
      typeof tc.index === 'number'
        ? `#${tc.index}`
        : typeof tc.id === 'string' && tc.id
          ? `id:${tc.id}`
          : this.lastCall;
    const known = this.calls.get(upstream);
    if (known === undefined) {
      const index = this.calls.size;
      this.calls.set(upstream, index);
      this.lastCall = upstream;
      const id = typeof tc.id === 'string' && tc.id ? tc.id : newCallId();
      return [{ type: 'tool_call', index, id, name: String(tc.function?.name ?? ''), argumentsDelta }];
    }
    this.lastCall = upstream;
    // servers that repeat id and name on every delta: only the arguments are new
    return argumentsDelta ? [{ type: 'tool_call', index: known, argumentsDelta }] : [];
  }
}
