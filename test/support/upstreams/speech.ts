// biome-ignore-all lint/suspicious/noExplicitAny: request bodies are arbitrary JSON
// Loopback speech upstreams for tests, speaking the real protocols:
// - OpenAI: POST {base}/audio/speech, `Authorization: Bearer`, JSON {model, input, voice,
//   response_format, speed, instructions}; answers the audio bytes chunked (Transfer-Encoding:
//   chunked, no Content-Length), errors as {"error":{message,type,param,code}}.
// - ElevenLabs: POST {base}/v1/text-to-speech/{voice_id}/stream?output_format=..., header
//   `xi-api-key`, JSON {text, model_id, voice_settings?}; audio/mpeg chunked, errors as
//   {"detail":{status,message}}; FastAPI-style 422 {"detail":[{loc,msg,type}]} for a bad body.
//   Music: POST {base}/v1/music?output_format=..., JSON {prompt, music_length_ms (3000..600000),
//   model_id?}; the composed song as audio/mpeg with a `song-id` header.
// The "audio" is deterministic bytes that start like the real thing (ID3 for mp3, RIFF for wav).
// Scriptable per request: an error status, a cut after N chunks, a delay, a hang (headers never
// sent until the caller gives up). Requests are recorded, with whether the caller aborted.
import http from 'node:http';
import { listenOnLoopback, closeServer } from './loopback.js';

interface SpeechReply {
  /** answer this status with the protocol's error body */
  status?: number;
  message?: string;
  /** how many audio chunks (default 3) */
  chunks?: number;
  /** destroy the connection after this many chunks (0 = after the headers, before any audio) */
  cutAfter?: number;
  /** wait this long before answering */
  delayMs?: number;
  /** never answer (until the caller closes the connection) */
  hang?: boolean;
}

export interface SpeechUpstream {
  url: string;
  apiKey: string;
  requests: Array<{
    path: string;
    headers: http.IncomingHttpHeaders;
    body: any;
    query: URLSearchParams;
    aborted: boolean;
  }>;
  script(...replies: SpeechReply[]): void;
  close(): Promise<void>;
}

const CONTENT_TYPES: Record<string, string> = {
  mp3: 'audio/mpeg',
  opus: 'audio/ogg',
  aac: 'audio/aac',
  flac: 'audio/flac',
  wav: 'audio/wav',
  pcm: 'audio/pcm',
};

const MAGIC: Record<string, Buffer> = {
  mp3: Buffer.from('ID3\x04\x00\x00\x00\x00\x00\x00', 'latin1'),
  wav: Buffer.from('RIFF\x00\x00\x00\x00WAVE', 'latin1'),
  flac: Buffer.from('fLaC'),
  opus: Buffer.from('OggS'),
  aac: Buffer.from([0xff, 0xf1]),
  pcm: Buffer.alloc(0),
};

/** The settings that point the OpenAI and ElevenLabs speech providers at these loopback servers. */
export function speechEnv(openai: SpeechUpstream, eleven: SpeechUpstream): Record<string, string> {
  return {
    OPENAI_API_KEY: openai.apiKey,
    OPENAI_BASE_URL: openai.url,
    ELEVENLABS_API_KEY: eleven.apiKey,
    ELEVENLABS_BASE_URL: eleven.url,
  };
}

/** An mp3 stream's first bytes: an ID3 tag or an MPEG frame sync. */
export const isMp3Start = (b: Buffer) =>
  b.subarray(0, 3).toString('latin1') === 'ID3' || (b[0] === 0xff && (b[1] & 0xe0) === 0xe0);

/** The bytes a scripted answer sends: chunk i is 1000 bytes, the first starting with the format's magic. */
export function fakeAudio(format: string, chunks: number): Buffer[] {
  return Array.from({ length: chunks }, (_, i) => {
    const b = Buffer.alloc(1000, (i * 37 + 11) & 0xff);
    if (i === 0) (MAGIC[format] ?? Buffer.alloc(0)).copy(b);
    return b;
  });
}

