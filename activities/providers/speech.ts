// The shape of a text-to-speech adapter, beside (not inside) the chat ProviderAdapter: speech has
// no messages, tokens or events, only text in and audio bytes out. One implementation per
// protocol: the built-in local engine, OpenAI's /audio/speech, ElevenLabs' text-to-speech (and
// ElevenLabs Music, for `kind: 'music'`). Failures are UpstreamError, exactly as for chat adapters.
import type { Route } from '../catalog/catalog.js';
import { type ProviderTarget } from './types.js';
import { localSpeechAdapter } from './local/speech.js';
import { openaiSpeechAdapter } from './openai/speech.js';
import { elevenlabsSpeechAdapter } from './elevenlabs/speech.js';
import { upstreamError } from '../core/errors.js';

export type SpeechFormat = 'mp3' | 'opus' | 'aac' | 'flac' | 'wav' | 'pcm';

export const FORMAT_CONTENT_TYPES: Record<SpeechFormat, string> = {
  mp3: 'audio/mpeg',
  opus: 'audio/ogg',
  aac: 'audio/aac',
  flac: 'audio/flac',
  wav: 'audio/wav',
  pcm: 'audio/pcm',
};

export interface SpeechRequest {
  /** the upstream model name */
  model: string;
  input: string;
  /** the upstream's voice (already mapped from our voice name) */
  voice: string;
  format: SpeechFormat;
  speed?: number;
  instructions?: string;
  /** 'music': `input` is a music prompt, `voice` is unused, `durationSeconds` is the length asked for */
  kind?: 'speech' | 'music';
  durationSeconds?: number;
  /** ElevenLabs-style voice controls (0..1 each), for models that have them */
  voiceSettings?: VoiceSettings;
}

export interface VoiceSettings {
  stability?: number;
  similarity_boost?: number;
  style?: number;
}

export interface SpeechAudio {
  contentType: string;
  /**
   * The audio bytes. The upstream call has been answered successfully when synthesize()
   * resolves; a failure while reading (a cut stream) is thrown from the iterator.
   */
  audio: AsyncIterable<Buffer>;
}

export interface SpeechAdapter {
  readonly protocol: string;
  synthesize(req: SpeechRequest, target: ProviderTarget, signal: AbortSignal): Promise<SpeechAudio>;
}

// Built on first use: the adapters import FORMAT_CONTENT_TYPES from here (a cycle at load time).
let adapters: Map<string, SpeechAdapter> | undefined;

export function speechAdapterFor(route: Route): SpeechAdapter {
  adapters ??= new Map([localSpeechAdapter, openaiSpeechAdapter, elevenlabsSpeechAdapter].map((a) => [a.protocol, a]));
  const a = adapters.get(route.provider.protocol);
  if (!a)
    throw upstreamError(
      `no speech adapter for protocol '${route.provider.protocol}' (provider ${route.provider.id})`,
      500,
      false,
    );
  return a;
}
