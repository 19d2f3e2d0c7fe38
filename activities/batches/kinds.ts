// biome-ignore-all lint/suspicious/noExplicitAny: row bodies are wire JSON, read field by field
// What differs between the endpoints a batch row may call: the row rules of the spec (checked
// before anything runs), the translation into the one internal request (the same one the
// synchronous route uses, so a row is exactly the synchronous request), and how its answer reads
// in the output. Everything else (running, billing, counting, cancelling) is the same for every
// row and lives in rows.ts and the workflow. A new endpoint (native message batches) is a new
// entry here.
import { chatRequestSchema } from '../surfaces/schemas/chat.js';
import { responsesRequestSchema } from '../surfaces/schemas/responses.js';
import { chatToInternal } from '../surfaces/chat.js';
import { toChatCompletion } from '../surfaces/chatResponse.js';
import { responsesToInternal } from '../surfaces/responses.js';
import { toResponse } from '../surfaces/responsesResponse.js';
import { newId } from '../core/ids.js';
import { messages } from './messageKind.js';
import type { BatchEndpoint, RowKind } from './rowKind.js';

/** The output cap an inline row gets when it sets none (spec, Limits). */
export const INLINE_DEFAULT_OUTPUT_CAP = 4096;

const positiveInt = (v: unknown) => Number.isInteger(v) && (v as number) > 0;

const chat: RowKind = {
  endpoint: '/v1/chat/completions',
  surface: 'batch:chat',
  capField: 'max_tokens',
  schema: chatRequestSchema,
  outputCap: (body) => body.max_completion_tokens ?? body.max_tokens,
  refusal(body) {
    if (!Array.isArray(body.messages) || body.messages.length === 0) return "'messages' must be a non-empty array.";
    for (const f of ['max_tokens', 'max_completion_tokens'])
      if (body[f] !== undefined && body[f] !== null && !positiveInt(body[f]))
        return `'${f}' must be a positive integer.`;
    return undefined;
  },
  translate: (body, model, name) => chatToInternal(body, model, name),
  render: (r, usage, bill, row) =>
    toChatCompletion(r, usage, bill, {
      id: newId('chatcmpl'),
      created: Math.floor(Date.now() / 1000),
      model: row.model,
      provider: row.provider,
      showReasoning: row.body.reasoning?.exclude !== true,
    }),
};

const responses: RowKind = {
  endpoint: '/v1/responses',
  surface: 'batch:responses',
  capField: 'max_output_tokens',
  schema: responsesRequestSchema,
  outputCap: (body) => body.max_output_tokens,
  refusal(body) {
    const input = body.input;
    if (!(typeof input === 'string' ? input.length > 0 : Array.isArray(input) && input.length > 0))
      return "'input' must be a non-empty string or array.";
    const cap = body.max_output_tokens;
    if (cap !== undefined && cap !== null && !(Number.isInteger(cap) && cap >= 16))
      return "'max_output_tokens' must be an integer of at least 16.";
    if (body.background === true) return "'background' does not apply to a batch row (the batch is the background).";
    if (body.previous_response_id) return "'previous_response_id' is not supported in a batch row.";
    return undefined;
  },
  translate: (body, model, name) => responsesToInternal(body, model, name),
  render(r, usage, bill, row) {
    const res = toResponse(r, usage, {
      id: newId('resp'),
      createdAt: Math.floor(Date.now() / 1000),
      model: row.model,
      provider: row.provider,
      showReasoning: row.body.reasoning?.exclude !== true,
      body: row.body,
    }) as Record<string, unknown>;
    res.cost = bill.cost;
    return res;
  },
};

const KINDS: Record<BatchEndpoint, RowKind> = {
  '/v1/chat/completions': chat,
  '/v1/responses': responses,
  '/v1/messages': messages,
};

export function rowKind(endpoint: string): RowKind {
  const kind = KINDS[endpoint as BatchEndpoint];
  if (!kind) throw new Error(`no batch row kind for ${endpoint}`);
  return kind;
}
