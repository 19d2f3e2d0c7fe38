// ElevenLabs text to speech: POST {base}/v1/text-to-speech/{voice_id}/stream?output_format=...
// with header `xi-api-key` and JSON {text, model_id, voice_settings?}; the answer is audio bytes.
// The family answers audio/mpeg (mp3_44100_128); pcm (24 kHz s16le) and opus are mapped when asked.
// `voice_settings` carries the caller's stability / similarity_boost / style (0..1) and speed
// (ElevenLabs accepts 0.7..1.2, so an OpenAI-style speed is clamped into that range); keys the
// caller did not send are left out, so the voice's stored settings apply to them.
// A request of kind 'music' goes to ElevenLabs Music instead (./music.ts).
import { bodyChunks, send } from '../http.js';
import type { SpeechAdapter, SpeechFormat } from '../types.js';
import { FORMAT_CONTENT_TYPES } from '../types.js';
import { composeMusic } from './music.js';
import { elevenlabsError, elevenlabsHeaders } from './errors.js';

const OUTPUT_FORMATS: Partial<Record<SpeechFormat, string>> = {
  mp3: 'mp3_44100_128',
  pcm: 'pcm_24000',
  opus: 'opus_48000_64',
};

export const elevenlabsSpeech: SpeechAdapter = {
  async synthesize(req, target, signal) {
    if (req.kind === 'music') return composeMusic(req, target, signal);
    const outputFormat = OUTPUT_FORMATS[req.format] ?? 'mp3_44100_128';
    const body: Record<string, unknown> = { text: req.input, model_id: req.model };
    const settings: Record<string, number> = {};
    for (const k of ['stability', 'similarity_boost', 'style'] as const) {
      const v = req.voiceSettings?.[k];
      if (v !== undefined) settings[k] = v;
    }
    if (req.speed !== undefined && req.speed !== 1) settings.speed = Math.min(1.2, Math.max(0.7, req.speed));
    if (Object.keys(settings).length) body.voice_settings = settings;
    const url = `${target.baseUrl.replace(/\/+$/, '')}/v1/text-to-speech/${encodeURIComponent(req.voice)}/stream?output_format=${outputFormat}`;
    const res = await send(target.providerId, url, {
      headers: elevenlabsHeaders(target),
      body: JSON.stringify(body),
      signal,
    });
    if (res.status < 200 || res.status >= 300) throw await elevenlabsError(target, res);
    const type = res.headers['content-type'];
    const format =
      (Object.keys(OUTPUT_FORMATS) as SpeechFormat[]).find((f) => OUTPUT_FORMATS[f] === outputFormat) ?? 'mp3';
    return {
      contentType: (Array.isArray(type) ? type[0] : type) ?? FORMAT_CONTENT_TYPES[format],
      audio: bodyChunks(target.providerId, res.body),
    };
  },
};
