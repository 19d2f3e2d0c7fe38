// The advisor on chat completions (`advisor: {model, mode}`): the request's `model` is the executor,
// which writes the answer; `advisor.model`, a different model, advises it (README, "Advisor").
//   required  the advisor reads the conversation first and writes guidance for the executor; the
//             guidance goes to the executor as a system message before the latest user turn (where
//             web search puts its results), and the executor answers. Two phases.
//   auto      the executor is offered one gateway-side tool, `consult_advisor`. If it answers
//             without calling it, that is the answer (one phase). If it calls it, the advisor reads
//             the conversation and the executor's question, its advice goes back to the executor as
//             the tool's result, and the executor continues with the tool still declared but
//             tool_choice 'none', so it answers in text (three phases, the best gateways' loop).
// This file is the pure part: what is a valid advisor object, the prompts, and the messages of each
// phase. The phases run as metered calls of their own (activities/inference/addOns/advisor.ts).
import { catalog, type ModelInfo } from '../catalog/catalog.js';
import { RequestError } from '../core/errors.js';
import type { Message, ToolCall, ToolSpec } from '../core/types.js';
import { parseModelName } from '../routing/suffixes.js';

type AdvisorMode = 'auto' | 'required';

export interface AdvisorPlan {
  mode: AdvisorMode;
  /** the advisor (never the executor) */
  model: ModelInfo;
}

/** The most the advisor may write (fewer when its model's output limit is lower): guidance, not an answer. */
const ADVICE_MAX_TOKENS = 1024;
/** The executor's question to the advisor is cut to this many characters (it is reserved for up front). */
const QUESTION_MAX_CHARS = 2000;
/** The gateway-side tool offered to the executor in auto mode. */
const CONSULT_TOOL = 'consult_advisor';

const bad = (message: string, param = 'advisor') =>
  new RequestError(400, 'invalid_parameter_value', message, { param });

/**
 * The body's `advisor` (its shape already passed the schema: `model` a string, `mode` one of the
 * two) as a plan, or undefined when absent. The advisor model must exist, be a chat model, and be
 * a different model than the executor (aliases and suffixes resolved first).
 */
export function advisorPlanOf(raw: unknown, executor: ModelInfo): AdvisorPlan | undefined {
  if (raw === undefined || raw === null) return undefined;
  const { model: name, mode } = raw as { model: string; mode: AdvisorMode };
  const cat = catalog();
  const parsed = parseModelName(name, (n) => cat.model(n) !== undefined);
  if (parsed.suffixes.length)
    throw bad(
      `advisor.model '${name}' carries a suffix (${parsed.suffixes.join(', ')}); name the advisor by its plain model id.`,
      'advisor.model',
    );
  const model = cat.model(parsed.base);
  if (!model)
    throw bad(
      `advisor.model '${name}' is not a model here. GET /api/v1/models lists the chat models that can advise.`,
      'advisor.model',
    );
  if (model.category !== 'chat')
    throw bad(
      `advisor.model '${model.id}' is a ${model.category} model; the advisor must be a chat model.`,
      'advisor.model',
    );
  if (model.id === executor.id)
    throw bad(
      `advisor.model names '${model.id}', the request's own model. The advisor must be a different model: pick another one, or leave 'advisor' out.`,
      'advisor.model',
    );
  if (mode === 'auto' && executor.capabilities.tool_calling !== true)
    throw bad(
      `In mode 'auto' the executor consults the advisor through a tool call, and '${executor.id}' cannot call tools. Use mode 'required' (the advisor is then always consulted first).`,
      'advisor.mode',
    );
  return { mode, model };
}

/** The advice's output cap on the advisor's model. */
export function adviceMaxTokens(advisor: ModelInfo): number {
  return Math.min(ADVICE_MAX_TOKENS, advisor.maxOutputTokens ?? ADVICE_MAX_TOKENS);
}

const text = (t: string) => [{ type: 'text' as const, text: t }];

