// POST /api/v1/audio/transcriptions and /api/v1/audio/translations (and /v1/...): OpenAI's
// speech-to-text forms, as `openai.audio.transcriptions.create` sends them (multipart: `file`,
// `model`, and optionally `language`, `prompt`, `response_format`, `temperature`), billed per
// second of audio (activities/transcription/transcribe.ts). The answer is in the format asked:
// json `{text, usage: {type: "duration", seconds}}` with the bill beside it, text, verbose_json
// (`task`, `language`, `duration`, `text`, `segments`), or subtitles (srt, vtt); the plain-text
// formats carry the bill in headers (`X-Cost`, `X-Payment-Source`, `X-Remaining-Balance`).
import Router from '@koa/router';
import { clientAbortSignal } from '../clientAbort.js';
import { chargeOnDelivery } from '../delivery.js';
import { authenticate } from '../middleware/auth.js';
import { refuseUnofferedRedaction } from '../middleware/notOffered.js';
import { surface } from '../middleware/surface.js';
import { readForm } from '../multipartForm.js';
import { v1 } from '../paths.js';
import type { AppContext, AppState } from '../state.js';
import { declareMultipart } from '../validate.js';
import { config } from '../../activities/config.js';
import { RequestError } from '../../activities/core/errors.js';
import { billOf } from '../../activities/metering/meteredCall.js';
import { withBill } from '../../activities/surfaces/chatResponse.js';
import {
  MAX_AUDIO_BYTES,
  planTranscription,
  subtitles,
  type TranscriptFormat,
  TranscriptionCall,
} from '../../activities/transcription/transcribe.js';

export const transcriptionsRouter = new Router<AppState>();

const formSchema = {
  type: 'object',
  required: ['file', 'model'],
  properties: {
    file: {
      type: 'string',
      format: 'binary',
      description: 'the audio (flac, m4a, mp3, mp4, mpeg, mpga, oga, ogg, wav, webm)',
    },
    model: { type: 'string' },
    language: { type: 'string', description: 'ISO-639-1 (transcriptions only)' },
    prompt: { type: 'string' },
    response_format: { enum: ['json', 'text', 'srt', 'verbose_json', 'vtt'] },
    temperature: { type: 'string', description: 'a number from 0 to 1' },
    provider: { type: 'string' },
  },
} as const;
const FORMATS: readonly string[] = formSchema.properties.response_format.enum;
const FIELDS = new Set(Object.keys(formSchema.properties).filter((k) => k !== 'file'));
// the SDKs send `timestamp_granularities[]` and `include[]`; accepted and not needed here
for (const f of ['timestamp_granularities[]', 'include[]', 'stream', 'chunking_strategy']) FIELDS.add(f);

const bad = (code: string, message: string, param: string) => new RequestError(400, code, message, { param });

async function answer(ctx: AppContext, task: 'transcribe' | 'translate') {
  if (!/^multipart\/form-data/i.test(ctx.get('content-type')))
    throw bad(
      'invalid_content_type',
      "Send multipart/form-data with 'file' (the audio) and 'model', as OpenAI's audio API takes them.",
      'file',
    );
  const form = await readForm(ctx.req, {
    fields: FIELDS,
    fileFields: new Set(['file']),
    maxFileBytes: MAX_AUDIO_BYTES,
    maxFiles: 1,
    howToSend: "send the audio as 'file'.",
    tooLarge: () => 'The audio is larger than 25 MB: split it, or compress it (for example to MP3).',
    idleTimeoutMs: config.fileUploadIdleTimeoutMs,
  });
  const f = form.fields;
  const file = form.files[0];
  if (!file)
    throw bad('missing_required_parameter', "Missing required parameter: 'file' (the audio, as a file part).", 'file');
  if (!f.model) throw bad('missing_required_parameter', "Missing required parameter: 'model'.", 'model');
  const format = (f.response_format ?? 'json') as TranscriptFormat;
  if (!FORMATS.includes(format))
    throw bad('invalid_parameter_value', `'response_format' must be one of ${FORMATS.join(', ')}.`, 'response_format');
  let temperature: number | undefined;
  if (f.temperature !== undefined) {
    temperature = Number(f.temperature);
    if (f.temperature.trim() === '' || !(temperature >= 0 && temperature <= 1))
      throw bad('invalid_parameter_value', "'temperature' must be a number from 0 to 1.", 'temperature');
  }
  if (f.language !== undefined && !/^[a-z]{2,3}$/i.test(f.language))
    throw bad('invalid_parameter_value', "'language' must be an ISO-639-1 code such as 'en' or 'de'.", 'language');
  if (task === 'translate' && f.language !== undefined)
    throw bad('invalid_parameter_value', "Translations are always into English: 'language' is not taken.", 'language');

  const plan = planTranscription(
    {
      model: f.model,
      task,
      audio: {
        data: file.data,
        filename: file.filename || 'audio',
        mediaType: file.mimeType || 'application/octet-stream',
      },
      language: f.language,
      prompt: f.prompt,
      temperature,
      format,
      provider: f.provider || ctx.get('x-provider').trim() || undefined,
    },
    ctx.state.caller,
  );
  const call = new TranscriptionCall(ctx.state.caller, ctx.state.requestId, plan);
  await call.reserve();
  const done = await call.orRelease(call.transcribe(clientAbortSignal(ctx)));
  const charge = await call.settle(done);
  chargeOnDelivery(ctx, call.metered);
  const bill = { ...billOf(charge), inputTokens: 0, outputTokens: 0 };
  const t = done.transcript;
  if (format === 'json' || format === 'verbose_json') {
    const body =
      format === 'json'
        ? { text: t.text, usage: { type: 'duration', seconds: done.seconds } }
        : {
            task,
            language: t.language ?? f.language ?? null,
            duration: t.durationSeconds ?? plan.measured ?? done.seconds,
            text: t.text,
            // as the upstream gave them (whisper's seek, tokens, avg_logprob, ... included), numbered
            segments: (t.segments ?? []).map((s, id) => ({ ...s, id })),
            usage: { type: 'duration', seconds: done.seconds },
          };
    ctx.body = withBill(body, bill);
    return;
  }
  ctx.set('X-Cost', String(bill.cost));
  ctx.set('X-Payment-Source', bill.paymentSource);
  ctx.set('X-Remaining-Balance', String(bill.remainingBalance));
  ctx.type = format === 'vtt' ? 'text/vtt; charset=utf-8' : 'text/plain; charset=utf-8';
  ctx.body = format === 'text' ? t.text : subtitles(t, format);
}

transcriptionsRouter.post(
  v1('/audio/transcriptions'),
  surface('openai'),
  authenticate,
  refuseUnofferedRedaction,
  declareMultipart(formSchema),
  (ctx) => answer(ctx, 'transcribe'),
);
transcriptionsRouter.post(
  v1('/audio/translations'),
  surface('openai'),
  authenticate,
  refuseUnofferedRedaction,
  declareMultipart(formSchema),
  (ctx) => answer(ctx, 'translate'),
);
