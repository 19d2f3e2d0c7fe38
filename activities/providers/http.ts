// The one HTTP client every adapter uses: undici with a shared keep-alive pool (upstream
// connections are reused across requests), and every transport failure mapped to a retryable
// RequestError (retryable) so the metered call can fall back.
//
// Every attempt has three deadlines (activities/config.ts; README, Configuration): to connect, to
// the response's first byte (status and headers), and the longest silence between two pieces of
// its body. They are undici's own per-request timers (no timer of ours per request). Missing the
// first two, or going silent before anything reached the caller, is a retryable failure: the
// metered call falls back to the next route. Going silent later cuts the stream (the caller gets
// the cut frame and pays for what was produced). Jobs add no loop of their own: a failed attempt
// fails the activity, and the workflow engine's retry policy decides what happens next.
import { Agent, errors } from 'undici';
import type { Dispatcher } from 'undici';
import { RequestError, upstreamError, isRetryableStatus } from '../core/errors.js';
import { config } from '../config.js';
import { sha256Hex } from '../core/hash.js';

/** The shared pool, made again only if the connect deadline setting changes (tests change it). */
let pool: { connectMs: number; agent: Agent } | undefined;

function agent(): Agent {
  const connectMs = config.upstreamConnectTimeoutMs;
  if (pool?.connectMs !== connectMs) {
    pool?.agent.close().catch(() => undefined);
    pool = {
      connectMs,
      agent: new Agent({
        keepAliveTimeout: 30_000,
        keepAliveMaxTimeout: 120_000,
        connections: 512,
        connect: { timeout: connectMs },
      }),
    };
  }
  return pool.agent;
}

/**
 * The sha256 (hex) of the exact bytes of a request body sent and of the response body received,
 * filled in by send() and readJson() when a target asks for them (`ProviderTarget.wire`): TEE
 * answers are signed over these two hashes, and the gateway checks the signature against them.
 */
export interface WireDigests {
  sent?: string;
  received?: string;
}

export interface UpstreamResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Dispatcher.ResponseData['body'];
}

// An upstream's few URLs are parsed once, into the origin (which picks the pool) and path undici
// dispatches on. Handing those to the agent itself skips undici's top-level `request()`, which
// parses a URL given as text (`new URL`) and, given a parsed one, reads its origin and path back
// and copies the options into a new object on every call: together about 2.5% of a non-streaming
// chat request's CPU in a profile. Per-job URLs (status, results) come and go, so the memo is
// dropped whole when it fills.
interface Target {
  origin: string;
  path: string;
}
const targets = new Map<string, Target>();
function target(url: string): Target {
  let t = targets.get(url);
  if (!t) {
    const parsed = new URL(url);
    // what undici's request() refuses too
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
      throw new errors.InvalidArgumentError('Invalid URL protocol: the URL must start with `http:` or `https:`.');
    if (targets.size >= 1000) targets.clear();
    t = { origin: parsed.origin, path: `${parsed.pathname}${parsed.search}` };
    targets.set(url, t);
  }
  return t;
}

/** POST (or GET) to an upstream. Throws UpstreamError for transport failures, never for an HTTP status. */
export async function send(
  providerId: string,
  url: string,
  init: {
    method?: 'GET' | 'POST' | 'PUT' | 'DELETE';
    headers: Record<string, string>;
    /** a JSON text, or the bytes of a multipart form (image edits) */
    body?: string | Buffer;
    signal: AbortSignal;
    /** record the body's sha256 here (see WireDigests) */
    wire?: WireDigests;
  },
): Promise<UpstreamResponse> {
  if (init.wire && init.body !== undefined) init.wire.sent = sha256Hex(init.body);
  try {
    const { origin, path } = target(url);
    const res = await agent().request({
      origin,
      path,
      method: init.method ?? 'POST',
      headers: init.headers,
      body: init.body,
      signal: init.signal,
      headersTimeout: config.upstreamFirstByteTimeoutMs,
      bodyTimeout: config.upstreamIdleTimeoutMs,
    });
    return { status: res.statusCode, headers: res.headers, body: res.body };
  } catch (err) {
    throw transportError(providerId, err);
  }
}

