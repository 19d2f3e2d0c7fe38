// biome-ignore-all lint/suspicious/noExplicitAny: wire JSON, read field by field
// The chat completions surface: its wire shapes translated to and from the internal request
// (activities/inference/types.ts), and the checks a schema cannot express, each with the code the
// spec gives it. The body reaching here has passed activities/surfaces/schemas/chat.ts.
import type { ModelInfo } from '../catalog/catalog.js';
import type { CacheControl, ContentPart, InferenceRequest, Message, ReasoningEffort, ToolCall } from '../core/types.js';
import type { ModelName } from '../routing/suffixes.js';
import type { ProviderPreferences, RequestNeeds } from '../routing/planRoute.js';
import { QUANTIZATION_BITS } from '../routing/planRoute.js';
import { RequestError } from '../core/errors.js';
import { parseResponseFormat, parseToolChoice, parseTools } from './chatTools.js';
import { insertBreakpoint, promptCachingOf } from './promptCaching.js';

const bad = (code: string, message: string, param: string | null = null) =>
  new RequestError(400, code, message, { param: param });

export function cacheControlOf(raw: any, where: string): { cacheControl?: CacheControl } {
  const c = raw?.cache_control;
  if (c === undefined || c === null) return {};
  if (typeof c !== 'object' || c.type !== 'ephemeral')
    throw bad(
      'invalid_parameter_value',
      `${where}.cache_control must be {type: 'ephemeral'} (optionally with ttl '5m' or '1h').`,
      `${where}.cache_control`,
    );
  if (c.ttl !== undefined && c.ttl !== '5m' && c.ttl !== '1h')
    throw bad(
      'invalid_parameter_value',
      `${where}.cache_control.ttl must be '5m' or '1h'.`,
      `${where}.cache_control.ttl`,
    );
  return { cacheControl: c.ttl ? { type: 'ephemeral', ttl: c.ttl } : { type: 'ephemeral' } };
}

function textOf(content: any, at: string): string {
  if (content === null || content === undefined) return '';
  if (typeof content === 'string') return content;
  return content
    .map((p: any, i: number) => {
      if (p.type !== 'text' || typeof p.text !== 'string')
        throw bad('invalid_parameter_value', `${at}.content[${i}] must be a text part here.`, `${at}.content[${i}]`);
      return p.text;
    })
    .join('');
}

function parts(content: any, at: string): ContentPart[] {
  if (content === null || content === undefined) return [];
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  return content.map((p: any, i: number): ContentPart => {
    const where = `${at}.content[${i}]`;
    if (p.type === 'text') {
      if (typeof p.text !== 'string')
        throw bad('invalid_parameter_value', `${where}.text must be a string.`, `${where}.text`);
      return { type: 'text', text: p.text, ...cacheControlOf(p, where) };
    }
    if (p.type === 'image_url') {
      const url = typeof p.image_url === 'string' ? p.image_url : p.image_url?.url;
      if (typeof url !== 'string' || !/^(https?:|data:image\/)/i.test(url)) {
        throw bad(
          'invalid_parameter_value',
          `${where}.image_url.url must be an http(s) URL or a data:image/... URL.`,
          `${where}.image_url.url`,
        );
      }
      const m = /^data:(image\/[a-z0-9.+-]+);base64,(.*)$/is.exec(url);
      const cache = cacheControlOf(p, where);
      return m
        ? { type: 'image', data: m[2], mediaType: m[1].toLowerCase(), detail: p.image_url?.detail, ...cache }
        : { type: 'image', url, detail: p.image_url?.detail, ...cache };
    }
    throw new RequestError(
      400,
      'unsupported_input_modality',
      `${where} has type '${p.type}'; chat completions here take 'text' and 'image_url' parts.`,
      { param: `${where}.type` },
    );
  });
}

/** Messages in internal form. Tool results whose tool_call_id no earlier assistant turn issued are dropped (spec). */
function toMessages(raw: any[], origins: number[] = []): Message[] {
  const issued = new Set<string>();
  const out: Message[] = [];
  raw.forEach((m, i) => {
    const at = `messages[${i}]`;
    // `origins[j]`: where kept message j was in the caller's `messages` (prompt_caching's cut point counts those)
    const add = (message: Message) => {
      out.push(message);
      origins.push(i);
    };
    switch (m.role) {
      case 'system':
      case 'developer':
        // parts stay parts only when one is a cache breakpoint (as OpenRouter takes them for Anthropic)
        add({
          role: 'system',
          content:
            Array.isArray(m.content) && m.content.some((p: any) => p?.cache_control)
              ? parts(m.content, at)
              : [{ type: 'text', text: textOf(m.content, at) }],
        });
        break;
      case 'user':
        add({ role: 'user', content: parts(m.content, at), name: m.name });
        break;
      case 'assistant': {
        const toolCalls: ToolCall[] = (m.tool_calls ?? []).map((c: any) => ({
          id: c.id,
          name: c.function.name,
          arguments: c.function.arguments ?? '{}',
        }));
        for (const c of toolCalls) issued.add(c.id);
        add({
          role: 'assistant',
          content:
            typeof m.content === 'string' || Array.isArray(m.content)
              ? ([{ type: 'text', text: textOf(m.content, at) }].filter((p) => p.text) as ContentPart[])
              : [],
          toolCalls: toolCalls.length ? toolCalls : undefined,
        });
        break;
      }
      case 'tool':
        if (typeof m.tool_call_id !== 'string')
          throw bad(
            'missing_required_parameter',
            `${at}.tool_call_id is required for tool messages.`,
            `${at}.tool_call_id`,
          );
        if (issued.has(m.tool_call_id))
          add({
            role: 'tool',
            toolCallId: m.tool_call_id,
            content: [{ type: 'text', text: textOf(m.content, at) }],
          });
        break;
      case 'function':
        // The long-deprecated function role has no call id to pair with: dropped like an unknown tool result.
        break;
    }
  });
  if (!out.some((m) => m.role !== 'system'))
    throw bad('invalid_parameter_value', "'messages' must contain at least one user or assistant message.", 'messages');
  return out;
}

