// biome-ignore-all lint/suspicious/noExplicitAny: wire JSON, read field by field
// The Responses API surface (OpenAI `POST /v1/responses`): its input items translated to the chat
// surface's message form and then through chatToInternal (one translation to the internal request,
// so tools, structured output, reasoning and vision rules cannot drift from chat), and the internal
// result (or stream events) out as a `response` object and its typed SSE events. The body reaching
// here has passed api/schemas/responses.ts.
import { randomBytes } from 'node:crypto';
import type { ModelInfo } from '../catalog/catalog.js';
import type { Bill } from '../inference/execute.js';
import type { FinishReason, InferenceResult, StreamEvent, Usage } from '../core/types.js';
import type { ModelName } from '../routing/suffixes.js';
import { chatToInternal, type ChatPlanInput } from './chat.js';
import { checkJsonSchema, checkStrictSchema } from './jsonSchema.js';
import { withBill } from './chatResponse.js';
import { notSupported, RequestError } from '../core/errors.js';
import { HOSTED_WEB_SEARCH_TOOLS } from '../search/settings.js';

const bad = (code: string, message: string, param: string | null = null) =>
  new RequestError(400, code, message, { param: param });
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

export const newId = (prefix: string) => `${prefix}_${randomBytes(24).toString('hex')}`;

/** One chat-format message (what chatToInternal reads, and what a stored conversation keeps). */
export type ChatMessage = Record<string, any>;

function partsOf(content: any, role: string, at: string): string | any[] {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content))
    throw bad(
      'invalid_parameter_value',
      `${at}.content must be a string or an array of content parts.`,
      `${at}.content`,
    );
  return content.map((p: any, i: number) => {
    const where = `${at}.content[${i}]`;
    if (!p || typeof p !== 'object') throw bad('invalid_parameter_value', `${where} must be an object.`, where);
    switch (p.type) {
      case 'input_text':
      case 'output_text':
      case 'text':
        if (typeof p.text !== 'string')
          throw bad('invalid_parameter_value', `${where}.text must be a string.`, `${where}.text`);
        return { type: 'text', text: p.text };
      case 'refusal':
        return { type: 'text', text: String(p.refusal ?? '') };
      case 'input_image': {
        if (role !== 'user') throw bad('invalid_parameter_value', `${where}: images go in user messages.`, where);
        const url = typeof p.image_url === 'string' ? p.image_url : p.image_url?.url;
        if (typeof url !== 'string') {
          throw bad(
            'invalid_parameter_value',
            `${where}.image_url is required: an http(s) URL or a data:image/... URL (file_id is not supported here).`,
            `${where}.image_url`,
          );
        }
        return { type: 'image_url', image_url: { url, ...(p.detail ? { detail: p.detail } : {}) } };
      }
      default:
        throw new RequestError(
          400,
          'unsupported_input_modality',
          `${where}.type ${notSupported(p.type)}; this gateway takes 'input_text', 'input_image' and 'output_text' parts.`,
          { param: `${where}.type` },
        );
    }
  });
}

/** Text of chat-form content (for system turns, which take text only). */
const textOnly = (c: string | any[]) => (typeof c === 'string' ? c : c.map((p) => p.text ?? '').join(''));

/**
 * The caller's `input` as chat messages. Consecutive function_call items join the assistant turn
 * before them; a function_call_output must answer a call issued earlier in the conversation.
 */
