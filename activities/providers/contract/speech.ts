// Text to speech (and music): the speech capability's contract.
import type { ProviderTarget } from './target.js';

export type SpeechFormat = 'mp3' | 'opus' | 'aac' | 'flac' | 'wav' | 'pcm';

export const FORMAT_CONTENT_TYPES: Record<SpeechFormat, string> = {
  mp3: 'audio/mpeg',
  opus: 'audio/ogg',
  aac: 'audio/aac',
  flac: 'audio/flac',
  wav: 'audio/wav',
  pcm: 'audio/pcm',
};

export interface VoiceSettings {
  stability?: number;
  similarity_boost?: number;
  style?: number;
}

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

export interface SpeechAudio {
  contentType: string;
  /**
   * The audio bytes. The upstream call has been answered successfully when synthesize()
   * resolves; a failure while reading (a cut stream) is thrown from the iterator.
   */
  audio: AsyncIterable<Buffer>;
}

/** Text to speech (and music): text in, audio bytes out. Failures are RequestErrors, as for chat. */
export interface SpeechAdapter {
  synthesize(req: SpeechRequest, target: ProviderTarget, signal: AbortSignal): Promise<SpeechAudio>;
}