const EFFORT_ALIASES: Record<string, ReasoningEffort> = { minimal: 'low' };

export interface ChatPlanInput {
  request: Omit<InferenceRequest, 'maxTokens' | 'model'> & { maxTokens?: number };
  needs: RequestNeeds;
  prefs: ProviderPreferences;
  maxToolCalls?: number;
  includeUsage: boolean;
}

/** The whole chat body in internal form, plus what routing needs to know about it. */
// biome-ignore lint/complexity/noExcessiveLinesPerFunction: one pass over chat's fields, each a few lines, in the order they apply
export function chatToInternal(body: any, model: ModelInfo, name: ModelName): ChatPlanInput {
  // the chat completions route takes `advisor` off the body before this (the advisor add-on,
  // activities/inference/addOns/advisor.ts); elsewhere it is refused
  if (body.advisor !== undefined && body.advisor !== null)
    throw bad(
      'invalid_parameter_value',
      "'advisor' is offered on chat completions only (POST /api/v1/chat/completions, not streamed, not in batches). Remove the field here.",
      'advisor',
    );

  const origins: number[] = [];
  const messages = toMessages(body.messages, origins);
  const caching = promptCachingOf(body, body.messages.length);
  let tools = parseTools(body.tools);
  const toolChoice = parseToolChoice(body.tool_choice, tools);
  if (toolChoice === 'none') tools = undefined; // spec: `none` drops the tools
  const responseFormat = parseResponseFormat(body.response_format);
  const images = messages.some((m) => m.content.some((c) => c.type === 'image'));
  if (images && model.capabilities.vision !== true) {
    throw bad(
      'image_input_not_supported',
      `Model '${model.id}' does not accept images. Send text only, or pick a model with vision.`,
      'messages',
    );
  }

  const effort = body.reasoning?.effort ?? body.reasoning_effort;
  const reasoningEffort: ReasoningEffort | undefined =
    name.reasoningEffort ?? (effort ? (EFFORT_ALIASES[effort] ?? effort) : undefined);
  const wantsReasoning =
    name.thinking ||
    body.reasoning?.enabled === true ||
    (reasoningEffort !== undefined && reasoningEffort !== 'none') ||
    (body.reasoning?.max_tokens ?? 0) > 0;
  // Reasoning controls go only to models that reason: others' upstreams reject them (OpenAI
  // answers 400), and OpenRouter likewise ignores them for such models.
  const reasoning =
    model.capabilities.reasoning !== true
      ? undefined
      : wantsReasoning || name.reasoningExclude || body.reasoning?.exclude || reasoningEffort === 'none'
        ? {
            enabled: wantsReasoning,
            effort: reasoningEffort,
            budgetTokens: body.reasoning?.max_tokens || undefined,
            exclude: name.reasoningExclude || body.reasoning?.exclude === true,
          }
        : undefined;

  let prefs: ProviderPreferences = {};
  if (typeof body.provider === 'string') prefs = { explicit: body.provider };
  else if (body.provider) {
    const p = body.provider;
    prefs = {
      order: p.order,
      only: p.only,
      ignore: p.ignore,
      sort: p.sort,
      quantizations: p.quantizations,
      minQuantization: p.min_quantization,
      maxPrice: p.max_price,
      allowFallbacks: p.allow_fallbacks,
      requireParameters: p.require_parameters,
      dataCollection: p.data_collection,
    };
    if (p.quantizations && p.min_quantization) {
      const floor = QUANTIZATION_BITS[p.min_quantization];
      if (!p.quantizations.some((q: string) => (QUANTIZATION_BITS[q] ?? 0) >= floor)) {
        throw bad(
          'invalid_parameter_value',
          `provider.quantizations (${p.quantizations.join(', ')}) has nothing at or above provider.min_quantization ${p.min_quantization}.`,
          'provider.quantizations',
        );
      }
    }
  }
  if (name.sort) prefs.sort = name.sort;
  if (caching.sticky) prefs.stickyProvider = true;
  if (caching.breakpoint) insertBreakpoint(messages, origins, caching.breakpoint);

  const stop =
    body.stop === undefined || body.stop === null ? undefined : Array.isArray(body.stop) ? body.stop : [body.stop];
  return {
    request: {
      messages,
      tools,
      toolChoice: tools ? toolChoice : undefined,
      parallelToolCalls: body.parallel_tool_calls,
      responseFormat,
      maxTokens: body.max_completion_tokens ?? body.max_tokens,
      sampling: {
        temperature: body.temperature,
        topP: body.top_p,
        topK: body.top_k,
        minP: body.min_p,
        frequencyPenalty: body.frequency_penalty,
        presencePenalty: body.presence_penalty,
        repetitionPenalty: body.repetition_penalty,
        seed: body.seed,
        stop,
        logitBias: body.logit_bias,
        logprobs: body.logprobs,
        topLogprobs: body.top_logprobs,
      },
      reasoning,
      user: body.user,
    },
    needs: {
      tools: !!tools?.length || !!name.requireTools,
      images,
      structuredOutput: responseFormat?.type === 'json_schema',
      caching: !!name.requireCaching || body.caching === true,
    },
    prefs,
    maxToolCalls: body.max_tool_calls,
    includeUsage: body.stream_options?.include_usage === true,
  };
}
