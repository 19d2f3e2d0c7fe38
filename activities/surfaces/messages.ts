// biome-ignore-all lint/suspicious/noExplicitAny: wire JSON, read field by field
// The message-style surface (Anthropic Messages wire format) in: its request translated to the
// internal request (activities/inference/types.ts), with the checks a schema cannot express. The
// body reaching here has passed activities/surfaces/schemas/messages.ts. Translation out is messagesResponse.ts.
import type { ModelInfo } from '../catalog/catalog.js';
import type {
  ContentPart,
  Message,
  ReasoningEffort,
  ReasoningOptions,
  ResponseFormat,
  ThinkingBlock,
  ToolCall,
  ToolChoice,
  ToolSpec,
} from '../core/types.js';
import type { ModelName } from '../routing/suffixes.js';
import type { ProviderPreferences } from '../routing/planRoute.js';
import { cacheControlOf, type ChatPlanInput } from './chat.js';
import { toolSpecLimit } from './chatTools.js';
import { notSupported, RequestError } from '../core/errors.js';
import { promptCachingOf } from './promptCaching.js';

const bad = (code: string, message: string, param: string | null = null) =>
  new RequestError(400, code, message, { param: param });
const invalid = (message: string, param: string | null = null) => bad('invalid_parameter_value', message, param);

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,128}$/;
const IMAGE_MEDIA_TYPES = ['image/jpeg', 'image/png', 'image/gif', 'image/webp'];
/** Anthropic's floor for a thinking budget. */
const MIN_THINKING_BUDGET = 1024;

/** The system prompt as text parts: one part for a string, one per block (each may be a cache breakpoint). */
function systemParts(raw: any): ContentPart[] {
  if (typeof raw === 'string') return raw ? [{ type: 'text', text: raw }] : [];
  return (raw as any[])
    .map((b, i): ContentPart => {
      if (b.type !== 'text' || typeof b.text !== 'string')
        throw invalid(`system[${i}] must be a text block here.`, `system[${i}]`);
      return { type: 'text', text: b.text, ...cacheControlOf(b, `system[${i}]`) };
    })
    .filter((p) => p.type !== 'text' || p.text !== '');
}

