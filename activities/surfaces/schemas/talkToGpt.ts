// The legacy talk-to-gpt request (POST /api/talk-to-gpt), as Ajv checks it. That at least one of
// `prompt` and `messages` is present is checked in activities/surfaces/talkToGpt.ts, with a
// message naming both. Unknown fields are allowed, as on chat.
import { providerPreferencesSchema } from './chat.js';

export const talkToGptRequestSchema = {
  type: 'object',
  required: ['model'],
  properties: {
    model: { type: 'string', minLength: 1, maxLength: 256 },
    prompt: { type: 'string' },
    messages: {
      type: 'array',
      items: {
        type: 'object',
        required: ['role', 'content'],
        properties: {
          role: { type: 'string', enum: ['system', 'developer', 'user', 'assistant'] },
          content: {
            anyOf: [
              { type: 'string' },
              {
                type: 'array',
                items: { type: 'object', required: ['type'], properties: { type: { type: 'string' } } },
              },
            ],
          },
        },
      },
    },
    provider: providerPreferencesSchema,
  },
} as const;