function inputToChatMessages(input: string | any[], history: ChatMessage[]): ChatMessage[] {
  if (typeof input === 'string') return [{ role: 'user', content: input }];
  const issued = new Set<string>();
  for (const m of history) for (const c of m.tool_calls ?? []) issued.add(c.id);
  const out: ChatMessage[] = [];
  input.forEach((item: any, i: number) => {
    const at = `input[${i}]`;
    const type = item.type ?? (item.role ? 'message' : undefined);
    switch (type) {
      case 'message': {
        if (!['user', 'assistant', 'system', 'developer'].includes(item.role)) {
          throw bad(
            'invalid_parameter_value',
            `${at}.role must be 'user', 'assistant', 'system' or 'developer'.`,
            `${at}.role`,
          );
        }
        const content = partsOf(item.content, item.role, at);
        if (item.role === 'system' || item.role === 'developer')
          out.push({ role: 'system', content: textOnly(content) });
        else out.push({ role: item.role, content });
        break;
      }
      case 'function_call': {
        if (typeof item.call_id !== 'string' || !item.call_id)
          throw bad('missing_required_parameter', `${at}.call_id is required.`, `${at}.call_id`);
        if (typeof item.name !== 'string' || !item.name)
          throw bad('missing_required_parameter', `${at}.name is required.`, `${at}.name`);
        if (item.arguments !== undefined && typeof item.arguments !== 'string')
          throw bad('invalid_parameter_value', `${at}.arguments must be a JSON string.`, `${at}.arguments`);
        const call = {
          id: item.call_id,
          type: 'function',
          function: { name: item.name, arguments: item.arguments ?? '{}' },
        };
        const last = out[out.length - 1];
        if (last?.role === 'assistant') last.tool_calls = [...(last.tool_calls ?? []), call];
        else out.push({ role: 'assistant', content: null, tool_calls: [call] });
        issued.add(item.call_id);
        break;
      }
      case 'function_call_output': {
        if (typeof item.call_id !== 'string' || !item.call_id)
          throw bad('missing_required_parameter', `${at}.call_id is required.`, `${at}.call_id`);
        if (!issued.has(item.call_id)) {
          throw bad(
            'invalid_parameter_value',
            `No function call with call_id '${item.call_id}' precedes ${at}. Send the function_call item first, or use previous_response_id.`,
            `${at}.call_id`,
          );
        }
        const output = typeof item.output === 'string' ? item.output : JSON.stringify(item.output ?? '');
        out.push({ role: 'tool', tool_call_id: item.call_id, content: output });
        break;
      }
      case 'reasoning':
        break; // earlier reasoning is not sent back upstream
      default:
        throw bad(
          'invalid_parameter_value',
          `${at}.type ${notSupported(item.type)}; input items are messages, 'function_call', 'function_call_output' and 'reasoning'.`,
          `${at}.type`,
        );
    }
  });
  return out;
}

/** Responses tools are flat ({type, name, description, parameters, strict}); chat's are nested. */
function toolsToChat(raw: any[] | undefined): any[] | undefined {
  if (!raw) return undefined;
  // the hosted web search tool is the gateway's web search (search/settings.ts reads it), not a function
  return raw.flatMap((t: any, i: number) => {
    if (HOSTED_WEB_SEARCH_TOOLS.includes(t?.type)) return [];
    const at = `tools[${i}]`;
    if (t.type !== 'function')
      throw bad('invalid_tool_spec', `${at}.type must be 'function': only function tools are supported.`, `${at}.type`);
    if (t.function !== undefined && t.name === undefined) {
      throw bad(
        'invalid_tool_spec',
        `${at} is in the chat-completions shape; Responses tools are flat: {type:'function', name, description?, parameters?, strict?}.`,
        `${at}.function`,
      );
    }
    if (typeof t.name !== 'string' || !TOOL_NAME.test(t.name))
      throw bad('invalid_tool_spec', `${at}.name must be 1-64 letters, digits, '_' or '-'.`, `${at}.name`);
    if (t.description !== undefined && t.description !== null && typeof t.description !== 'string')
      throw bad('invalid_tool_spec', `${at}.description must be a string.`, `${at}.description`);
    if (
      t.parameters !== undefined &&
      t.parameters !== null &&
      (typeof t.parameters !== 'object' || Array.isArray(t.parameters))
    ) {
      throw bad('invalid_tool_spec', `${at}.parameters must be a JSON Schema object.`, `${at}.parameters`);
    }
    return [
      {
        type: 'function',
        function: { name: t.name, description: t.description ?? undefined, parameters: t.parameters ?? undefined },
      },
    ];
  });
}

