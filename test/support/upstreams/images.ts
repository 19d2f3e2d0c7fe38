// biome-ignore-all lint/suspicious/noExplicitAny: request bodies are arbitrary JSON
// A loopback upstream speaking OpenAI's Images API: POST {base}/images/generations (JSON) and
// POST {base}/images/edits (multipart/form-data: image or image[] parts, mask, text fields), with
// `Authorization: Bearer`; answers {created, data:[{b64_json}|{url}]} (b64 unless response_format
// is url; gpt-image models always b64, and refuse response_format as OpenAI does), the images
// being real PNGs whose colour follows the request. Errors as OpenAI sends them: 400
// content_policy_violation (type image_generation_user_error), 429 with Retry-After, 500.
// Scriptable per request: an error, fewer images than asked. Every request is recorded.
import http from 'node:http';
import busboy from 'busboy';
import { solidPng } from '../png.js';
import { listenOnLoopback } from './loopback.js';

interface ImagesReply {
  status?: 400 | 429 | 500;
  /** answer this many images whatever n was */
  count?: number;
  /** answer this much later (a slow generation) */
  delayMs?: number;
  /** answer URLs whatever response_format asked (as some compatible servers do) */
  forceUrl?: boolean;
}

interface RecordedRequest {
  /** the connection closed before the answer was written */
  aborted?: boolean;
  path: string;
  body: any;
  files: Array<{ field: string; bytes: Buffer; type: string }>;
}

export interface ImagesUpstream {
  url: string;
  apiKey: string;
  requests: RecordedRequest[];
  /** the next answers, one per request, in place of any still scripted; none: plain answers */
  script(...replies: ImagesReply[]): void;
  /** the PNG answered as image `i` of a request with this prompt */
  imageFor(prompt: string, i: number): Buffer;
  close(): Promise<void>;
}

const imageFor = (prompt: string, i: number) => solidPng(8, 8, [prompt.length % 256, i * 40, 99]);

export async function startImagesUpstream(apiKey = 'sk-images-loopback'): Promise<ImagesUpstream> {
  let scripted: ImagesReply[] = [];
  const requests: RecordedRequest[] = [];
  let base = '';
  const files = new Map<string, Buffer>();

  const reply = (res: http.ServerResponse, rec: RecordedRequest) => {
    const answer = answers(res, rec);
    const s = scripted.shift() ?? {};
    if (s.delayMs) {
      res.on('close', () => (rec.aborted = !res.writableFinished));
      setTimeout(() => res.destroyed || answer(s), s.delayMs);
      return;
    }
    answer(s);
  };
  const answers = (res: http.ServerResponse, rec: RecordedRequest) => (s: ImagesReply) => {
    const json = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(JSON.stringify(body));
    };
    const b = rec.body;
    if (s.status === 400)
      return json(400, {
        error: {
          message: 'Your request was rejected as a result of our safety system.',
          type: 'image_generation_user_error',
          param: null,
          code: 'content_policy_violation',
        },
      });
    if (s.status === 429)
      return json(
        429,
        {
          error: {
            message: 'Rate limit reached for images per minute.',
            type: 'requests',
            code: 'rate_limit_exceeded',
          },
        },
        { 'retry-after': '7' },
      );
    if (s.status === 500)
      return json(500, {
        error: { message: 'The server had an error processing your request.', type: 'server_error' },
      });
    if (typeof b.prompt !== 'string' || !b.prompt)
      return json(400, { error: { message: "Missing required parameter: 'prompt'.", type: 'invalid_request_error' } });
    if (String(b.model).startsWith('gpt-image') && b.response_format !== undefined)
      return json(400, {
        error: {
          message: "Unknown parameter: 'response_format'.",
          type: 'invalid_request_error',
          code: 'unknown_parameter',
        },
      });
    const n = Number(b.n ?? 1);
    const count = s.count ?? n;
    const data = Array.from({ length: count }, (_, i) => {
      const png = imageFor(b.prompt, i);
      if (b.response_format === 'url' || s.forceUrl) {
        const id = `img-${requests.length}-${i}`;
        files.set(id, png);
        return { url: `${base}/files/${id}.png`, revised_prompt: b.prompt };
      }
      return { b64_json: png.toString('base64') };
    });
    return json(200, { created: Math.floor(Date.now() / 1000), data });
  };

  const server = http.createServer((req, res) => {
    const file = /^\/files\/([^/]+)\.png$/.exec(req.url ?? '');
    if (file && req.method === 'GET') {
      const png = files.get(file[1]);
      res.writeHead(png ? 200 : 404, { 'content-type': 'image/png' });
      return res.end(png);
    }
    if (req.headers.authorization !== `Bearer ${apiKey}`) {
      res.writeHead(401, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ error: { message: 'Incorrect API key provided.', code: 'invalid_api_key' } }));
    }
    const rec: RecordedRequest = { path: req.url ?? '', body: {}, files: [] };
    requests.push(rec);
    if (/^multipart\/form-data/.test(req.headers['content-type'] ?? '')) {
      const form = busboy({ headers: req.headers });
      form.on('field', (k, v) => (rec.body[k] = v));
      form.on('file', (field, stream, info) => {
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('end', () => rec.files.push({ field, bytes: Buffer.concat(chunks), type: info.mimeType }));
      });
      form.on('close', () => reply(res, rec));
      req.pipe(form);
      return;
    }
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      try {
        rec.body = JSON.parse(raw);
      } catch {
        rec.body = {};
      }
      reply(res, rec);
    });
  });
  base = (await listenOnLoopback(server)).origin;
  return {
    url: base,
    apiKey,
    requests,
    // replaces what was scripted, as the other loopbacks do: `script()` goes back to plain answers
    script: (...r) => {
      scripted = r;
    },
    imageFor,
    close: () =>
      new Promise((r) => {
        scripted = [];
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
