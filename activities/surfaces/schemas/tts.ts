// POST /api/tts, as Ajv checks it: the spec's fields (`text` rather than `input`), plus `duration`
// (seconds of music, music models only). Types and ranges only; whether the voice, format and
// length suit the model is checked by planSpeech (activities/surfaces/speech.ts).
import { speechOptions } from './speech.js';

export const ttsRequestSchema = {
  type: 'object',
  required: ['text', 'model'],
  properties: {
    text: { type: 'string', minLength: 1 },
    model: { type: 'string', minLength: 1 },
    ...speechOptions,
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