/** `text.format` in chat's form; a json_schema format is checked here, so errors name Responses' parameters. */
function formatToChat(format: any): any {
  if (!format || format.type === 'text') return undefined;
  if (format.type === 'json_object') return { type: 'json_object' };
  if (format.type === 'json_schema' && !/^[a-zA-Z0-9_-]{1,64}$/.test(format.name ?? ''))
    throw bad(
      'invalid_json_schema',
      'text.format.name is required: 1-64 letters, digits, underscores or dashes.',
      'text.format.name',
    );
  if (format.type === 'json_schema' && format.schema) {
    checkJsonSchema(format.schema, 'text.format.schema');
    if (format.strict === true) checkStrictSchema(format.schema, 'the schema', 'text.format.schema');
  }
  return {
    type: 'json_schema',
    json_schema: {
      name: format.name,
      schema: format.schema,
      strict: format.strict === true,
      description: format.description,
    },
  };
}

export interface ResponsesPlanInput extends ChatPlanInput {
  /** the conversation so far in chat form, without instructions: what a stored response keeps */
  conversation: ChatMessage[];
  /** the chat-form body handed to chatToInternal (a background run rebuilds the call from it) */
  chatBody: Record<string, any>;
}

/** The whole Responses body in internal form; `history` is the chained conversation (previous_response_id). */
export function responsesToInternal(
  body: any,
  model: ModelInfo,
  name: ModelName,
  history: ChatMessage[] = [],
): ResponsesPlanInput {
  // the advisor runs on chat completions only: refused here rather than answered without it
  if (body.advisor !== undefined && body.advisor !== null)
    throw bad(
      'invalid_parameter_value',
      "'advisor' is offered on chat completions only (POST /api/v1/chat/completions, not streamed). Remove the field here.",
      'advisor',
    );
  const conversation = [...history, ...inputToChatMessages(body.input, history)];
  const instructions =
    typeof body.instructions === 'string' && body.instructions ? [{ role: 'system', content: body.instructions }] : [];
  const tc = body.tool_choice;
  const chatBody = {
    model: body.model,
    messages: [...instructions, ...conversation],
    tools: toolsToChat(body.tools),
    tool_choice: tc && typeof tc === 'object' ? { type: 'function', function: { name: tc.name } } : (tc ?? undefined),
    parallel_tool_calls: body.parallel_tool_calls ?? undefined,
    response_format: formatToChat(body.text?.format),
    reasoning: body.reasoning?.effort ? { effort: body.reasoning.effort } : undefined,
    max_tokens: body.max_output_tokens ?? undefined,
    temperature: body.temperature ?? undefined,
    top_p: body.top_p ?? undefined,
    user: body.user,
    // prompt caching (README, Prompt caching): the cut index counts instructions, history and input in this order
    caching: body.caching,
    stickyprovider: body.stickyprovider,
    stickyProvider: body.stickyProvider,
    prompt_caching: body.prompt_caching,
    promptCaching: body.promptCaching,
  };
  if (chatBody.tools && !chatBody.tools.length) chatBody.tools = undefined;
  return { ...chatToInternal(chatBody, model, name), conversation, chatBody };
}

/**
 * The caller's `input` as the Responses API lists it back (GET /v1/responses/{id}/input_items):
 * each item in its item form with an id. A string is one user message; a message's string content
 * becomes one text part (`input_text`, or `output_text` for an assistant turn). Ids the caller gave
 * are kept, so an item reads back as it was sent.
 */
export function inputItemsOf(input: string | any[]): Array<Record<string, unknown>> {
  const items = typeof input === 'string' ? [{ role: 'user', content: input }] : input;
  return items.map((item: any) => {
    const type = item.type ?? (item.role ? 'message' : undefined);
    if (type !== 'message') return { id: item.id ?? newId(type === 'function_call' ? 'fc' : 'item'), ...item };
    const partType = item.role === 'assistant' ? 'output_text' : 'input_text';
    const content = typeof item.content === 'string' ? [{ type: partType, text: item.content }] : item.content;
    return { id: item.id ?? newId('msg'), type: 'message', role: item.role, status: 'completed', content };
  });
}

