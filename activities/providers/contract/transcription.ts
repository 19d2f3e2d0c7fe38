// Speech to text: the transcription capability's contract.
import type { ProviderTarget } from './target.js';

interface TranscriptionRequest {
  /** the upstream model name */
  model: string;
  /** `transcribe` keeps the spoken language; `translate` answers in English */
  task: 'transcribe' | 'translate';
  audio: { data: Buffer; filename: string; mediaType: string };
  /** ISO-639-1 language of the audio, when the caller knows it */
  language?: string;
  /** text to guide the style or continue a previous segment */
  prompt?: string;
  temperature?: number;
  /** timed segments wanted (subtitles, verbose answers) */
  segments: boolean;
}

/** A timed piece of the text; the upstream's own fields beside these (whisper: seek, tokens, avg_logprob, ...) are kept. */
export interface TranscriptSegment {
  start: number;
  end: number;
  text: string;
  [field: string]: unknown;
}

export interface Transcript {
  text: string;
  /** the audio's length as the upstream measured it, when it says */
  durationSeconds?: number;
  language?: string;
  segments?: TranscriptSegment[];
}

/** Audio in, text out, in one call. Failures are RequestErrors, as for chat; nothing is billed for them. */
export interface TranscriptionAdapter {
  transcribe(req: TranscriptionRequest, target: ProviderTarget, signal: AbortSignal): Promise<Transcript>;
}
