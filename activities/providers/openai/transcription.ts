// OpenAI's speech-to-text protocol: POST {base}/audio/transcriptions (or /audio/translations, which
// answers in English), a multipart form of `file`, `model` and the optional `language`, `prompt`,
// `temperature`, `response_format`. Timed segments and the measured duration come only with
// `verbose_json`, which whisper-family models give (route option `verbose_json: true`); the others
// (gpt-4o-transcribe) are asked for `json` and answer the text alone.
import { upstreamError } from '../../core/errors.js';
import { readJson, send, statusError } from '../http.js';
import { multipart } from '../multipart.js';
import type { Transcript, TranscriptionAdapter, TranscriptSegment } from '../types.js';
import { quirksFor } from './quirks.js';
import { requestHeaders } from './request.js';
import { deadlineOr } from './stream.js';

export const openaiTranscription: TranscriptionAdapter = {
  async transcribe(req, target, signal): Promise<Transcript> {
    const verbose = target.options.verbose_json === true;
    const fields: Record<string, string | number> = {
      model: req.model,
      response_format: verbose ? 'verbose_json' : 'json',
    };
    if (req.language !== undefined && req.task === 'transcribe') fields.language = req.language;
    if (req.prompt !== undefined) fields.prompt = req.prompt;
    if (req.temperature !== undefined) fields.temperature = req.temperature;
    const form = multipart(fields, [{ name: 'file', ...req.audio }]);
    const headers = { ...requestHeaders(target, quirksFor(target.providerId, target.options), false) };
    headers['content-type'] = form.contentType;
    const path = req.task === 'translate' ? 'audio/translations' : 'audio/transcriptions';
    const res = await send(target.providerId, `${target.baseUrl.replace(/\/+$/, '')}/${path}`, {
      headers,
      body: form.body,
      signal,
    }).catch((err) => {
      throw deadlineOr(target.providerId, err, signal);
    });
    if (res.status < 200 || res.status >= 300) throw await statusError(target.providerId, res);
    const json = await readJson(target.providerId, res).catch((err) => {
      throw deadlineOr(target.providerId, err, signal);
    });
    if (typeof json?.text !== 'string')
      throw upstreamError('the transcription answer has no text', 502, true, {
        code: 'upstream_bad_response',
        providerId: target.providerId,
      });
    const out: Transcript = { text: json.text };
    // verbose_json states the length; newer answers carry usage {type: 'duration', seconds}
    const seconds =
      typeof json.duration === 'number'
        ? json.duration
        : json.usage?.type === 'duration' && typeof json.usage.seconds === 'number'
          ? json.usage.seconds
          : undefined;
    if (seconds !== undefined && Number.isFinite(seconds) && seconds >= 0) out.durationSeconds = seconds;
    if (typeof json.language === 'string') out.language = json.language;
    if (Array.isArray(json.segments))
      out.segments = (json.segments as unknown[])
        .filter(
          (s): s is TranscriptSegment =>
            typeof s === 'object' &&
            s !== null &&
            typeof (s as TranscriptSegment).start === 'number' &&
            typeof (s as TranscriptSegment).end === 'number' &&
            typeof (s as TranscriptSegment).text === 'string',
        )
        .map((s) => ({ ...s }));
    return out;
  },
};
