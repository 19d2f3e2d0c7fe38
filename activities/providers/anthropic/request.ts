// An InferenceRequest as a Messages API body (POST /v1/messages). The plan also remembers how
// to read the answer back (JSON mode rides on a tool, see jsonToolFor).
import type { InferenceRequest, ResponseFormat } from '../../core/types.js';
import { toConversation, type AnthropicMessage } from './messages.js';
import { samplingFor, thinkingFor } from './thinking.js';

/** The tool that carries a JSON answer, and whether its schema was wrapped in `{value}`. */
export interface JsonTool {
  name: string;
  wrapped: boolean;
}

export interface MessagesPlan {
  body: Record<string, unknown>;
  jsonTool?: JsonTool;
  /** the caller asked not to see the reasoning text */
  hideReasoning: boolean;
}

const JSON_TOOL_NAME = 'json_response';

export function toMessagesRequest(req: InferenceRequest, opts: { stream?: boolean } = {}): MessagesPlan {
  const { system, messages } = toConversation(req.messages, req.prompt);
  const json = jsonToolFor(req.responseFormat);

  const tools: Array<Record<string, unknown>> = (req.tools ?? []).map((t) => ({
    name: t.name,
    ...(t.description ? { description: t.description } : {}),
    input_schema:
      t.parameters && Object.keys(t.parameters).length > 0
        ? { type: 'object', ...t.parameters }
        : { type: 'object', properties: {} },
    ...(t.cacheControl ? { cache_control: t.cacheControl } : {}),
  }));
  let toolChoice: Record<string, unknown> | undefined = toolChoiceFor(req);
  if (json) {
    tools.push(json.spec);
    // Without tools of the caller's own to choose from, the answer IS the JSON tool call. With
    // them, the caller's choice stands and the model may answer through the JSON tool.
    if (!req.tools?.length || req.toolChoice === 'none') toolChoice = { type: 'tool', name: json.tool.name };
  }
  if (toolChoice && req.parallelToolCalls === false && toolChoice.type !== 'none')
    toolChoice.disable_parallel_tool_use = true;
  if (!toolChoice && req.parallelToolCalls === false) toolChoice = { type: 'auto', disable_parallel_tool_use: true };
  // native web search: Anthropic's server tool, at most maxUses searches in this turn
  if (req.webSearch)
    tools.push({
      type: 'web_search_20250305',
      name: 'web_search',
      ...(req.webSearch.maxUses ? { max_uses: req.webSearch.maxUses } : {}),
    });
  if (tools.length === 0) toolChoice = undefined; // Anthropic rejects a tool_choice without tools

  // Anthropic rejects thinking together with a forced tool, and inside a tool loop whose
  // assistant turn does not start with its signed thinking block (a caller that sent the block
  // back, signature and all, keeps thinking on). Forced tools and unsigned tool loops win:
  // thinking is left off for that call.
  const forcesTool = toolChoice?.type === 'tool' || toolChoice?.type === 'any';
  const thinking = forcesTool || inUnsignedToolLoop(messages) ? undefined : thinkingFor(req);

  const body: Record<string, unknown> = {
    model: req.model,
    max_tokens: req.maxTokens,
    ...(system !== undefined ? { system } : {}),
    messages,
    ...samplingFor(req, thinking !== undefined),
    ...(thinking ? { thinking } : {}),
    ...(tools.length > 0 ? { tools } : {}),
    ...(toolChoice ? { tool_choice: toolChoice } : {}),
    ...(req.user ? { metadata: { user_id: req.user } } : {}),
    ...(opts.stream ? { stream: true } : {}),
  };
  return { body, jsonTool: json?.tool, hideReasoning: req.reasoning?.exclude === true };
}

/**
 * Tool choice as Anthropic spells it. 'none' is sent as `{type:'none'}` with the tools kept,
 * rather than dropping the tools: a conversation that holds tool_use blocks must still declare them.
 */
function toolChoiceFor(req: InferenceRequest): Record<string, unknown> | undefined {
  const c = req.toolChoice;
  if (c === undefined) return undefined;
  if (c === 'auto') return { type: 'auto' };
  if (c === 'required') return { type: 'any' };
  if (c === 'none') return { type: 'none' };
  return { type: 'tool', name: c.name };
}

/**
 * JSON mode. The stable Messages API has no JSON response format, so the schema becomes the
 * input_schema of one extra tool the model is made to call; the tool's input is then returned as
 * the message content (JSON text) with finish reason 'stop', as an OpenAI-style caller expects.
 * `json_object` gets an open object schema. A tool input must be an object, so a schema whose root
 * is not one (an array, a string) is wrapped as `{value: <schema>}` and unwrapped on the way back.
 */
function jsonToolFor(
  format: ResponseFormat | undefined,
): { tool: JsonTool; spec: Record<string, unknown> } | undefined {
  if (!format || format.type === 'text') return undefined;
  let schema: Record<string, unknown> =
    format.type === 'json_schema' ? format.schema : { type: 'object', additionalProperties: true };
  const isObject = schema.type === 'object' || (schema.type === undefined && typeof schema.properties === 'object');
  const wrapped = !isObject;
  if (wrapped) schema = { type: 'object', properties: { value: schema }, required: ['value'] };
  else if (schema.type === undefined) schema = { type: 'object', ...schema };
  const what =
    format.type === 'json_schema'
      ? `"${format.name}"${format.description ? `: ${format.description}` : ''}`
      : 'a JSON object';
  return {
    tool: { name: JSON_TOOL_NAME, wrapped },
    spec: {
      name: JSON_TOOL_NAME,
      description: `Give your final answer by calling this tool with ${what}.`,
      input_schema: schema,
    },
  };
}

/** The conversation ends with tool results answering an assistant turn that holds no signed thinking. */
function inUnsignedToolLoop(messages: AnthropicMessage[]): boolean {
  const last = messages[messages.length - 1];
  if (last?.role !== 'user' || !last.content.some((b) => b.type === 'tool_result')) return false;
  const asked = messages[messages.length - 2];
  const first = asked?.role === 'assistant' ? asked.content[0] : undefined;
  return first?.type !== 'thinking' && first?.type !== 'redacted_thinking';
}
