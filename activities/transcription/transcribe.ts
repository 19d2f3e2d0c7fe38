// Speech to text (POST /api/v1/audio/transcriptions and /translations) as a metered call, billed
// per second of audio. The seconds billed are the audio's length: as the upstream measured it when
// it says (whisper's verbose answers), else as the gateway reads it from the file (WAV, MP3:
// media/audioDuration.ts), rounded up to a whole second. A route that states no length is only
// used for audio the gateway can measure, so every charge is of a known length; the reservation
// is the measured length, or for audio it cannot measure, what the file could hold at the lowest
// bitrate in use (4 kbit/s).
//
// Route option `verbose_json: true`: the upstream gives timed segments and the length (whisper).
// Subtitles (srt, vtt) and verbose answers need segments, so they only go to such routes.
import type { Caller } from '../core/caller.js';
import { catalog, type ModelInfo, type Route } from '../catalog/catalog.js';
import { RequestError, upstreamError } from '../core/errors.js';
import { resolveModel } from '../catalog/resolve.js';
import { audioSeconds } from '../media/audioDuration.js';
import { type Charge, MeteredCall } from '../metering/meteredCall.js';
import { capability, targetFor } from '../providers/registry.js';
import type { Transcript } from '../providers/types.js';
import { planRoute } from '../routing/planRoute.js';

/** OpenAI's upload limit for audio, kept here: a larger file is refused before anything is held. */
export const MAX_AUDIO_BYTES = 25 * 1024 * 1024;
/** The lowest bitrate in common use (speech codecs), in bytes per second: the reservation's bound. */
const LOWEST_BYTES_PER_SECOND = 500;
const NO_NEEDS = { tools: false, images: false, structuredOutput: false, caching: false };

export type TranscriptFormat = 'json' | 'text' | 'srt' | 'verbose_json' | 'vtt';

export interface TranscriptionAsk {
  model: string;
  task: 'transcribe' | 'translate';
  audio: { data: Buffer; filename: string; mediaType: string };
  language?: string;
  prompt?: string;
  temperature?: number;
  format: TranscriptFormat;
  provider?: string;
}

export interface TranscriptionPlan {
  ask: TranscriptionAsk;
  model: ModelInfo;
  routes: Route[];
  /** the length the gateway read from the file, when it could */
  measured?: number;
  /** the format asked for needs timed segments (subtitles, verbose answers) */
  needsSegments: boolean;
  /** the most seconds this request can be billed for */
  worstSeconds: number;
}

const bad = (code: string, message: string, param: string) => new RequestError(400, code, message, { param });
const timed = (r: Route) => r.options.verbose_json === true;

/** The request against the model and its routes; every refusal is a 400 before anything is held. */
export function planTranscription(ask: TranscriptionAsk, caller: Caller): TranscriptionPlan {
  const { model } = resolveModel(ask.model, 'transcription');
  const endpoint = ask.task === 'translate' ? '/v1/audio/translations' : '/v1/audio/transcriptions';
  if (!model.supportedEndpoints.includes(endpoint))
    throw bad(
      'invalid_parameter_value',
      `Model '${model.id}' does not serve ${endpoint}. GET /api/v1/models lists which transcription models do.`,
      'model',
    );
  if (ask.audio.data.length === 0) throw bad('invalid_parameter_value', "'file' is empty: send the audio.", 'file');
  const measured = audioSeconds(ask.audio.data);
  let routes = planRoute(catalog(), model, caller, ask.provider ? { explicit: ask.provider } : {}, NO_NEEDS);
  const needsSegments = ask.format === 'srt' || ask.format === 'vtt' || ask.format === 'verbose_json';
  if (needsSegments) {
    routes = routes.filter(timed);
    if (!routes.length)
      throw bad(
        'invalid_parameter_value',
        `Model '${model.id}' answers text only here: response_format '${ask.format}' needs timed segments. Use json or text, or a whisper model.`,
        'response_format',
      );
  }
  if (measured === undefined) {
    routes = routes.filter(timed);
    if (!routes.length)
      throw bad(
        'unsupported_audio_format',
        `Model '${model.id}' is billed by the audio's length, which the gateway reads from WAV and MP3 files only, and this file is neither (or is damaged). Send WAV or MP3, or use a whisper model.`,
        'file',
      );
  }
  const worstSeconds = Math.ceil(measured ?? ask.audio.data.length / LOWEST_BYTES_PER_SECOND);
  return { ask, model, routes, measured, needsSegments, worstSeconds: Math.max(1, worstSeconds) };
}