/** The advisor's instructions (documented in the README). */
function advisorSystemPrompt(): string {
  return (
    'You are an advisor to another AI model, the executor, which will write the reply to the conversation below. ' +
    'Do not write that reply yourself. Give the executor concise guidance for it: the approach to take, ' +
    'the key facts and steps, mistakes to avoid, and what a good reply must contain. Be brief and concrete.'
  );
}

/**
 * The advisor phase's messages: its instructions, the conversation as the caller sent it, and a last
 * user turn asking for guidance (with the executor's question in auto mode).
 */
export function advisorMessages(conversation: Message[], question?: string): Message[] {
  const ask =
    question === undefined
      ? 'Write your guidance for the executor now, for its reply to the last message above.'
      : `The executor asks you: ${question.slice(0, QUESTION_MAX_CHARS)}\n\nWrite your guidance for the executor now.`;
  return [
    { role: 'system', content: text(advisorSystemPrompt()) },
    ...conversation,
    { role: 'user', content: text(ask) },
  ];
}

/** Room in the advisor's reservation for the executor's question, which is not known until it asks. */
export function questionRoom(): string {
  return 'x'.repeat(QUESTION_MAX_CHARS);
}

/** Required mode: the conversation with the advice as a system message before the latest user turn. */
export function withAdvice(conversation: Message[], advisor: string, advice: string): Message[] {
  let at = conversation.length;
  for (let i = conversation.length - 1; i >= 0; i--)
    if (conversation[i].role === 'user') {
      at = i;
      break;
    }
  const note: Message = {
    role: 'system',
    content: text(
      `Guidance from an advisor model (${advisor}) for your reply to the latest user message. ` +
        `Use it where it helps; the reply is yours and must not mention the advisor.\n\n${advice}`,
    ),
  };
  return [...conversation.slice(0, at), note, ...conversation.slice(at)];
}

/** Auto mode: the tool the executor may call. */
export function consultTool(advisor: string): ToolSpec {
  return {
    name: CONSULT_TOOL,
    description:
      `Ask ${advisor}, a different AI model, for guidance before you reply: a plan, a second opinion, or a check ` +
      'of your reasoning. It sees the whole conversation. Call it at most once, and only when advice would ' +
      'make your reply better; otherwise reply directly.',
    parameters: {
      type: 'object',
      properties: { question: { type: 'string', description: 'What you want advice on.' } },
      required: ['question'],
    },
  };
}

/** The executor's question from its tool call: the `question` argument, else the raw arguments. */
export function questionOf(call: ToolCall): string {
  try {
    const args = JSON.parse(call.arguments);
    if (typeof args?.question === 'string' && args.question.trim()) return args.question.slice(0, QUESTION_MAX_CHARS);
  } catch {
    // a model that wrote no JSON still asked something
  }
  return (call.arguments.trim() || 'How should I reply?').slice(0, QUESTION_MAX_CHARS);
}

/**
 * Auto mode, the continuation: the conversation, the executor's turn that called the tool (its
 * text, if any, cut like the question, and the one call answered, its arguments as the question
 * the advisor got) and the advice as that call's result.
 */
export function continuation(conversation: Message[], said: string, call: ToolCall, advice: string): Message[] {
  const id = call.id || 'call_advisor';
  const asked: ToolCall = { id, name: CONSULT_TOOL, arguments: JSON.stringify({ question: questionOf(call) }) };
  return [
    ...conversation,
    { role: 'assistant', content: said ? text(said.slice(0, QUESTION_MAX_CHARS)) : [], toolCalls: [asked] },
    { role: 'tool', toolCallId: id, content: text(advice) },
  ];
}

/** Room for advice not yet written, for a reservation: the estimate counts 3 bytes a token, a token is at most ~4. */
export function adviceRoom(advisor: ModelInfo): string {
  return 'x'.repeat(adviceMaxTokens(advisor) * 4);
}

/** Room in the continuation's reservation for the executor's text, its question and the advice, known only later. */
export function continuationRoom(conversation: Message[], advisor: ModelInfo): Message[] {
  const question = { id: 'call_advisor', name: CONSULT_TOOL, arguments: JSON.stringify({ question: questionRoom() }) };
  return continuation(conversation, questionRoom(), question, adviceRoom(advisor));
}
