// OpenAI's speech API: POST {base}/audio/speech with a Bearer key and a JSON body; the answer is
// the audio bytes themselves (chunked), in the requested response_format.
import { bodyChunks, send, statusError } from '../http.js';
import type { SpeechAdapter } from '../types.js';
import { FORMAT_CONTENT_TYPES } from '../types.js';

export const openaiSpeech: SpeechAdapter = {
  async synthesize(req, target, signal) {
    const body: Record<string, unknown> = {
      model: req.model,
      input: req.input,
      voice: req.voice,
      response_format: req.format,
    };
    if (req.speed !== undefined) body.speed = req.speed;
    if (req.instructions !== undefined) body.instructions = req.instructions;
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: '*/*', ...target.headers };
    if (target.apiKey) headers.authorization = `Bearer ${target.apiKey}`;
    const res = await send(target.providerId, `${target.baseUrl.replace(/\/+$/, '')}/audio/speech`, {
      headers,
      body: JSON.stringify(body),
      signal,
    });
    if (res.status < 200 || res.status >= 300) throw await statusError(target.providerId, res);
    const type = res.headers['content-type'];
    return {
      contentType: (Array.isArray(type) ? type[0] : type) ?? FORMAT_CONTENT_TYPES[req.format],
      audio: bodyChunks(target.providerId, res.body),
    };
  },
};
