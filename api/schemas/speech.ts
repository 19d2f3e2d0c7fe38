// The OpenAI-style speech request, as Ajv checks it. Types and ranges only: whether the voice,
// the format and the length suit the chosen model is checked in activities/surfaces/speech.ts,
// with the spec's speech codes (invalid_voice, unsupported_format, input_too_long).
export const speechRequestSchema = {
  type: 'object',
  required: ['model', 'input'],
  properties: {
    model: { type: 'string', minLength: 1 },
    input: { type: 'string', minLength: 1 },
    voice: { type: 'string', minLength: 1 },
    response_format: { type: 'string' },
    speed: { type: 'number', minimum: 0.25, maximum: 4 },
    instructions: { type: 'string', maxLength: 4096 },
    stream: { type: 'boolean' },
    stream_format: { type: 'string' },
  },
} as const;
