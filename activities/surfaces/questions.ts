// biome-ignore-all lint/suspicious/noExplicitAny: wire JSON, read field by field
// Decision models through the text surfaces (spec "Decisions"; wire-details "Decisions"): chat's
// `response_format: {type:'questions', questions}` answers the JSON text of the answers in
// `choices[0].message.content`, messages' `output_config.format: {type:'questions', questions}`
// in `content[0].text`, responses' `text.format: {type:'questions', questions}` in `output_text`
// (not stored: such a response has no stored conversation to continue). The state is the caller's user text; non-streaming only, no tools, no
// images, no other roles. The call is the decisions route's own (decideOnce, run by the questions
// add-on, activities/inference/addOns/questions.ts): same rules, same metered call, one charge.
import type { TextBody } from '../core/types.js';
import { RequestError } from '../core/errors.js';
import type { DecisionsBody } from '../decisions/decide.js';
import type { QuestionsFormat } from '../inference/codec.js';
import { withBill } from './chatResponse.js';

const bad = (code: string, message: string, param: string) => new RequestError(400, code, message, { param });

/** The user text of a conversation: the decision's state. Anything but user text is refused. */
function userText(messages: any[], system: unknown, systemParam: string): string {
  if (system !== undefined && system !== null)
    throw bad(
      'invalid_parameter_value',
      `The questions format takes user text only: remove '${systemParam}'.`,
      systemParam,
    );
  const texts: string[] = [];
  messages.forEach((m, i) => {
    if (m?.role !== 'user')
      throw bad(
        'invalid_parameter_value',
        `The questions format takes user text only; messages[${i}] is a '${m?.role}' turn. Send the state as user messages.`,
        `messages[${i}].role`,
      );
    const parts = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content;
    if (!Array.isArray(parts))
      throw bad('invalid_parameter_value', `messages[${i}].content must be text.`, `messages[${i}].content`);
    parts.forEach((p: any, j: number) => {
      if (p?.type !== 'text' || typeof p.text !== 'string')
        throw bad(
          p?.type === 'image' || p?.type === 'image_url' ? 'image_input_not_supported' : 'invalid_parameter_value',
          `The questions format takes user text only; messages[${i}].content[${j}] is '${p?.type}'.`,
          `messages[${i}].content[${j}]`,
        );
      texts.push(p.text);
    });
  });
  if (!texts.length) throw bad('missing_required_parameter', 'Send the state as user text.', 'messages');
  return texts.join('\n\n');
}

/** What the text surfaces refuse in the questions format (no streaming, no tools), then the decision body. */
function decisionBody(body: TextBody, questions: unknown, param: string, systemParam = 'system'): DecisionsBody {
  if (body.stream === true)
    throw bad('unsupported_stream', 'The questions format answers in one piece: remove stream.', 'stream');
  if (Array.isArray(body.tools) && body.tools.length)
    throw bad('invalid_parameter_value', 'The questions format takes no tools: remove them.', 'tools');
  if (typeof questions !== 'object' || questions === null || Array.isArray(questions))
    throw bad('invalid_parameter_value', `'${param}' must be an object of named questions.`, param);
  if (body.provider !== undefined && (typeof body.provider !== 'object' || Array.isArray(body.provider)))
    throw bad(
      'invalid_parameter_value',
      "A decision model's 'provider' is an object of routing controls (or null).",
      'provider',
    );
  return {
    model: body.model,
    state: userText(body.messages, body.system, systemParam),
    questions: questions as Record<string, unknown>,
    provider: body.provider,
    user: typeof body.user === 'string' ? body.user : undefined,
  };
}

export const chatQuestions: QuestionsFormat = {
  find: (body) => (body.response_format?.type === 'questions' ? (body.response_format.questions ?? null) : undefined),
  decision: (body, questions) => decisionBody(body, questions, 'response_format.questions'),
  render({ plan, decision, bill }, body, requestId) {
    const { inputTokens: input, outputTokens: output } = decision;
    // the charge is exact either way; `include_usage: true` names it `cost`, as the spec asks
    const costField = body.include_usage === true ? 'cost' : 'estimated_cost';
    return withBill(
      {
        id: `chatcmpl-${requestId.slice(4)}`,
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model: plan.model.id,
        provider: decision.route.provider.id,
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: JSON.stringify(decision.answers), refusal: null },
            logprobs: null,
            finish_reason: 'stop',
          },
        ],
        usage: {
          prompt_tokens: input,
          completion_tokens: output,
          total_tokens: input + output,
          [costField]: bill.cost,
        },
      },
      bill,
    );
  },
};

/** A Responses `input` as chat-style user turns (a string, or message items of input_text parts). */
function responsesTurns(input: unknown): any[] {
  if (typeof input === 'string') return [{ role: 'user', content: input }];
  if (!Array.isArray(input)) return [];
  return input.map((item: any) => ({
    role: item?.type === undefined || item?.type === 'message' ? item?.role : item?.type,
    content:
      typeof item?.content === 'string'
        ? item.content
        : Array.isArray(item?.content)
          ? item.content.map((p: any) => (p?.type === 'input_text' ? { type: 'text', text: p.text } : p))
          : item?.content,
  }));
}

export const responsesQuestions: QuestionsFormat = {
  find: (body) => (body.text?.format?.type === 'questions' ? (body.text.format.questions ?? null) : undefined),
  decision(body, questions) {
    const asChat = { ...body, messages: responsesTurns(body.input), system: body.instructions ?? undefined };
    return decisionBody(asChat, questions, 'text.format.questions', 'instructions');
  },
  render({ plan, decision, bill }, _body, requestId) {
    const id = requestId.slice(4);
    const text = JSON.stringify(decision.answers);
    const { inputTokens: input, outputTokens: output } = decision;
    return withBill(
      {
        id: `resp_${id}`,
        object: 'response',
        created_at: Math.floor(Date.now() / 1000),
        status: 'completed',
        model: plan.model.id,
        output: [
          {
            type: 'message',
            id: `msg_${id}`,
            status: 'completed',
            role: 'assistant',
            content: [{ type: 'output_text', text, annotations: [] }],
          },
        ],
        output_text: text,
        store: false,
        usage: { input_tokens: input, output_tokens: output, total_tokens: input + output },
      },
      bill,
    );
  },
};

export const messagesQuestions: QuestionsFormat = {
  find: (body) =>
    body.output_config?.format?.type === 'questions' ? (body.output_config.format.questions ?? null) : undefined,
  decision: (body, questions) => decisionBody(body, questions, 'output_config.format.questions'),
  render({ plan, decision, bill }, _body, requestId) {
    return withBill(
      {
        id: `msg_${requestId.slice(4)}`,
        type: 'message',
        role: 'assistant',
        model: plan.model.id,
        content: [{ type: 'text', text: JSON.stringify(decision.answers) }],
        stop_reason: 'end_turn',
        stop_sequence: null,
        usage: { input_tokens: decision.inputTokens, output_tokens: decision.outputTokens },
      },
      bill,
    );
  },
};
