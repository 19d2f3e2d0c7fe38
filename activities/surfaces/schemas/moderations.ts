// The moderations request, as OpenAI's API takes it: `input` (a string, strings, or text parts;
// checked in activities/moderation/moderate.ts, which says exactly what is wrong) and an optional
// `model` (default openai/omni-moderation-latest, as OpenAI's own default). Unknown fields are
// allowed, as on chat: clients send vendor extensions.
export const moderationsRequestSchema = {
  type: 'object',
  required: ['input'],
  properties: {
    model: { type: 'string', minLength: 1 },
    input: { type: ['string', 'array'] },
  },
} as const;
