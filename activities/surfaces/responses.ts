// biome-ignore-all lint/suspicious/noExplicitAny: wire JSON, read field by field
// The Responses API surface (OpenAI `POST /v1/responses`): its input items translated to the chat
// surface's message form and then through chatToInternal (one translation to the internal request,
// so tools, structured output, reasoning and vision rules cannot drift from chat). The answer out
// is responsesResponse.ts. The body reaching here has passed activities/surfaces/schemas/responses.ts.
import type { ModelInfo } from '../catalog/catalog.js';
import { newId } from '../core/ids.js';
import type { ModelName } from '../routing/suffixes.js';
import { chatToInternal, type ChatPlanInput } from './chat.js';
import { checkJsonSchema, checkStrictSchema } from './jsonSchema.js';
import { notSupported, RequestError } from '../core/errors.js';
import { HOSTED_WEB_SEARCH_TOOLS } from '../search/settings.js';

const bad = (code: string, message: string, param: string | null = null) =>
  new RequestError(400, code, message, { param: param });
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

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
