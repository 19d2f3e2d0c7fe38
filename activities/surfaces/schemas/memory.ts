// The memory request (spec "Memory"): `messages` (roles user, assistant, system, tool, function;
// an assistant's `tool_calls` are accepted and ignored), `expiration_days` 1-365, and
// `model_context_limit` (under 10,000 is raised to 10,000; at most what its int4 column holds).
// `messages` being a non-empty array is checked by the activity, with the spec's own message.
export const memoryRequestSchema = {
  type: 'object',
  properties: {
    // no `type` here: anything but a non-empty array gets the spec's own message (the activity's)
    messages: {
      items: {
        type: 'object',
        required: ['role'],
        properties: {
          role: { type: 'string', enum: ['user', 'assistant', 'system', 'tool', 'function'] },
          content: { anyOf: [{ type: 'string' }, { type: 'array' }, { type: 'null' }] },
        },
      },
    },
    expiration_days: { type: 'integer', minimum: 1, maximum: 365 },
    model_context_limit: { type: 'integer', minimum: 1, maximum: 2_147_483_647 },
  },
} as const;