async function start(kind: 'openai' | 'elevenlabs'): Promise<SpeechUpstream> {
  const apiKey = kind === 'openai' ? 'sk-speech-loopback' : 'xi-loopback-key';
  const requests: SpeechUpstream['requests'] = [];
  let queue: SpeechReply[] = [];

  const server = http.createServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://x');
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', async () => {
      let body: any = null;
      try {
        body = JSON.parse(raw);
      } catch {
        // left null
      }
      const record = { path: u.pathname, headers: req.headers, body, query: u.searchParams, aborted: false };
      requests.push(record);
      res.on('close', () => {
        if (!res.writableFinished) record.aborted = true;
      });
      const fail = (status: number, message: string, code: string) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify(
            kind === 'openai'
              ? {
                  error: {
                    message,
                    type:
                      status === 401
                        ? 'invalid_request_error'
                        : status >= 500
                          ? 'server_error'
                          : 'invalid_request_error',
                    param: null,
                    code,
                  },
                }
              : { detail: { status: code, message } },
          ),
        );
      };
      let format = 'mp3';
      if (kind === 'openai') {
        if (req.method !== 'POST' || u.pathname !== '/v1/audio/speech')
          return fail(404, `Invalid URL (${req.method} ${u.pathname})`, 'not_found');
        if (req.headers.authorization !== `Bearer ${apiKey}`)
          return fail(401, 'Incorrect API key provided.', 'invalid_api_key');
        if (
          !body ||
          typeof body.input !== 'string' ||
          typeof body.model !== 'string' ||
          typeof body.voice !== 'string'
        ) {
          return fail(400, "Missing required parameter: 'input', 'model' or 'voice'.", 'missing_required_parameter');
        }
        format = body.response_format ?? 'mp3';
        if (!CONTENT_TYPES[format]) return fail(400, `Invalid response_format '${format}'.`, 'invalid_value');
      } else {
        const m = /^\/v1\/text-to-speech\/([^/]+)\/stream$/.exec(u.pathname);
        const music = u.pathname === '/v1/music';
        if (req.method !== 'POST' || (!m && !music)) return fail(404, 'Not Found', 'not_found');
        if (req.headers['xi-api-key'] !== apiKey) return fail(401, 'Invalid API key', 'invalid_api_key');
        const invalid = (loc: string, msg: string) => {
          res.writeHead(422, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ detail: [{ loc: ['body', loc], msg, type: 'value_error' }] }));
        };
        if (music) {
          if (!body || typeof body.prompt !== 'string' || !body.prompt) return invalid('prompt', 'Field required');
          const ms = body.music_length_ms;
          if (ms !== undefined && (!Number.isInteger(ms) || ms < 3000 || ms > 600000))
            return invalid('music_length_ms', 'Input should be between 3000 and 600000');
          if (body.model_id !== undefined && body.model_id !== 'music_v1')
            return invalid('model_id', "Input should be 'music_v1'");
        } else {
          if (!body || typeof body.text !== 'string' || typeof body.model_id !== 'string')
            return fail(422, 'text and model_id are required', 'invalid_request');
          const vs = body.voice_settings;
          if (vs !== undefined) {
            for (const k of ['stability', 'similarity_boost', 'style']) {
              if (vs[k] !== undefined && (typeof vs[k] !== 'number' || vs[k] < 0 || vs[k] > 1))
                return invalid(`voice_settings.${k}`, 'Input should be between 0 and 1');
            }
            if (vs.speed !== undefined && (vs.speed < 0.7 || vs.speed > 1.2))
              return invalid('voice_settings.speed', 'Input should be between 0.7 and 1.2');
          }
        }
        const of = u.searchParams.get('output_format') ?? 'mp3_44100_128';
        format = of.split('_')[0];
      }
      const reply = queue.shift() ?? {};
      if (reply.hang) return; // the caller's abort (or close()) ends it
      if (reply.delayMs) await new Promise((r) => setTimeout(r, reply.delayMs));
      if (res.destroyed) return;
      if (reply.status)
        return fail(
          reply.status,
          reply.message ?? 'The server had an error while processing your request.',
          reply.status >= 500 ? 'server_error' : 'rate_limited',
        );
      const extra: Record<string, string> = u.pathname === '/v1/music' ? { 'song-id': `song_${requests.length}` } : {};
      res.writeHead(200, {
        'content-type': CONTENT_TYPES[format] ?? 'audio/mpeg',
        'transfer-encoding': 'chunked',
        ...extra,
      });
      res.flushHeaders();
      const chunks = fakeAudio(format, reply.chunks ?? 3);
      for (let i = 0; i < chunks.length; i++) {
        if (reply.cutAfter !== undefined && i >= reply.cutAfter) {
          res.destroy();
          return;
        }
        res.write(chunks[i]);
        await new Promise((r) => setTimeout(r, 5));
      }
      if (reply.cutAfter !== undefined && reply.cutAfter >= chunks.length) {
        res.destroy();
        return;
      }
      res.end();
    });
  });
  const { port } = await listenOnLoopback(server);
  return {
    url: kind === 'openai' ? `http://127.0.0.1:${port}/v1` : `http://127.0.0.1:${port}`,
    apiKey,
    requests,
    script: (...replies) => {
      queue = replies;
    },
    close: () => closeServer(server),
  };
}

export const startOpenAISpeechUpstream = () => start('openai');
export const startElevenLabsUpstream = () => start('elevenlabs');