/** The assistant turn a result adds to the conversation (chat form), for chaining. */
export function assistantTurn(r: {
  content: string;
  toolCalls: Array<{ id: string; name: string; arguments: string }>;
}): ChatMessage {
  const m: ChatMessage = { role: 'assistant', content: r.content || (r.toolCalls.length ? null : '') };
  if (r.toolCalls.length)
    m.tool_calls = r.toolCalls.map((c) => ({
      id: c.id,
      type: 'function',
      function: { name: c.name, arguments: c.arguments },
    }));
  return m;
}

// ---- out ----

export interface ResponseMeta {
  id: string;
  createdAt: number;
  model: string;
  provider: string;
  showReasoning: boolean;
  /** the request's echoed fields */
  body: Record<string, any>;
  /** web search: a text's url_citation annotations (streaming; the non-streaming route sets them itself) */
  annotate?: (text: string) => Array<Record<string, unknown>>;
}

export type ResponseStatus = 'queued' | 'in_progress' | 'completed' | 'incomplete' | 'failed' | 'cancelled';

function responsesUsage(u: Usage) {
  return {
    input_tokens: u.promptTokens,
    input_tokens_details: { cached_tokens: u.cachedTokens },
    output_tokens: u.completionTokens,
    output_tokens_details: { reasoning_tokens: u.reasoningTokens },
    total_tokens: u.promptTokens + u.completionTokens,
  };
}

function statusOf(finish: FinishReason): { status: ResponseStatus; incomplete: { reason: string } | null } {
  if (finish === 'length') return { status: 'incomplete', incomplete: { reason: 'max_output_tokens' } };
  if (finish === 'content_filter') return { status: 'incomplete', incomplete: { reason: 'content_filter' } };
  return { status: 'completed', incomplete: null };
}

/** The response object, without output yet (the skeleton streaming starts from and the terminal states fill in). */
export function responseShell(meta: ResponseMeta, status: ResponseStatus) {
  const b = meta.body;
  const format = b.text?.format ?? { type: 'text' };
  return {
    id: meta.id,
    object: 'response' as const,
    created_at: meta.createdAt,
    completed_at: null as number | null,
    status,
    background: b.background === true,
    error: null as { code: string; message: string } | null,
    incomplete_details: null as { reason: string } | null,
    instructions: b.instructions ?? null,
    max_output_tokens: b.max_output_tokens ?? null,
    metadata: b.metadata ?? {},
    model: meta.model,
    output: [] as any[],
    output_text: '',
    parallel_tool_calls: b.parallel_tool_calls ?? true,
    previous_response_id: b.previous_response_id ?? null,
    reasoning: { effort: b.reasoning?.effort ?? null, summary: null },
    store: b.store !== false,
    temperature: b.temperature ?? 1,
    text: {
      format:
        format.type === 'json_schema'
          ? {
              type: 'json_schema',
              name: format.name,
              schema: format.schema,
              strict: format.strict === true,
              ...(format.description ? { description: format.description } : {}),
            }
          : { type: format.type },
    },
    tool_choice: b.tool_choice ?? 'auto',
    tools: (b.tools ?? []).map((t: any) => ({
      type: 'function',
      name: t.name,
      description: t.description ?? null,
      parameters: t.parameters ?? null,
      strict: t.strict ?? true,
    })),
    top_p: b.top_p ?? 1,
    truncation: 'disabled',
    usage: null as ReturnType<typeof responsesUsage> | null,
    user: b.user ?? null,
    provider: meta.provider,
  };
}

export type ResponseObject = ReturnType<typeof responseShell>;

const messageItem = (id: string, text: string, status: string) => ({
  type: 'message',
  id,
  status,
  role: 'assistant',
  content: [{ type: 'output_text', text, annotations: [], logprobs: [] }],
});
const reasoningItem = (id: string, text: string) => ({
  type: 'reasoning',
  id,
  summary: [{ type: 'summary_text', text }],
});
const callItem = (id: string, callId: string, name: string, args: string, status: string) => ({
  type: 'function_call',
  id,
  call_id: callId,
  name,
  arguments: args,
  status,
});

