// How the fuzzer talks to the gateway: ordinary requests through node:http (any method, any header
// value Node lets through, bodies as bytes) and hand-framed requests written straight to a socket
// (bad lengths, bad chunking, smuggling shapes, pipelining), whose answers are parsed here.
import http from 'node:http';
import net from 'node:net';

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  ms: number;
}

/** What a request got: the answers (several for pipelined raw requests), or why there were none. */
export interface Outcome {
  answers: Answer[];
  /** the connection failed or timed out before a complete answer */
  error?: string;
}

export interface Request {
  method: string;
  /** path and query, sent as written */
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
}

// Connections are kept alive (hostile requests and ordinary ones share them, as they would), but not
// past 2 s idle: the server closes idle ones after 5 s, and a request sent just as it does fails.
const agent = new http.Agent({ keepAlive: true, maxSockets: 16, timeout: 2000 });
/** sockets given a listener for resets that come after their request is done */
const guarded = new WeakSet<object>();

/** Most of an answer is enough to judge it; a bigger one (an audio file) is cut here. */
const KEEP_BYTES = 256 * 1024;

export async function send(origin: URL, req: Request, timeoutMs: number): Promise<Outcome> {
  const o = await sendOnce(origin, req, timeoutMs);
  // a kept-alive connection the server closed as it was reused: as any HTTP client does, try once more
  if (!o.answers.length && /ECONNRESET|socket hang up/.test(o.error ?? ''))
    return sendOnce(origin, req, timeoutMs, false);
  return o;
}

function sendOnce(origin: URL, req: Request, timeoutMs: number, reuse = true): Promise<Outcome> {
  const t0 = Date.now();
  return new Promise((resolve) => {
    let settled = false;
    const done = (o: Outcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(o);
    };
    const r = http.request(
      {
        host: origin.hostname,
        port: origin.port,
        method: req.method,
        path: req.path,
        headers: { ...req.headers, ...(req.body ? { 'content-length': String(req.body.length) } : {}) },
        agent: reuse ? agent : false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          if (size < KEEP_BYTES) chunks.push(c);
          size += c.length;
        });
        const finish = (error?: string) =>
          done({
            answers: [
              { status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), ms: Date.now() - t0 },
            ],
            error,
          });
        res.on('end', () => finish());
        res.on('error', (e) => finish(`answer broke off: ${e.message}`));
        res.on('aborted', () => finish('answer broke off'));
      },
    );
    const timer = setTimeout(() => {
      r.destroy();
      done({ answers: [], error: `no answer within ${timeoutMs} ms` });
    }, timeoutMs);
    r.on('error', (e) => done({ answers: [], error: `${(e as NodeJS.ErrnoException).code ?? ''} ${e.message}` }));
    // A server may answer before reading a whole body and then close the connection (the body
    // reader does, past twice its limit); the agent may already hold that socket as free, with no
    // listener of the request's left on it, so the reset of the rest of the upload is caught here.
    r.on('socket', (socket) => {
      if (guarded.has(socket)) return;
      guarded.add(socket);
      socket.on('error', () => undefined);
    });
    if (req.body) r.end(req.body);
    else r.end();
  });
}

/**
 * Writes `parts` to a fresh connection (pausing `gapMs` between them; `end` half-closes after the
 * last) and reads until the server closes or goes quiet for `quietMs`.
 */
export function sendRaw(
  origin: URL,
  parts: Buffer[],
  opts: { end?: boolean; gapMs?: number; quietMs?: number; timeoutMs?: number; expect?: number } = {},
): Promise<Outcome & { bytes: Buffer }> {
  const t0 = Date.now();
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const socket = net.connect(Number(origin.port), origin.hostname);
    let quiet: NodeJS.Timeout | undefined;
    let settled = false;
    const finish = (error?: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(quiet);
      clearTimeout(overall);
      socket.destroy();
      const bytes = Buffer.concat(chunks);
      const parsed = parseAnswers(bytes, Date.now() - t0);
      resolve({ answers: parsed.answers, error: error ?? parsed.error, bytes });
    };
    const overall = setTimeout(() => finish(), opts.timeoutMs ?? 3000);
    const idle = () => {
      clearTimeout(quiet);
      quiet = setTimeout(() => finish(), opts.quietMs ?? 400);
    };
    socket.on('data', (c: Buffer) => {
      chunks.push(c);
      // done as soon as the answers expected are complete (a kept-alive connection never says so itself)
      const sofar = parseAnswers(Buffer.concat(chunks), 0);
      if (!sofar.error && sofar.answers.length >= (opts.expect ?? 1)) return finish();
      idle();
    });
    socket.on('end', () => finish());
    socket.on('close', () => finish());
    socket.on('error', () => finish()); // a reset after the answer is the server's right
    socket.on('connect', async () => {
      for (const [i, p] of parts.entries()) {
        if (i && opts.gapMs) await new Promise((r) => setTimeout(r, opts.gapMs));
        if (socket.destroyed) return;
        socket.write(p);
      }
      if (opts.end) socket.end();
      idle();
    });
  });
}

/** HTTP/1.1 answers one after another in `bytes` (Content-Length or chunked bodies). */
function parseAnswers(bytes: Buffer, ms: number): { answers: Answer[]; error?: string } {
  const answers: Answer[] = [];
  let at = 0;
  while (at < bytes.length) {
    const headEnd = bytes.indexOf('\r\n\r\n', at);
    if (headEnd === -1)
      return { answers, error: `incomplete answer head: ${bytes.subarray(at, at + 80).toString('latin1')}` };
    const lines = bytes.subarray(at, headEnd).toString('latin1').split('\r\n');
    const m = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0]);
    if (!m) return { answers, error: `not an HTTP answer: ${lines[0].slice(0, 80)}` };
    const headers: Record<string, string> = {};
    for (const l of lines.slice(1)) {
      const i = l.indexOf(':');
      if (i > 0) headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
    }
    let pos = headEnd + 4;
    if (m[1].startsWith('1')) {
      at = pos; // 100 Continue: the real answer follows
      continue;
    }
    let body: Buffer;
    if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
      const parts: Buffer[] = [];
      for (;;) {
        const eol = bytes.indexOf('\r\n', pos);
        if (eol === -1) return { answers, error: 'chunked answer cut off' };
        const size = Number.parseInt(bytes.subarray(pos, eol).toString('latin1'), 16);
        pos = eol + 2;
        if (!size) {
          pos = bytes.indexOf('\r\n', pos) + 2;
          break;
        }
        parts.push(bytes.subarray(pos, pos + size));
        pos += size + 2;
      }
      body = Buffer.concat(parts);
    } else {
      const length = Number(headers['content-length'] ?? 0);
      body = bytes.subarray(pos, pos + length);
      pos += length;
    }
    answers.push({ status: Number(m[1]), headers, body, ms });
    if (pos <= at) break;
    at = pos;
  }
  return { answers };
}

export function closeAgent(): void {
  agent.destroy();
}