export function transportError(providerId: string, err: unknown): RequestError {
  if (err instanceof RequestError) return err;
  const e = err as Error & { code?: string; name?: string };
  // AbortSignal.timeout() aborts with a TimeoutError: the upstream was too slow, not gone.
  if (e.name === 'TimeoutError') {
    return upstreamError(e.message || 'timed out', 504, true, { code: 'upstream_timeout', providerId });
  }
  if (e.name === 'AbortError' || e.code === 'UND_ERR_ABORTED') {
    return upstreamError(`the call was aborted: ${e.message}`, 499, false, { code: 'aborted', providerId });
  }
  if (e.code === 'UND_ERR_CONNECT_TIMEOUT') {
    const deadline = `no connection within ${config.upstreamConnectTimeoutMs} ms (SWITCHYARD_UPSTREAM_CONNECT_TIMEOUT_MS)`;
    return upstreamError(deadline, 504, true, { code: 'upstream_timeout', providerId });
  }
  if (err instanceof errors.HeadersTimeoutError) {
    const deadline = `no response within ${config.upstreamFirstByteTimeoutMs} ms (SWITCHYARD_UPSTREAM_FIRST_BYTE_TIMEOUT_MS)`;
    return upstreamError(deadline, 504, true, { code: 'upstream_timeout', providerId });
  }
  if (err instanceof errors.BodyTimeoutError) {
    // a body gone silent: before anything reached the caller the route is given up (and the next
    // one tried); after, the stream is cut there
    const deadline = `nothing for ${config.upstreamIdleTimeoutMs} ms (SWITCHYARD_UPSTREAM_IDLE_TIMEOUT_MS)`;
    return upstreamError(deadline, 502, true, { code: 'upstream_stream_cut', providerId });
  }
  return upstreamError(`${e.code ?? e.name}: ${e.message}`, 502, true, {
    code: 'upstream_unreachable',
    providerId,
  });
}

/**
 * An upstream's non-2xx answer as a RequestError: its own message when its body has one
 * (`{error:{message}}`, `{error:"..."}`, `{message}` cover OpenAI, Anthropic, Gemini and most
 * others) as the detail (shown to the caller only for a refusal of their own request, see
 * upstreamError), the status's retryability, and Retry-After when given.
 */
export async function statusError(providerId: string, res: UpstreamResponse): Promise<RequestError> {
  const text = await res.body.text().catch(() => '');
  let message = text.slice(0, 500) || `HTTP ${res.status}`;
  try {
    const j = JSON.parse(text);
    const m =
      j?.error?.message ?? (typeof j?.error === 'string' ? j.error : undefined) ?? j?.message ?? j?.[0]?.error?.message;
    if (typeof m === 'string' && m) message = m;
  } catch {
    // not JSON: keep the text
  }
  const retryAfter = Number(res.headers['retry-after']);
  return upstreamError(message, res.status, isRetryableStatus(res.status), {
    providerId,
    retryAfterSeconds: Number.isFinite(retryAfter) ? retryAfter : undefined,
    upstreamBody: text.slice(0, 2000),
  });
}

/** Read a whole JSON body, mapping a broken body to a retryable error; `wire` gets the bytes' sha256. */
// biome-ignore lint/suspicious/noExplicitAny: wire JSON
export async function readJson(providerId: string, res: UpstreamResponse, wire?: WireDigests): Promise<any> {
  let text: string;
  try {
    if (wire) {
      const bytes = Buffer.from(await res.body.arrayBuffer());
      wire.received = sha256Hex(bytes);
      text = bytes.toString('utf8');
    } else text = await res.body.text();
  } catch (err) {
    throw transportError(providerId, err);
  }
  try {
    return JSON.parse(text);
  } catch {
    throw upstreamError('the body is not JSON', 502, true, {
      code: 'upstream_bad_response',
      providerId,
      upstreamBody: text.slice(0, 2000),
    });
  }
}

/**
 * A stream read up to its terminal marker (`[DONE]`, `message_stop`), which comes just before the
 * body's own end: read the rest (normally only the chunked-encoding end) in the background so the
 * keep-alive connection returns to the pool. Destroying the body there instead would close the
 * connection after every stream (and build an AbortError, with its stack, for each). An upstream
 * that sends more than DRAIN_LIMIT after its marker loses the connection at once; one that goes
 * silent instead loses it at the idle deadline. (No timer of our own per stream: an
 * `AbortSignal.timeout` each was a measurable share of a stream's cost.)
 */
export function drainForReuse(res: UpstreamResponse): void {
  res.body.dump({ limit: DRAIN_LIMIT }).catch(() => {});
}

const DRAIN_LIMIT = 64 * 1024;

/** Stopped early or failed: drop the connection. Its destroy error is noise (the failure was already thrown). */
export function discard(res: UpstreamResponse): void {
  if (res.body.destroyed) return;
  res.body.on('error', () => {});
  res.body.destroy();
}

/** An undici body as Buffers, a broken body mapped to a RequestError. */
export async function* bodyChunks(providerId: string, body: Dispatcher.ResponseData['body']): AsyncIterable<Buffer> {
  try {
    for await (const chunk of body) {
      const b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array);
      if (b.length) yield b;
    }
  } catch (err) {
    throw transportError(providerId, err);
  } finally {
    if (!body.destroyed) body.destroy();
  }
}
