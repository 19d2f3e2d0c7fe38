// ElevenLabs: text to speech and Eleven Music (speech.ts, music.ts).
import type { Provider } from '../types.js';
import { elevenlabsSpeech } from './speech.js';

export const elevenlabsProvider: Provider = {
  protocol: 'elevenlabs',
  speech: elevenlabsSpeech,
};
