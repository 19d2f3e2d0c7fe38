// The OpenAI-style speech request, as Ajv checks it. Types and ranges only: whether the voice,
// the format and the length suit the chosen model is checked in activities/surfaces/speech.ts,
// with the spec's speech codes (invalid_voice, unsupported_format, input_too_long).
/** ElevenLabs-style voice controls, 0..1 each; ignored by models without them. */
const voiceControls = {
  stability: { type: 'number', minimum: 0, maximum: 1 },
  similarity_boost: { type: 'number', minimum: 0, maximum: 1 },
  style: { type: 'number', minimum: 0, maximum: 1 },
} as const;

/** What both speech routes take besides the text and the model (/v1/audio/speech and /api/tts). */
export const speechOptions = {
  voice: { type: 'string', minLength: 1 },
  response_format: { type: 'string' },
  speed: { type: 'number', minimum: 0.25, maximum: 4 },
  instructions: { type: 'string', maxLength: 4096 },
  // extensions: voice controls (models with voice_settings) and the length of music
  ...voiceControls,
  duration: { type: 'integer', minimum: 1, maximum: 3600 },
} as const;

export const speechRequestSchema = {
  type: 'object',
  required: ['model', 'input'],
  properties: {
    model: { type: 'string', minLength: 1 },
    input: { type: 'string', minLength: 1 },
    stream: { type: 'boolean' },
    stream_format: { type: 'string' },
    ...speechOptions,
  },
} as const;
