// The Responses API request (`POST /api/v1/responses`), as Ajv checks it before anything runs.
// Types and ranges here; the input items, tool specs and JSON-schema strictness are checked in
// activities/surfaces/responses.ts with specific codes. Unknown fields are allowed (SDK extras).
import { cachingFields, promptCachingSchema } from './chat.js';

const effort = { type: 'string', enum: ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'] };

export const responsesRequestSchema = {
  type: 'object',
  required: ['model', 'input'],
  properties: {
    model: { type: 'string', minLength: 1, maxLength: 256 },
    input: {
      anyOf: [
        { type: 'string', minLength: 1 },
        { type: 'array', minItems: 1, items: { type: 'object' } },
      ],
    },
    instructions: { anyOf: [{ type: 'string' }, { type: 'null' }] },
    ...cachingFields,
    prompt_caching: promptCachingSchema,
    promptCaching: promptCachingSchema,
    tools: { type: 'array', items: { type: 'object' } },
    tool_choice: {
      anyOf: [
        { type: 'string', enum: ['auto', 'none', 'required'] },
        {
          type: 'object',
          required: ['type', 'name'],
          properties: { type: { const: 'function' }, name: { type: 'string', minLength: 1 } },
        },
      ],
    },
    parallel_tool_calls: { anyOf: [{ type: 'boolean' }, { type: 'null' }] },
    text: {
      type: 'object',
      properties: {
        format: {
          type: 'object',
          required: ['type'],
          properties: {
            // 'questions': a decision model answers (activities/inference/addOns/questions.ts)
            type: { type: 'string', enum: ['text', 'json_object', 'json_schema', 'questions'] },
            questions: { type: 'object' },
            name: { type: 'string' },
            schema: { type: 'object' },
            strict: { anyOf: [{ type: 'boolean' }, { type: 'null' }] },
            description: { type: 'string' },
          },
        },
      },
    },
    reasoning: {
      anyOf: [
        { type: 'null' },
        { type: 'object', properties: { effort: { anyOf: [effort, { type: 'null' }] }, summary: {} } },
      ],
    },
    max_output_tokens: { anyOf: [{ type: 'integer', minimum: 1 }, { type: 'null' }] },
    temperature: { anyOf: [{ type: 'number', minimum: 0, maximum: 2 }, { type: 'null' }] },
    top_p: { anyOf: [{ type: 'number', minimum: 0, maximum: 1 }, { type: 'null' }] },
    store: { anyOf: [{ type: 'boolean' }, { type: 'null' }] },
    previous_response_id: { anyOf: [{ type: 'string', minLength: 1, maxLength: 128 }, { type: 'null' }] },
    metadata: {
      anyOf: [
        { type: 'null' },
        {
          type: 'object',
          maxProperties: 16,
          additionalProperties: { type: 'string', maxLength: 512 },
          propertyNames: { maxLength: 64 },
        },
      ],
    },
    stream: { anyOf: [{ type: 'boolean' }, { type: 'null' }] },
    background: { anyOf: [{ type: 'boolean' }, { type: 'null' }] },
    user: { type: 'string', maxLength: 256 },
  },
} as const;
