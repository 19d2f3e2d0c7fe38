// ElevenLabs text to speech: POST {base}/v1/text-to-speech/{voice_id}/stream?output_format=...
// with header `xi-api-key` and JSON {text, model_id, voice_settings?}; the answer is audio bytes.
// The family answers audio/mpeg (mp3_44100_128); pcm (24 kHz s16le) and opus are mapped when asked.
// `voice_settings` carries the caller's stability / similarity_boost / style (0..1) and speed
// (ElevenLabs accepts 0.7..1.2, so an OpenAI-style speed is clamped into that range); keys the
// caller did not send are left out, so the voice's stored settings apply to them.
// A request of kind 'music' goes to ElevenLabs Music instead (./music.ts).
import { send } from '../http.js';
import { type ProviderTarget } from '../types.js';
import type { UpstreamResponse } from '../http.js';
import { bodyChunks } from '../openai/speech.js';
import type { SpeechAdapter, SpeechFormat } from '../speech.js';
import { FORMAT_CONTENT_TYPES } from '../speech.js';
import { composeMusic } from './music.js';
import { RequestError, upstreamError, isRetryableStatus } from '../../core/errors.js';

const OUTPUT_FORMATS: Partial<Record<SpeechFormat, string>> = {
  mp3: 'mp3_44100_128',
  pcm: 'pcm_24000',
  opus: 'opus_48000_64',
};

export const elevenlabsSpeechAdapter: SpeechAdapter = {
  protocol: 'elevenlabs',
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

export function elevenlabsHeaders(target: ProviderTarget): Record<string, string> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'audio/mpeg',
    ...target.headers,
  };
  if (target.apiKey) headers['xi-api-key'] = target.apiKey;
  return headers;
}

/** ElevenLabs' error bodies are `{"detail":{"status":"invalid_api_key","message":"..."}}` (or `detail` as text, or FastAPI's list). */
export async function elevenlabsError(target: ProviderTarget, res: UpstreamResponse): Promise<RequestError> {
  const text = await res.body.text().catch(() => '');
  let message = text.slice(0, 500) || `HTTP ${res.status}`;
  try {
    const d = JSON.parse(text)?.detail;
    const m = typeof d === 'string' ? d : (d?.message ?? d?.[0]?.msg);
    if (typeof m === 'string' && m) message = m;
  } catch {
    // not JSON: keep the text
  }
  const retryAfter = Number(res.headers['retry-after']);
  return upstreamError(
    `${target.providerId} answered ${res.status}: ${message}`,
    res.status,
    isRetryableStatus(res.status),
    {
      providerId: target.providerId,
      retryAfterSeconds: Number.isFinite(retryAfter) ? retryAfter : undefined,
      upstreamBody: text.slice(0, 2000),
    },
  );
}