/** The finished response for a non-streamed result. */
export function toResponse(r: InferenceResult, usage: Usage, meta: ResponseMeta): ResponseObject {
  const res = responseShell(meta, 'completed');
  if (meta.showReasoning && r.reasoning) res.output.push(reasoningItem(newId('rs'), r.reasoning));
  if (r.content || !r.toolCalls.length) res.output.push(messageItem(newId('msg'), r.content, 'completed'));
  for (const c of r.toolCalls) res.output.push(callItem(newId('fc'), c.id, c.name, c.arguments, 'completed'));
  return finish(res, r.finishReason, usage, r.content);
}

function finish(res: ResponseObject, reason: FinishReason, usage: Usage, text: string): ResponseObject {
  const s = statusOf(reason);
  res.status = s.status;
  res.incomplete_details = s.incomplete;
  res.completed_at = Math.floor(Date.now() / 1000);
  res.output_text = text;
  res.usage = responsesUsage(usage);
  return res;
}

export type Frame = [event: string, data: Record<string, any>];

/**
 * Builds the typed events of one streamed response, each with its sequence_number: created,
 * in_progress, per output item added → (content_part.added → output_text.delta… → output_text.done
 * → content_part.done | function_call_arguments.delta… → .done) → output_item.done, and a terminal
 * completed / incomplete / failed carrying the whole response.
 */
export class ResponseStreamer {
  private seq = 0;
  private readonly res: ResponseObject;
  private open: { kind: 'text' | 'reasoning'; index: number; id: string; text: string } | null = null;
  private readonly calls = new Map<
    number,
    { index: number; id: string; callId: string; name: string; args: string; done: boolean }
  >();
  private text = '';
  readonly toolCalls: Array<{ id: string; name: string; arguments: string }> = [];

  constructor(private readonly meta: ResponseMeta) {
    this.res = responseShell(meta, 'in_progress');
  }

  private frame(type: string, data: Record<string, any>): Frame {
    return [type, { type, sequence_number: this.seq++, ...data }];
  }

  private snapshot() {
    return JSON.parse(JSON.stringify(this.res));
  }

  start(): Frame[] {
    return [
      this.frame('response.created', { response: this.snapshot() }),
      this.frame('response.in_progress', { response: this.snapshot() }),
    ];
  }

  private closeOpen(): Frame[] {
    const o = this.open;
    if (!o) return [];
    this.open = null;
    if (o.kind === 'reasoning') {
      const item = reasoningItem(o.id, o.text);
      this.res.output[o.index] = item;
      return [
        this.frame('response.reasoning_summary_text.done', {
          item_id: o.id,
          output_index: o.index,
          summary_index: 0,
          text: o.text,
        }),
        this.frame('response.output_item.done', { output_index: o.index, item }),
      ];
    }
    const item = messageItem(o.id, o.text, 'completed');
    this.res.output[o.index] = item;
    const part = item.content[0];
    // web search citations are known once the text is whole: each announced, then on the part
    const annotations = this.meta.annotate?.(o.text) ?? [];
    (part as { annotations: unknown[] }).annotations = annotations;
    return [
      ...annotations.map((annotation, i) =>
        this.frame('response.output_text.annotation.added', {
          item_id: o.id,
          output_index: o.index,
          content_index: 0,
          annotation_index: i,
          annotation,
        }),
      ),
      this.frame('response.output_text.done', {
        item_id: o.id,
        output_index: o.index,
        content_index: 0,
        text: o.text,
        logprobs: [],
      }),
      this.frame('response.content_part.done', { item_id: o.id, output_index: o.index, content_index: 0, part }),
      this.frame('response.output_item.done', { output_index: o.index, item }),
    ];
  }

  private openItem(kind: 'text' | 'reasoning'): Frame[] {
    const frames = this.closeOpen();
    const index = this.res.output.length;
    const id = newId(kind === 'text' ? 'msg' : 'rs');
    this.open = { kind, index, id, text: '' };
    if (kind === 'reasoning') {
      this.res.output.push({ type: 'reasoning', id, summary: [] });
      frames.push(
        this.frame('response.output_item.added', { output_index: index, item: { type: 'reasoning', id, summary: [] } }),
      );
      return frames;
    }
    this.res.output.push({ type: 'message', id, status: 'in_progress', role: 'assistant', content: [] });
    frames.push(
      this.frame('response.output_item.added', {
        output_index: index,
        item: { type: 'message', id, status: 'in_progress', role: 'assistant', content: [] },
      }),
      this.frame('response.content_part.added', {
        item_id: id,
        output_index: index,
        content_index: 0,
        part: { type: 'output_text', text: '', annotations: [], logprobs: [] },
      }),
    );
    return frames;
  }

