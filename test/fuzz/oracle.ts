// What every answer must satisfy, whatever was asked: no 5xx (but a 503 shedding load, with
// Retry-After), errors in the envelope of the route's surface (activities/surfaces/errors.ts renderError) with the
// X-Request-ID, 429s with Retry-After (or x-should-retry: false), no stack trace or internal detail
// (file paths, database or driver errors, socket errors, upstream keys and addresses) anywhere in a
// body, and JSON or SSE that parses when it says it is.
import type { Envelope } from '../../activities/surfaces/errors.js';
import type { Answer } from './http.js';

/** Bodies may echo the request (an error naming the bad value, an upstream echoing the prompt), so a
 * pattern that already matches the request's own bytes proves nothing and is not held against it. */
const LEAKS: Array<[string, RegExp]> = [
  ['stack frame', /\bat (?:async )?[\w$.<>[\]]+ \(?(?:file:|node:|\/)/],
  ['source path', /(?:\/[\w.@-]+)+\.(?:ts|mjs|cjs|js):\d+/],
  ['node internals', /node:internal|node_modules\//],
  ['JavaScript error', /\b(?:TypeError|ReferenceError|RangeError|SyntaxError|AggregateError)\b/],
  [
    'JavaScript failure text',
    /Cannot read propert|is not a function|is not iterable|undefined is not|Maximum call stack/,
  ],
  [
    'database error',
    /\bPrisma|\bprisma\.|invalid byte sequence|unsupported Unicode escape|violates .* constraint|duplicate key value/,
  ],
  ['database detail', /relation "[^"]+"|\b(?:22P0[25]|23505|40001|57014)\b/],
  ['database address', /postgres(?:ql)?:\/\//],
  ['socket error', /\b(?:ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|UND_ERR_\w+)\b/],
  ['object dump', /\[object Object\]/],
];

/** Secrets and addresses of this run that no caller may see (upstream keys, loopback upstream ports). */
export interface Secrets {
  values: string[];
}

/**
 * The problems of one answer. `envelope` is the route's (openai for paths no route serves);
 * `requestText` is what was sent, for the echo rule above.
 */
export function judge(
  a: Answer,
  opts: { envelope: Envelope; method: string; requestText: string; secrets: Secrets; upstreamsFailing?: boolean },
): string[] {
  const problems: string[] = [];
  const { envelope, method, requestText } = opts;
  const text = a.body.toString('utf8');
  // 501 is HTTP's answer to a method the server does not implement at all (TRACE, PURGE, FOO): not a
  // failure. Its envelope is checked below like any error's (a message-style 501 has no `code` field).
  const notImplemented = a.status === 501 && !['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'].includes(method);
  // when the upstreams themselves fail, 502/503/504 is the truth (a 500 never is)
  const upstreamStatus = opts.upstreamsFailing && [502, 503, 504].includes(a.status);
  // a 503 with Retry-After is the gateway shedding load on purpose (uploads past the limit), not a failure
  const shedding = a.status === 503 && a.headers['retry-after'] !== undefined;
  if (a.status >= 500 && !notImplemented && !upstreamStatus && !shedding) problems.push(`status ${a.status}`);
  const fromGateway = a.headers['x-request-id'] !== undefined;
  // Node's HTTP server answers framing it cannot read itself (400/413/414/417/431, no body): the request
  // never became a request, so there is no route and no envelope to speak.
  if (!fromGateway) {
    if (![400, 413, 414, 417, 431].includes(a.status) || a.body.length)
      problems.push(`answer ${a.status} without X-Request-ID: ${text.slice(0, 120)}`);
    return problems;
  }
  // what Node's HTTP layer could not read (a request line, a header, a method it does not know) never
  // reached a route: the gateway answers it in the OpenAI-style envelope (api/clientErrors.ts)
  const unreadable = [400, 408, 431].includes(a.status) && NODE_LAYER_CODES.test(text);
  if (a.status >= 400 && method !== 'HEAD') {
    const shape = envelopeProblem(text, unreadable ? 'openai' : envelope, a.status);
    if (shape) problems.push(shape);
    if (!/application\/json/.test(String(a.headers['content-type'])))
      problems.push(`error content-type ${a.headers['content-type']}`);
  }
  // a quota (not a rate) says not to retry at all, as the openai SDK understands it
  if (a.status === 429 && !a.headers['retry-after'] && a.headers['x-should-retry'] !== 'false')
    problems.push('429 without Retry-After');
  const type = String(a.headers['content-type'] ?? '');
  if (a.status < 400 && method !== 'HEAD') {
    if (type.includes('application/json')) {
      try {
        JSON.parse(text);
      } catch {
        problems.push(`2xx JSON that does not parse: ${text.slice(0, 120)}`);
      }
    } else if (type.includes('text/event-stream')) problems.push(...sseProblems(text, envelope));
  }
  const binary = /^(audio|video|image)\//.test(type);
  if (!binary) {
    for (const [what, re] of LEAKS)
      if (re.test(text) && !re.test(requestText)) problems.push(`leaks ${what}: ${excerpt(text, re)}`);
  }
  const raw = a.body.toString('latin1');
  for (const s of opts.secrets.values) if (raw.includes(s) && !requestText.includes(s)) problems.push(`leaks ${s}`);
  return problems;
}

function excerpt(text: string, re: RegExp): string {
  const m = re.exec(text);
  const at = m ? Math.max(0, m.index - 60) : 0;
  return JSON.stringify(text.slice(at, at + 160));
}

const isString = (v: unknown) => typeof v === 'string';
const stringOrNull = (v: unknown) => v === null || typeof v === 'string';

const NODE_LAYER_CODES =
  /^\{"error":\{[\s\S]*"code":"(malformed_request|request_header_fields_too_large|request_timeout)"/;

/** Why `text` is not an error in `envelope` (undefined when it is). */
function envelopeProblem(text: string, envelope: Envelope, status: number): string | undefined {
  let body: Record<string, any>;
  try {
    body = JSON.parse(text);
  } catch {
    return `error body is not JSON: ${text.slice(0, 120)}`;
  }
  const bad = (why: string) => `not the ${envelope} envelope (${why}): ${text.slice(0, 200)}`;
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return bad('not an object');
  switch (envelope) {
    case 'openai': {
      const e = body.error;
      if (Object.keys(body).length !== 1 || e === null || typeof e !== 'object') return bad('{error:{...}} only');
      if (!isString(e.message) || !e.message || !isString(e.type) || !stringOrNull(e.code) || !stringOrNull(e.param))
        return bad('error.message, type, code, param');
      return undefined;
    }
    case 'message': {
      const e = body.error;
      if (body.type !== 'error' || Object.keys(body).length !== 2 || e === null || typeof e !== 'object')
        return bad('{type:"error", error}');
      if (!isString(e.type) || !isString(e.message) || !e.message) return bad('error.type, error.message');
      return undefined;
    }
    case 'legacy':
      if (!isString(body.error) || !isString(body.message) || !body.message || !isString(body.code))
        return bad('error, message, code');
      if (body.status !== status) return bad(`status ${body.status} in a ${status} answer`);
      return undefined;
    case 'teams':
      if (!isString(body.code) || !isString(body.message) || body.status !== status)
        return bad('code, message, status');
      return undefined;
  }
}

/** An event stream's frames: every `data:` is JSON or [DONE]; error frames speak the route's envelope. */
function sseProblems(text: string, envelope: Envelope): string[] {
  const problems: string[] = [];
  for (const frame of text.split(/\n\n/)) {
    const data = frame
      .split('\n')
      .filter((l) => l.startsWith('data:'))
      .map((l) => l.slice(5).trimStart())
      .join('\n');
    if (!data || data === '[DONE]') continue;
    let parsed: any;
    try {
      parsed = JSON.parse(data);
    } catch {
      problems.push(`SSE frame that does not parse: ${data.slice(0, 120)}`);
      continue;
    }
    const isError = envelope === 'message' ? parsed?.type === 'error' : parsed?.error !== undefined && !parsed?.object;
    if (isError) {
      const shape = envelopeProblem(data, envelope, 0);
      // the status inside a legacy frame is the stream's own; the rest must match
      if (shape && envelope !== 'legacy') problems.push(`SSE error frame: ${shape}`);
    }
  }
  return problems;
}
