// biome-ignore-all lint/suspicious/noExplicitAny: request bodies are arbitrary JSON
// A loopback upstream speaking OpenAI's embeddings protocol: POST {base}/embeddings with
// `Authorization: Bearer`, JSON {model, input (string | string[] | token array | token arrays),
// encoding_format (float | base64), dimensions, user}; answers
// {object:'list', data:[{object:'embedding', index, embedding}], model, usage:{prompt_tokens,
// total_tokens}}, errors as {"error":{message,type,param,code}} with OpenAI's statuses (401 for a
// bad key, 400 for a dimension it cannot give). Vectors are deterministic (from a hash of the
// input), unit length, of the model's size or `dimensions`; prompt_tokens counts one token per
// word (a token array: its length). Scriptable per request: an error status, a dropped connection,
// a delay, usage left out, a wrong number of vectors, base64 answers. Every request is recorded.
import { createHash } from 'node:crypto';
import http from 'node:http';
import { listenOnLoopback, closeServer } from './loopback.js';

interface EmbeddingsReply {
  status?: number;
  message?: string;
  /** close the connection without answering */
  drop?: boolean;
  delayMs?: number;
  /** leave `usage` out of the answer */
  noUsage?: boolean;
  /** answer one vector fewer than asked */
  missingOne?: boolean;
  /** answer base64 even when floats were asked for (as some servers do) */
  forceBase64?: boolean;
}

export interface EmbeddingsUpstream {
  url: string;
  apiKey: string;
  requests: Array<{ headers: http.IncomingHttpHeaders; body: any; aborted: boolean }>;
  script(...replies: EmbeddingsReply[]): void;
  close(): Promise<void>;
}

const NATIVE: Record<string, number> = { 'text-embedding-3-small': 1536, 'text-embedding-3-large': 3072 };

/** A deterministic unit vector for `input`. */
export function fakeVector(input: string | number[], dims: number): number[] {
  const seed = typeof input === 'string' ? input : input.join(',');
  const out: number[] = [];
  for (let i = 0; out.length < dims; i++) {
    const h = createHash('sha256').update(`${seed}#${i}`).digest();
    for (let j = 0; j + 4 <= h.length && out.length < dims; j += 4) out.push(h.readInt32LE(j) / 2 ** 31);
  }
  const norm = Math.hypot(...out);
  return out.map((x) => Math.fround(x / norm));
}

/** The upstream's token count: one per word of text, the length of a token array. */
export const fakeTokens = (input: string | number[]) =>
  typeof input === 'string' ? input.split(/\s+/).filter(Boolean).length || 1 : input.length;

export async function startEmbeddingsUpstream(): Promise<EmbeddingsUpstream> {
  const apiKey = 'sk-embeddings-loopback';
  let scripted: EmbeddingsReply[] = [];
  const requests: EmbeddingsUpstream['requests'] = [];
  const error = (res: http.ServerResponse, status: number, message: string, code: string | null, param = null) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message, type: 'invalid_request_error', param, code } }));
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', async () => {
      let body: any;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        body = undefined;
      }
      const rec = { headers: req.headers, body, aborted: false };
      requests.push(rec);
      res.on('close', () => {
        if (!res.writableFinished) rec.aborted = true;
      });
      const reply = scripted.shift() ?? {};
      if (reply.delayMs) await new Promise((r) => setTimeout(r, reply.delayMs));
      if (reply.drop) return req.socket.destroy();
      if (req.method !== 'POST' || req.url !== '/embeddings') return error(res, 404, 'Not found', null);
      if (req.headers.authorization !== `Bearer ${apiKey}`)
        return error(res, 401, 'Incorrect API key provided.', 'invalid_api_key');
      if (reply.status) return error(res, reply.status, reply.message ?? 'scripted failure', null);
      if (!body || typeof body.model !== 'string' || body.input === undefined)
        return error(res, 400, "'input' and 'model' are required", null);
      const native = NATIVE[body.model];
      if (!native) return error(res, 404, `The model '${body.model}' does not exist`, 'model_not_found');
      if (body.dimensions !== undefined && (body.dimensions < 1 || body.dimensions > native))
        return error(res, 400, 'This model does not support specifying dimensions.', null);
      const dims = body.dimensions ?? native;
      const inputs: Array<string | number[]> =
        typeof body.input === 'string' ? [body.input] : typeof body.input[0] === 'number' ? [body.input] : body.input;
      const base64 = reply.forceBase64 || body.encoding_format === 'base64';
      let data = inputs.map((x, index) => {
        const v = fakeVector(x, dims);
        const b = Buffer.alloc(v.length * 4);
        v.forEach((f, i) => b.writeFloatLE(f, i * 4));
        return { object: 'embedding', index, embedding: base64 ? b.toString('base64') : v };
      });
      if (reply.missingOne) data = data.slice(1);
      const tokens = inputs.reduce((n, x) => n + fakeTokens(x), 0);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          object: 'list',
          data,
          model: body.model,
          ...(reply.noUsage ? {} : { usage: { prompt_tokens: tokens, total_tokens: tokens } }),
        }),
      );
    });
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