export interface Transcribed {
  transcript: Transcript;
  /** whole seconds billed */
  seconds: number;
  route: Route;
}

/** The cost of `seconds` on a route: its per-second price (nano-USD), per whole second. */
const costOf = (route: Route, seconds: number) => BigInt(seconds) * route.price.input;

export class TranscriptionCall {
  readonly metered: MeteredCall;

  constructor(
    caller: Caller,
    requestId: string,
    readonly plan: TranscriptionPlan,
  ) {
    this.metered = new MeteredCall({
      caller,
      requestId,
      surface: plan.ask.task === 'translate' ? 'translation' : 'transcription',
      modelId: plan.model.id,
      routes: plan.routes,
      worstCase: (route) => costOf(route, plan.worstSeconds),
      shortfall: (required, available) =>
        `transcribing this audio may cost up to $${required} (${plan.worstSeconds} s${plan.measured === undefined ? ', the most this file could hold: send WAV or MP3 to be held for its exact length' : ''}) and $${available} is available. Add funds, or send shorter audio.`,
    });
  }

  reserve(): Promise<unknown> {
    return this.metered.reserve();
  }

  /** The text from the first route that answers, and the seconds to bill. Nothing is charged yet. */
  async transcribe(signal: AbortSignal): Promise<Transcribed> {
    const { ask, measured, needsSegments, worstSeconds } = this.plan;
    const { value, route } = await this.metered.attempt(signal, async (route) => {
      const transcript = await capability(route, 'transcription').transcribe(
        {
          model: route.upstreamModel,
          task: ask.task,
          audio: ask.audio,
          language: ask.language,
          prompt: ask.prompt,
          temperature: ask.temperature,
          segments: needsSegments,
        },
        targetFor(route),
        signal,
      );
      const length = transcript.durationSeconds ?? measured;
      if (length === undefined || (needsSegments && !transcript.segments))
        throw upstreamError(
          `${route.provider.id} answered without ${length === undefined ? "the audio's length" : 'timed segments'}`,
          502,
          true,
          { code: 'upstream_bad_response', providerId: route.provider.id },
        );
      // never more than was held: an upstream's length beyond the file's bound is not the caller's to pay
      return { transcript, seconds: Math.min(worstSeconds, Math.max(1, Math.ceil(length))) };
    });
    return { ...value, route };
  }

  settle(t: Transcribed): Promise<Charge> {
    return this.metered.settle(costOf(t.route, t.seconds), { inputUnits: t.seconds, outputUnits: 0 });
  }

  orRelease<T>(work: Promise<T>): Promise<T> {
    return this.metered.orRelease(work);
  }
}

const clock = (s: number, sep: ',' | '.') => {
  const ms = Math.round(s * 1000);
  const pad = (n: number, w = 2) => String(n).padStart(w, '0');
  return `${pad(Math.floor(ms / 3_600_000))}:${pad(Math.floor(ms / 60_000) % 60)}:${pad(Math.floor(ms / 1000) % 60)}${sep}${pad(ms % 1000, 3)}`;
};

/** A transcript as subtitles: SubRip (numbered cues, `,` before the milliseconds) or WebVTT. */
export function subtitles(t: Transcript, format: 'srt' | 'vtt'): string {
  const segments = t.segments ?? [];
  if (format === 'srt')
    return segments
      .map((s, i) => `${i + 1}\n${clock(s.start, ',')} --> ${clock(s.end, ',')}\n${s.text.trim()}\n`)
      .join('\n');
  return `WEBVTT\n\n${segments.map((s) => `${clock(s.start, '.')} --> ${clock(s.end, '.')}\n${s.text.trim()}\n`).join('\n')}`;
}