function imagePart(b: any, where: string): ContentPart {
  const src = b.source;
  if (!src || typeof src !== 'object')
    throw invalid(
      `${where}.source is required: {type:'base64', media_type, data} or {type:'url', url}.`,
      `${where}.source`,
    );
  if (src.type === 'base64') {
    if (!IMAGE_MEDIA_TYPES.includes(src.media_type)) {
      throw invalid(
        `${where}.source.media_type ${notSupported(src.media_type)}; use one of ${IMAGE_MEDIA_TYPES.join(', ')}.`,
        `${where}.source.media_type`,
      );
    }
    if (typeof src.data !== 'string' || !src.data)
      throw invalid(`${where}.source.data must be base64 text.`, `${where}.source.data`);
    return { type: 'image', data: src.data, mediaType: src.media_type };
  }
  if (src.type === 'url') {
    if (typeof src.url !== 'string' || !/^https?:\/\//i.test(src.url))
      throw invalid(`${where}.source.url must be an http(s) URL.`, `${where}.source.url`);
    return { type: 'image', url: src.url };
  }
  throw invalid(`${where}.source.type ${notSupported(src.type)}; use 'base64' or 'url'.`, `${where}.source.type`);
}

function documentPart(b: any, where: string): ContentPart {
  const src = b.source;
  const title = typeof b.title === 'string' ? b.title : undefined;
  if (src?.type === 'base64') {
    if (src.media_type !== 'application/pdf')
      throw invalid(
        `${where}.source.media_type must be 'application/pdf' for a base64 document.`,
        `${where}.source.media_type`,
      );
    if (typeof src.data !== 'string' || !src.data)
      throw invalid(`${where}.source.data must be base64 text.`, `${where}.source.data`);
    return { type: 'document', data: src.data, mediaType: 'application/pdf', title };
  }
  if (src?.type === 'text') {
    if (typeof src.data !== 'string') throw invalid(`${where}.source.data must be a string.`, `${where}.source.data`);
    return { type: 'text', text: src.data };
  }
  throw invalid(
    `${where}.source must be {type:'base64', media_type:'application/pdf', data} or {type:'text', data}.`,
    `${where}.source`,
  );
}

/** One content block of a user turn (or of a tool result) as an internal part. */
function part(b: any, where: string): ContentPart | null {
  switch (b.type) {
    case 'text':
      if (typeof b.text !== 'string') throw invalid(`${where}.text must be a string.`, `${where}.text`);
      return { type: 'text', text: b.text, ...cacheControlOf(b, where) };
    case 'image':
      return { ...imagePart(b, where), ...cacheControlOf(b, where) };
    case 'document':
      return { ...documentPart(b, where), ...cacheControlOf(b, where) };
    case 'thinking':
    case 'redacted_thinking':
      return null;
    case 'video':
      throw new RequestError(
        400,
        'unsupported_input_modality',
        `${where} is a video block; this gateway does not take video input on the messages API. Send frames as images instead.`,
        { param: `${where}.type` },
      );
    default:
      throw new RequestError(
        400,
        'unsupported_input_modality',
        `${where} has type '${b.type}'; supported blocks are text, image, document, tool_use and tool_result.`,
        { param: `${where}.type` },
      );
  }
}

function toolResultParts(b: any, where: string): ContentPart[] {
  const c = b.content;
  let parts: ContentPart[];
  if (c === undefined || c === null) parts = [];
  else if (typeof c === 'string') parts = [{ type: 'text', text: c }];
  else if (Array.isArray(c))
    parts = c.map((x: any, k: number) => part(x, `${where}.content[${k}]`)).filter((p): p is ContentPart => p !== null);
  else throw invalid(`${where}.content must be a string or an array of blocks.`, `${where}.content`);
  if (b.is_error === true) parts = [{ type: 'text', text: 'Error:' }, ...parts];
  // a breakpoint on the tool_result block covers its whole content: carried on its last part
  const { cacheControl } = cacheControlOf(b, where);
  if (cacheControl && parts.length) parts[parts.length - 1] = { ...parts[parts.length - 1], cacheControl };
  return parts;
}

/** The conversation in internal form: tool_use → assistant toolCalls, tool_result → tool messages. */
function toMessages(raw: any[]): Message[] {
  if (raw[0].role !== 'user') throw invalid("The first message must have role 'user'.", 'messages[0].role');
  const out: Message[] = [];
  const issued = new Set<string>();
  raw.forEach((m, i) => {
    const at = `messages[${i}]`;
    const blocks: any[] = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content;
    if (m.role === 'assistant') {
      const content: ContentPart[] = [];
      const toolCalls: ToolCall[] = [];
      const thinking: ThinkingBlock[] = [];
      blocks.forEach((b, j) => {
        const where = `${at}.content[${j}]`;
        // signed reasoning is kept, to be sent back to an upstream that checks it (Anthropic);
        // an unsigned block (from an upstream that does not sign) is the model's scratch text: dropped
        if (b.type === 'thinking' && typeof b.signature === 'string' && b.signature && typeof b.thinking === 'string') {
          thinking.push({ text: b.thinking, signature: b.signature });
        } else if (b.type === 'redacted_thinking' && typeof b.data === 'string' && b.data) {
          thinking.push({ redacted: b.data });
        } else if (b.type === 'tool_use') {
          if (typeof b.id !== 'string' || typeof b.name !== 'string')
            throw invalid(`${where} needs 'id' and 'name'.`, where);
          toolCalls.push({ id: b.id, name: b.name, arguments: JSON.stringify(b.input ?? {}) });
          issued.add(b.id);
        } else if (b.type === 'text') {
          if (typeof b.text !== 'string') throw invalid(`${where}.text must be a string.`, `${where}.text`);
          if (b.text) content.push({ type: 'text', text: b.text, ...cacheControlOf(b, where) });
        } else if (b.type !== 'thinking' && b.type !== 'redacted_thinking') {
          throw invalid(
            `${where} has type '${b.type}'; assistant turns take text, thinking and tool_use blocks.`,
            `${where}.type`,
          );
        }
      });
      out.push({
        role: 'assistant',
        content,
        toolCalls: toolCalls.length ? toolCalls : undefined,
        ...(thinking.length ? { thinking } : {}),
      });
      return;
    }
    const content: ContentPart[] = [];
    blocks.forEach((b, j) => {
      const where = `${at}.content[${j}]`;
      if (b.type === 'tool_result') {
        if (typeof b.tool_use_id !== 'string')
          throw bad('missing_required_parameter', `${where}.tool_use_id is required.`, `${where}.tool_use_id`);
        if (!issued.has(b.tool_use_id))
          throw invalid(
            `${where}.tool_use_id '${b.tool_use_id}' answers no earlier tool_use block.`,
            `${where}.tool_use_id`,
          );
        out.push({ role: 'tool', toolCallId: b.tool_use_id, content: toolResultParts(b, where) });
      } else if (b.type === 'tool_use') {
        throw invalid(`${where}: tool_use blocks belong in assistant turns.`, `${where}.type`);
      } else {
        const p = part(b, where);
        if (p) content.push(p);
      }
    });
    if (content.length) out.push({ role: 'user', content });
  });
  return out;
}

function parseTools(raw: any): ToolSpec[] | undefined {
  if (raw === undefined || raw === null) return undefined;
  const size = Buffer.byteLength(JSON.stringify(raw));
  if (size > toolSpecLimit())
    throw new RequestError(
      413,
      'tool_spec_too_large',
      `'tools' is ${size} bytes serialized; the limit is ${toolSpecLimit()}.`,
      { param: 'tools' },
    );
  const names = new Set<string>();
  return (raw as any[]).map((t, i) => {
    const at = `tools[${i}]`;
    if (t.type !== undefined && t.type !== 'custom') {
      throw bad(
        'invalid_tool_spec',
        `${at}.type '${t.type}' is a server tool; only client tools ({name, description, input_schema}) are supported.`,
        `${at}.type`,
      );
    }
    if (!TOOL_NAME.test(t.name))
      throw bad('invalid_tool_spec', `${at}.name must be 1-128 letters, digits, '_' or '-'.`, `${at}.name`);
    if (names.has(t.name)) throw bad('invalid_tool_spec', `Two tools are named '${t.name}'.`, `${at}.name`);
    names.add(t.name);
    if (!t.input_schema)
      throw bad('invalid_tool_spec', `${at}.input_schema is required (a JSON Schema object).`, `${at}.input_schema`);
    return { name: t.name, description: t.description, parameters: t.input_schema, ...cacheControlOf(t, at) };
  });
}

function parseToolChoice(raw: any, tools: ToolSpec[] | undefined): ToolChoice | undefined {
  if (!raw) return undefined;
  if (raw.type === 'none' || raw.type === 'auto') return raw.type;
  if (!tools?.length) throw bad('tool_choice_unsupported', `tool_choice '${raw.type}' needs 'tools'.`, 'tool_choice');
  if (raw.type === 'any') return 'required';
  if (typeof raw.name !== 'string')
    throw bad('missing_required_parameter', "tool_choice of type 'tool' needs 'name'.", 'tool_choice.name');
  if (!tools.some((t) => t.name === raw.name))
    throw bad(
      'tool_choice_unsupported',
      `tool_choice names '${raw.name}', which is not in 'tools'.`,
      'tool_choice.name',
    );
  return { name: raw.name };
}

/** `thinking`: budget_tokens >= 1024 and (when max_tokens is known) below it. */
function parseThinking(
  raw: any,
  maxTokens: number | undefined,
): { enabled: boolean; budgetTokens?: number } | undefined {
  if (!raw || raw.type === 'disabled') return undefined;
  if (raw.type === 'adaptive') return { enabled: true };
  if (typeof raw.budget_tokens !== 'number')
    throw bad(
      'missing_required_parameter',
      "thinking.budget_tokens is required when thinking.type is 'enabled'.",
      'thinking.budget_tokens',
    );
  if (raw.budget_tokens < MIN_THINKING_BUDGET)
    throw invalid(
      `thinking.budget_tokens must be at least ${MIN_THINKING_BUDGET}; got ${raw.budget_tokens}.`,
      'thinking.budget_tokens',
    );
  if (maxTokens !== undefined && raw.budget_tokens >= maxTokens) {
    throw invalid(
      `thinking.budget_tokens (${raw.budget_tokens}) must be less than max_tokens (${maxTokens}).`,
      'thinking.budget_tokens',
    );
  }
  return { enabled: true, budgetTokens: raw.budget_tokens };
}

function parseFormat(raw: any): ResponseFormat | undefined {
  if (!raw) return undefined;
  if (raw.type === 'json_schema') {
    if (!raw.schema || typeof raw.schema !== 'object')
      throw bad(
        'invalid_json_schema',
        "output_config.format.schema is required when its type is 'json_schema'.",
        'output_config.format.schema',
      );
    return { type: 'json_schema', name: 'output', schema: raw.schema };
  }
  throw invalid(
    `output_config.format.type ${notSupported(raw.type)} here; use 'json_schema'.`,
    'output_config.format.type',
  );
}

export interface MessagesPlanInput extends ChatPlanInput {
  /** show thinking blocks to the caller */
  showReasoning: boolean;
}

/** The whole messages body in internal form, plus what routing needs to know about it. */
export function messagesToInternal(body: any, model: ModelInfo, name: ModelName): MessagesPlanInput {
  const conversation = toMessages(body.messages);
  const system = body.system === undefined ? [] : systemParts(body.system);
  const messages: Message[] = system.length ? [{ role: 'system', content: system }, ...conversation] : conversation;
  if (!conversation.length) throw invalid("'messages' must contain at least one non-empty turn.", 'messages');

  let tools = parseTools(body.tools);
  const toolChoice = parseToolChoice(body.tool_choice, tools);
  if (toolChoice === 'none') tools = undefined;
  const responseFormat = parseFormat(body.output_config?.format);

  const images = messages.some((m) => m.content.some((c) => c.type === 'image'));
  if (images && model.capabilities.vision !== true) {
    throw bad(
      'image_input_not_supported',
      `Model '${model.id}' does not accept images. Send text only, or pick a model with vision.`,
      'messages',
    );
  }
  const documents = messages.some((m) => m.content.some((c) => c.type === 'document'));
  if (documents && model.capabilities.pdf_upload !== true) {
    throw new RequestError(
      400,
      'unsupported_input_modality',
      `Model '${model.id}' does not read PDF documents. Send the text instead, or pick a model with PDF input.`,
      { param: 'messages' },
    );
  }

  const thinking = parseThinking(body.thinking, body.max_tokens);
  const effort: ReasoningEffort | undefined = name.reasoningEffort ?? body.output_config?.effort;
  const wants = name.thinking || thinking?.enabled === true || (effort !== undefined && effort !== 'none');
  // As on chat: reasoning controls go only to models that reason (others' upstreams reject them).
  const reasoning: ReasoningOptions | undefined =
    model.capabilities.reasoning !== true
      ? undefined
      : wants || name.reasoningExclude || effort === 'none'
        ? { enabled: wants, effort, budgetTokens: thinking?.budgetTokens, exclude: name.reasoningExclude === true }
        : undefined;

  const prefs: ProviderPreferences = {};
  if (name.sort) prefs.sort = name.sort;
  // prompt caching (README, Prompt caching): blocks carry their own cache_control here
  for (const field of ['prompt_caching', 'promptCaching'])
    if (body[field] !== undefined)
      throw new RequestError(
        400,
        'invalid_parameter_value',
        `'${field}' is a chat completions and responses field. On the message-style API, mark the block that ends the prefix to cache with cache_control (and send stickyprovider for stickiness).`,
        { param: field },
      );
  if (promptCachingOf(body, body.messages.length).sticky) prefs.stickyProvider = true;
  const userId = body.metadata?.user_id;
  return {
    request: {
      messages,
      tools,
      toolChoice: tools ? toolChoice : undefined,
      parallelToolCalls: body.tool_choice?.disable_parallel_tool_use === true ? false : undefined,
      responseFormat,
      maxTokens: body.max_tokens,
      sampling: {
        temperature: body.temperature,
        topP: body.top_p,
        topK: body.top_k,
        stop: body.stop_sequences?.length ? body.stop_sequences : undefined,
      },
      reasoning,
      user: typeof userId === 'string' && userId ? userId : undefined,
    },
    needs: {
      tools: !!tools?.length || !!name.requireTools,
      images,
      structuredOutput: responseFormat?.type === 'json_schema',
      caching: !!name.requireCaching || body.caching === true,
    },
    prefs,
    includeUsage: true,
    showReasoning: !reasoning?.exclude,
  };
}