  event(e: StreamEvent): Frame[] {
    switch (e.type) {
      case 'text': {
        if (!e.text) return [];
        const frames = this.open?.kind === 'text' ? [] : this.openItem('text');
        this.open!.text += e.text;
        this.text += e.text;
        frames.push(
          this.frame('response.output_text.delta', {
            item_id: this.open!.id,
            output_index: this.open!.index,
            content_index: 0,
            delta: e.text,
            logprobs: [],
          }),
        );
        return frames;
      }
      case 'reasoning': {
        if (!this.meta.showReasoning || !e.text) return [];
        const frames = this.open?.kind === 'reasoning' ? [] : this.openItem('reasoning');
        this.open!.text += e.text;
        frames.push(
          this.frame('response.reasoning_summary_text.delta', {
            item_id: this.open!.id,
            output_index: this.open!.index,
            summary_index: 0,
            delta: e.text,
          }),
        );
        return frames;
      }
      case 'tool_call': {
        const frames: Frame[] = [];
        let call = this.calls.get(e.index);
        if (!call) {
          frames.push(...this.closeOpen());
          call = {
            index: this.res.output.length,
            id: newId('fc'),
            callId: e.id ?? newId('call'),
            name: e.name ?? '',
            args: '',
            done: false,
          };
          this.calls.set(e.index, call);
          this.res.output.push(callItem(call.id, call.callId, call.name, '', 'in_progress'));
          frames.push(
            this.frame('response.output_item.added', {
              output_index: call.index,
              item: callItem(call.id, call.callId, call.name, '', 'in_progress'),
            }),
          );
        }
        if (e.argumentsDelta) {
          call.args += e.argumentsDelta;
          frames.push(
            this.frame('response.function_call_arguments.delta', {
              item_id: call.id,
              output_index: call.index,
              delta: e.argumentsDelta,
            }),
          );
        }
        return frames;
      }
      default:
        return [];
    }
  }

  private closeAll(): Frame[] {
    const frames = this.closeOpen();
    for (const call of this.calls.values()) {
      if (call.done) continue;
      call.done = true;
      const item = callItem(call.id, call.callId, call.name, call.args || '{}', 'completed');
      this.res.output[call.index] = item;
      this.toolCalls.push({ id: call.callId, name: call.name, arguments: call.args || '{}' });
      frames.push(
        this.frame('response.function_call_arguments.done', {
          item_id: call.id,
          output_index: call.index,
          name: call.name,
          arguments: item.arguments,
        }),
        this.frame('response.output_item.done', { output_index: call.index, item }),
      );
    }
    return frames;
  }

  get outputText(): string {
    return this.text;
  }

  /** The closing frames and the terminal response.completed / response.incomplete. */
  end(reason: FinishReason, usage: Usage, bill: Bill): { frames: Frame[]; response: ResponseObject } {
    const frames = this.closeAll();
    finish(this.res, reason, usage, this.text);
    const response = this.snapshot();
    const type = this.res.status === 'incomplete' ? 'response.incomplete' : 'response.completed';
    frames.push(this.frame(type, { response: withBill({ ...response }, bill) }));
    return { frames, response };
  }

  /** The stream broke: close what is open, and the terminal response.failed. */
  fail(code: string, message: string, usage: Usage, bill: Bill): { frames: Frame[]; response: ResponseObject } {
    const frames = this.closeAll();
    finish(this.res, 'stop', usage, this.text);
    this.res.status = 'failed';
    this.res.error = { code, message };
    const response = this.snapshot();
    frames.push(this.frame('response.failed', { response: withBill({ ...response }, bill) }));
    return { frames, response };
  }
}
