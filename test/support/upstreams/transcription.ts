// A loopback server speaking OpenAI's speech-to-text protocol: POST /audio/transcriptions and
// /audio/translations, multipart forms of `file`, `model`, `language`, `prompt`, `temperature`,
// `response_format`; answers `json` ({text}) or `verbose_json` ({task, language, duration, text,
// segments}) as OpenAI does, with OpenAI's errors (401 bad key, 404 unknown model, 400 a form
// without its file or with a format the model refuses, scripted 429 and 500). It cannot hear: the
// text is the one scripted (default "hello from the loopback"), while the duration is read from
// the WAV header of the file sent, as a real service measures what it got. whisper-1 takes
// verbose_json; gpt-4o-mini-transcribe only json and text, as OpenAI's own.
import http from 'node:http';
import busboy from 'busboy';
import { listenOnLoopback, closeServer } from './loopback.js';

interface Recorded {
  path: string;
  fields: Record<string, string>;
  file?: { data: Buffer; filename: string; mimeType: string };
}

interface TranscriptionReply {
  status?: 429 | 500;
  text?: string;
  /** leave the duration out of a verbose answer (a faulty upstream) */
  noDuration?: boolean;
}

export interface TranscriptionUpstream {
  url: string;
  apiKey: string;
  requests: Recorded[];
  script(...replies: TranscriptionReply[]): void;
  close(): Promise<void>;
}

const MODELS: Record<string, string[]> = {
  'whisper-1': ['json', 'text', 'srt', 'verbose_json', 'vtt'],
  'gpt-4o-mini-transcribe': ['json', 'text'],
};

/** A WAV's length from its header (what the upstream measures), or 0 for other audio. */
function wavSeconds(b: Buffer): number {
  if (b.toString('latin1', 0, 4) !== 'RIFF') return 0;
  let rate = 0;
  for (let at = 12; at + 8 <= b.length; ) {
    const id = b.toString('latin1', at, at + 4);
    const size = b.readUInt32LE(at + 4);
    if (id === 'fmt ') rate = b.readUInt32LE(at + 16);
    if (id === 'data') return rate ? Math.min(size, b.length - at - 8) / rate : 0;
    at += 8 + size + (size % 2);
  }
  return 0;
}

/** One of whisper's verbose segments, with every field OpenAI gives (clients validate them all). */
const segment = (id: number, start: number, end: number, words: string[]) => ({
  id,
  seek: Math.round(start * 100),
  start,
  end,
  text: ` ${words.join(' ')}`,
  tokens: words.map((w) => 1000 + w.length),
  temperature: 0,
  avg_logprob: -0.25,
  compression_ratio: 1.1,
  no_speech_prob: 0.01,
});

/** `seconds` of a 440 Hz tone as 16-bit mono PCM WAV at `rate` Hz. */
export function toneWav(seconds: number, rate = 8000): Buffer {
  const samples = Math.round(seconds * rate);
  const b = Buffer.alloc(44 + samples * 2);
  b.write('RIFF', 0, 'latin1');
  b.writeUInt32LE(36 + samples * 2, 4);
  b.write('WAVEfmt ', 8, 'latin1');
  b.writeUInt32LE(16, 16);
  b.writeUInt16LE(1, 20);
  b.writeUInt16LE(1, 22);
  b.writeUInt32LE(rate, 24);
  b.writeUInt32LE(rate * 2, 28);
  b.writeUInt16LE(2, 32);
  b.writeUInt16LE(16, 34);
  b.write('data', 36, 'latin1');
  b.writeUInt32LE(samples * 2, 40);
  for (let i = 0; i < samples; i++)
    b.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / rate)), 44 + i * 2);
  return b;
}

export async function startTranscriptionUpstream(apiKey = 'sk-stt-loopback'): Promise<TranscriptionUpstream> {
  const requests: Recorded[] = [];
  let scripted: TranscriptionReply[] = [];

  const server = http.createServer((req, res) => {
    const json = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(JSON.stringify(body));
    };
    const error = (status: number, message: string, code: string | null = null, param: string | null = null) =>
      json(status, { error: { message, type: 'invalid_request_error', param, code } });
    if (req.headers.authorization !== `Bearer ${apiKey}`)
      return error(401, 'Incorrect API key provided.', 'invalid_api_key');
    const task =
      req.url === '/audio/translations' ? 'translate' : req.url === '/audio/transcriptions' ? 'transcribe' : null;
    if (req.method !== 'POST' || !task) return error(404, `Invalid URL (${req.method} ${req.url})`);
    const rec: Recorded = { path: req.url!, fields: {} };
    requests.push(rec);
    const form = busboy({ headers: req.headers });
    const chunks: Buffer[] = [];
    form.on('field', (name, value) => (rec.fields[name] = value));
    form.on('file', (name, stream, info) => {
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        if (name === 'file')
          rec.file = { data: Buffer.concat(chunks), filename: info.filename ?? '', mimeType: info.mimeType };
      });
    });
    form.on('error', () => error(400, 'Could not parse multipart form'));
    form.on('close', () => {
      const s = scripted.shift() ?? {};
      if (s.status === 429)
        return json(
          429,
          { error: { message: 'Rate limit reached.', type: 'requests', code: 'rate_limit_exceeded' } },
          {
            'retry-after': '3',
          },
        );
      if (s.status === 500)
        return json(500, {
          error: { message: 'The server had an error processing your request.', type: 'server_error' },
        });
      const f = rec.fields;
      if (!rec.file) return error(400, "Missing required parameter: 'file'.", null, 'file');
      const formats = MODELS[f.model ?? ''];
      if (!formats)
        return error(404, `The model '${f.model}' does not exist or you do not have access to it.`, 'model_not_found');
      const format = f.response_format ?? 'json';
      if (!formats.includes(format))
        return error(
          400,
          `response_format '${format}' is not compatible with model '${f.model}'.`,
          'unsupported_value',
          'response_format',
        );
      const text = s.text ?? 'hello from the loopback';
      if (format === 'text') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        return res.end(text);
      }
      if (format !== 'verbose_json') return json(200, { text });
      const duration = wavSeconds(rec.file.data);
      const half = duration / 2;
      const words = text.split(' ');
      const cut = Math.ceil(words.length / 2);
      return json(200, {
        task,
        language: task === 'translate' ? 'english' : (f.language ?? 'english'),
        ...(s.noDuration ? {} : { duration }),
        text,
        segments: [segment(0, 0, half, words.slice(0, cut)), segment(1, half, duration, words.slice(cut))],
      });
    });
    req.pipe(form);
  });
  const { port } = await listenOnLoopback(server);
  return {
    url: `http://127.0.0.1:${port}`,
    apiKey,
    requests,
    script: (...replies) => {
      scripted = replies;
    },
    close: () => closeServer(server),
  };
}
