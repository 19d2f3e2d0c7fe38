// ElevenLabs Music ("compose music"): POST {base}/v1/music?output_format=mp3_44100_128 with header
// `xi-api-key` and JSON {prompt, music_length_ms, model_id}; the answer is the whole song as
// audio bytes (audio/mpeg), sent once it has been composed, which takes a while: that is why the
// catalog marks music models `async` for POST /api/tts. ElevenLabs meters music by its length,
// so the length is always sent (the caller's `duration`, else the model's default): what we bill
// is exactly what was asked for.
import { bodyChunks, send } from '../http.js';
import type { SpeechAudio, SpeechFormat, SpeechRequest } from '../types.js';
import { FORMAT_CONTENT_TYPES } from '../types.js';
import type { ProviderTarget } from '../types.js';
import { elevenlabsError, elevenlabsHeaders } from './errors.js';

const OUTPUT_FORMATS: Partial<Record<SpeechFormat, string>> = {
  mp3: 'mp3_44100_128',
  pcm: 'pcm_44100',
  opus: 'opus_48000_128',
};

export async function composeMusic(
  req: SpeechRequest,
  target: ProviderTarget,
  signal: AbortSignal,
): Promise<SpeechAudio> {
  const outputFormat = OUTPUT_FORMATS[req.format] ?? 'mp3_44100_128';
  const body = {
    prompt: req.input,
    music_length_ms: Math.round((req.durationSeconds ?? 30) * 1000),
    model_id: req.model,
  };
  const url = `${target.baseUrl.replace(/\/+$/, '')}/v1/music?output_format=${outputFormat}`;
  const res = await send(target.providerId, url, {
    headers: elevenlabsHeaders(target),
    body: JSON.stringify(body),
    signal,
  });
  if (res.status < 200 || res.status >= 300) throw await elevenlabsError(target, res);
  const type = res.headers['content-type'];
  return {
    contentType: (Array.isArray(type) ? type[0] : type) ?? FORMAT_CONTENT_TYPES[req.format],
    audio: bodyChunks(target.providerId, res.body),
  };
}
