// POST /api/tts, as Ajv checks it: the spec's fields (`text` rather than `input`), plus `duration`
// (seconds of music, music models only). Types and ranges only; whether the voice, format and
// length suit the model is checked by planSpeech (activities/surfaces/speech.ts).
import { voiceControls } from './speech.js';

export const ttsRequestSchema = {
  type: 'object',
  required: ['text', 'model'],
  properties: {
    text: { type: 'string', minLength: 1 },
    model: { type: 'string', minLength: 1 },
    voice: { type: 'string', minLength: 1 },
    speed: { type: 'number', minimum: 0.25, maximum: 4 },
    response_format: { type: 'string' },
    instructions: { type: 'string', maxLength: 4096 },
    ...voiceControls,
    duration: { type: 'integer', minimum: 1, maximum: 3600 },
  },
} as const;

export const ttsStatusQuerySchema = {
  type: 'object',
  required: ['runId'],
  properties: {
    runId: { type: 'string', minLength: 1, maxLength: 100 },
    model: { type: 'string', minLength: 1 },
  },
} as const;
