// The message-style (Anthropic Messages) request, as Ajv checks it before anything runs. Types and
// ranges here; rules that need more (first turn is the user's, thinking budget against max_tokens,
// block kinds and media types, tool_choice against tools) are checked in
// activities/surfaces/messages.ts. Unknown fields are allowed: clients send fields we do not use.
import { cachingFields } from './chat.js';
const block = { type: 'object', required: ['type'], properties: { type: { type: 'string' } } } as const;

const messageFields = {
  model: { type: 'string', minLength: 1, maxLength: 256 },
  messages: {
    type: 'array',
    minItems: 1,
    items: {
      type: 'object',
      required: ['role', 'content'],
      properties: {
        role: { type: 'string', enum: ['user', 'assistant'] },
        content: { anyOf: [{ type: 'string' }, { type: 'array', items: block }] },
      },
    },
  },
  system: { anyOf: [{ type: 'string' }, { type: 'array', items: block }] },
  tools: {
    type: 'array',
    items: {
      type: 'object',
      required: ['name'],
      properties: {
        name: { type: 'string' },
        description: { type: 'string' },
        input_schema: { type: 'object' },
        type: { type: 'string' },
      },
    },
  },
  tool_choice: {
    type: 'object',
    required: ['type'],
    properties: {
      type: { type: 'string', enum: ['auto', 'any', 'tool', 'none'] },
      name: { type: 'string' },
      disable_parallel_tool_use: { type: 'boolean' },
    },
  },
  thinking: {
    type: 'object',
    required: ['type'],
    properties: {
      type: { type: 'string', enum: ['enabled', 'disabled', 'adaptive'] },
      budget_tokens: { type: 'integer' },
    },
  },
  output_config: {
    type: 'object',
    properties: {
      effort: { type: 'string', enum: ['low', 'medium', 'high', 'max'] },
      format: {
        anyOf: [
          { type: 'null' },
          { type: 'object', required: ['type'], properties: { type: { type: 'string' }, schema: { type: 'object' } } },
        ],
      },
    },
  },
} as const;

export const messagesRequestSchema = {
  type: 'object',
  required: ['model', 'messages', 'max_tokens'],
  properties: {
    ...messageFields,
    max_tokens: { type: 'integer', minimum: 1 },
    stream: { type: 'boolean' },
    ...cachingFields,
    stop_sequences: { type: 'array', items: { type: 'string' }, maxItems: 16 },
    temperature: { type: 'number', minimum: 0, maximum: 1 },
    top_p: { type: 'number', minimum: 0, maximum: 1 },
    top_k: { type: 'integer', minimum: 0 },
    metadata: {
      type: 'object',
      properties: { user_id: { anyOf: [{ type: 'string', maxLength: 256 }, { type: 'null' }] } },
    },
  },
} as const;

/** count_tokens: the prompt-shaping fields only; no max_tokens. */
export const countTokensRequestSchema = {
  type: 'object',
  required: ['model', 'messages'],
  properties: messageFields,
} as const;
