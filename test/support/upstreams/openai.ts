// biome-ignore-all lint/suspicious/noExplicitAny: request bodies are arbitrary JSON
// A loopback OpenAI-compatible upstream for tests: POST {base}/chat/completions and
// POST {base}/completions, JSON and SSE, with OpenAI's real framing, auth check and error bodies,
// and POST {base}/moderations (OpenAI's moderations protocol: `results`, one verdict per input; the
// loopback's classifier is a small word list per category, see moderate()).
// It answers deterministically from the request ("Echo: <last user text>", or {"echo": ...} when
// JSON output was asked for), honours the output cap, and can be scripted per request: the reply's
// text, reasoning, tool calls, usage and finish reason, or a delay, an error status, a hang, a
// dropped connection, a stream cut or an error frame midway. Every request is recorded for assertions.
// `promptCache()` turns on OpenAI's implicit prompt caching: a chat prompt whose leading messages
// this upstream has seen before reports them as `prompt_tokens_details.cached_tokens` (at least
// `minTokens`, in steps of `increment`, as OpenAI's 1,024 and 128), and only this upstream knows them.
//
//   const up = await startOpenAIUpstream();            // key "sk-loopback"; { apiKey: null } = keyless
//   up.script({ toolCalls: [{ name: 'get_weather', arguments: '{"city":"Paris"}' }] });
//   ... target = { providerId: 'openai', baseUrl: up.url, apiKey: up.apiKey, options: {} }
//   up.requests[0].body.messages ...; await up.close();
import http from 'node:http';
import { type BodyWriter, bodyWriter, defaultSplit, type SplitWrites } from './split.js';
import { listenOnLoopback, closeServer } from './loopback.js';

interface WireError {
  message?: string;
  type?: string;
  param?: string | null;
  code?: string | null;
}

interface UpstreamReply {
  /** the answer text (default: derived from the request) */
  text?: string;
  /** the answer as exactly these content deltas, as a tokenizer may split words ("[EM", "AIL_1]") */
  pieces?: string[];
  reasoning?: string;
  /** where the reasoning goes: vLLM/DeepSeek say `reasoning_content`, OpenRouter/Groq `reasoning` */
  reasoningField?: 'reasoning_content' | 'reasoning';
  /** the model calls these tools (ids default to call_<n>) */
  toolCalls?: Array<{ id?: string; name: string; arguments: string }>;
  /** the wire finish_reason (default stop / length / tool_calls, as the reply implies) */
  finishReason?: string;
  /** the wire usage object as sent; null = report none (default: counted words) */
  usage?: Record<string, unknown> | null;
  /** answer this status with an OpenAI error body (`error` overrides its fields) */
  status?: number;
  error?: WireError;
  /** extra response headers, e.g. { 'retry-after': '7' } */
  headers?: Record<string, string>;
  /** wait this long before the response headers */
  delayMs?: number;
  /** never answer: hold the request until the client gives up */
  hang?: boolean;
  /** close the connection without answering (a connection error before the first byte) */
  drop?: boolean;
  /** answer 200 and its headers at once, then send nothing more (JSON or a stream, as asked) */
  headersThenHang?: boolean;
  /** stream: stop after this many data events, without finish or [DONE] */
  cutAfter?: number;
  /** how the cut happens: a clean end of the body (default) or a dropped connection */
  cutMode?: 'end' | 'destroy';
  /** stream: after this many data events, stall until the client gives up */
  hangAfter?: number;
  /** stream: after this many data events send `data: {"error": ...}` (from `error`) and end */
  errorAfter?: number;
  /** stream: leave out the final `data: [DONE]` */
  omitDone?: boolean;
  /** stream: pause between events */
  eventDelayMs?: number;
  /** stream: send `[DONE]` at once but end the body only this much later (a proxy flushing late) */
  endDelayMs?: number;
  /** answer a stream request in one JSON piece, as servers that ignore `stream` do */
  ignoreStream?: boolean;
  /** stream, chat: usage on the finishing chunk and no usage chunk of its own (as some servers do) */
  usageOnFinish?: boolean;
  /**
   * chat, for requests that ask for `logprobs`: the model's next-token distribution at the start
   * of the reply, as natural-log probabilities by token text. The reply then begins with its
   * likeliest token (greedy, as at temperature 0), whose entry carries this distribution's top
   * `top_logprobs` alternatives, most likely first, as OpenAI reports them.
   */
  nextTokens?: Record<string, number>;
  /** leave log probabilities out even when asked for (as servers that ignore `logprobs` do) */
  omitLogprobs?: boolean;
  /** moderations: answer with exactly this `results` value (a malformed or short answer) */
  moderationResults?: unknown;
}

type ScriptedReply = UpstreamReply | ((req: RecordedRequest) => UpstreamReply);

interface RecordedRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  /** the parsed JSON body (undefined when it was not JSON) */
  body: any;
  /** the client went away before the answer was complete */
  aborted: boolean;
  /** the client's side of the TCP connection: the same port again = a kept-alive connection reused */
  remotePort: number | undefined;
}

export interface OpenAIUpstreamOptions {
  /** the Bearer key required; null = keyless (a self-hosted server without --api-key). Default "sk-loopback". */
  apiKey?: string | null;
  /** path prefix of the API (default "/v1"; OpenRouter's is "/api/v1") */
  basePath?: string;
  /** behave like api.openai.com: unknown body fields and misplaced ones are a 400 */
  strict?: boolean;
  /** write streams split at arbitrary byte boundaries (split.ts; default: TEST_SPLIT_WRITES) */
  split?: SplitWrites;
}

export interface OpenAIUpstream {
  /** base URL including the API prefix, as the catalog's base_url: http://127.0.0.1:<port>/v1 */
  url: string;
  apiKey: string | undefined;
  requests: RecordedRequest[];
  /** queue replies for the next requests, in order; unscripted requests get the default reply */
  script(...replies: ScriptedReply[]): void;
  /** fields applied to every reply (scripted ones override them) */
  defaults(reply: UpstreamReply): void;
  /** the last recorded request */
  last(): RecordedRequest;
  /** from now on, write streams split at arbitrary byte boundaries (undefined: whole frames) */
  splitWrites(mode: SplitWrites | undefined): void;
  /** cache chat prompt prefixes as OpenAI does (undefined: off, the default; reset() turns it off) */
  promptCache(opts: { minTokens?: number; increment?: number } | undefined): void;
  reset(): void;
  close(): Promise<void>;
}

const chatParams = new Set([
  'model',
  'messages',
  'audio',
  'frequency_penalty',
  'function_call',
  'functions',
  'logit_bias',
  'logprobs',
  'max_completion_tokens',
  'max_tokens',
  'metadata',
  'modalities',
  'n',
  'parallel_tool_calls',
  'prediction',
  'presence_penalty',
  'prompt_cache_key',
  'reasoning_effort',
  'response_format',
  'safety_identifier',
  'seed',
  'service_tier',
  'stop',
  'store',
  'stream',
  'stream_options',
  'temperature',
  'tool_choice',
  'tools',
  'top_logprobs',
  'top_p',
  'user',
  'verbosity',
  'web_search_options',
]);
const completionParams = new Set([
  'model',
  'prompt',
  'best_of',
  'echo',
  'frequency_penalty',
  'logit_bias',
  'logprobs',
  'max_tokens',
  'n',
  'presence_penalty',
  'seed',
  'stop',
  'stream',
  'stream_options',
  'suffix',
  'temperature',
  'top_p',
  'user',
]);

const defaultErrors: Record<number, WireError> = {
  400: { message: 'Invalid request.', type: 'invalid_request_error', code: null },
  404: {
    message: 'The model does not exist or you do not have access to it.',
    type: 'invalid_request_error',
    code: 'model_not_found',
  },
  429: {
    message: 'Rate limit reached for requests per min (RPM). Please try again in 7s.',
    type: 'requests',
    code: 'rate_limit_exceeded',
  },
  500: {
    message: 'The server had an error while processing your request. Sorry about that!',
    type: 'server_error',
    code: null,
  },
  503: { message: 'The engine is currently overloaded, please try again later.', type: 'server_error', code: null },
};

const errorBody = (status: number, e: WireError = {}) => ({
  error: { message: 'Error.', type: 'invalid_request_error', param: null, code: null, ...defaultErrors[status], ...e },
});

const textOf = (content: unknown): string =>
  typeof content === 'string'
    ? content
    : Array.isArray(content)
      ? content
          .filter((p: any) => p?.type === 'text')
          .map((p: any) => p.text)
          .join('\n')
      : '';

/** Words with their leading whitespace: the loopback's "tokens". */
const tokenize = (text: string): string[] => text.match(/\s*\S+/g) ?? (text ? [text] : []);
const words = (text: string) => tokenize(text).length;
const lp = (i: number) => -((i % 7) + 1) / 10;

/** What the request is answered with, before scripting: derived from the request only. */
function derive(path: string, body: any): { text: string; promptTokens: number } {
  if (path === 'completions') {
    const prompt = Array.isArray(body.prompt) ? String(body.prompt[0] ?? '') : String(body.prompt ?? '');
    return { text: ` Echo: ${prompt}`, promptTokens: words(prompt) };
  }
  const messages: any[] = Array.isArray(body.messages) ? body.messages : [];
  const lastUser = [...messages].reverse().find((m) => m?.role === 'user');
  const said = textOf(lastUser?.content);
  const json = body.response_format?.type === 'json_object' || body.response_format?.type === 'json_schema';
  const schema = body.response_format?.json_schema?.schema;
  return {
    // a schema that names its properties gets an answer of its shape (strings say what the user said)
    text: schema?.properties
      ? JSON.stringify(instanceOf(schema, said))
      : json
        ? JSON.stringify({ echo: said })
        : `Echo: ${said}`,
    promptTokens: messages.reduce((n, m) => n + words(textOf(m?.content)), 0),
  };
}

/**
 * The plainest value a JSON schema accepts, as a model under structured outputs must answer: the
 * first of an enum or anyOf, every property of an object, the fewest items an array needs, its
 * minimum for a number (else 0), `said` for a string.
 */
function instanceOf(schema: any, said: string): unknown {
  if (!schema || typeof schema !== 'object') return null;
  if ('const' in schema) return schema.const;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  const branch = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(branch)) return instanceOf(branch[0], said);
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'object':
      return Object.fromEntries(Object.entries(schema.properties ?? {}).map(([k, v]) => [k, instanceOf(v, said)]));
    case 'array':
      return Array.from({ length: schema.minItems ?? 0 }, () => instanceOf(schema.items, said));
    case 'number':
    case 'integer':
      return schema.minimum ?? 0;
    case 'boolean':
      return false;
    case 'null':
      return null;
    default:
      return said;
  }
}

/** Mirrors some of api.openai.com's own request checks, so a translation mistake shows as the real 400. */
function strictProblem(path: string, body: any): string | undefined {
  const allowed = path === 'completions' ? completionParams : chatParams;
  const unknown = Object.keys(body).find((k) => !allowed.has(k));
  if (unknown) return `Unrecognized request argument supplied: ${unknown}`;
  if (body.stream_options !== undefined && body.stream !== true)
    return "The 'stream_options' parameter is only allowed when 'stream' is enabled.";
  if (body.top_logprobs !== undefined && path === 'chat' && body.logprobs !== true)
    return "Invalid value for 'top_logprobs': 'logprobs' must be set to true.";
  if (path === 'chat' && typeof body.top_logprobs === 'number' && body.top_logprobs > 20)
    return "Invalid 'top_logprobs': integer above maximum value. Expected a value <= 20, but got a value above.";
  if ((body.tool_choice !== undefined || body.parallel_tool_calls !== undefined) && !body.tools?.length) {
    return "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.";
  }
  if (path === 'chat') {
    const called = new Set<string>();
    for (const m of body.messages ?? []) {
      if (m.role === 'assistant') for (const c of m.tool_calls ?? []) called.add(c.id);
      if (m.role === 'tool' && !called.has(m.tool_call_id)) {
        return "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.";
      }
    }
  }
  return undefined;
}

export async function startOpenAIUpstream(opts: OpenAIUpstreamOptions = {}): Promise<OpenAIUpstream> {
  const apiKey = opts.apiKey === undefined ? 'sk-loopback' : (opts.apiKey ?? undefined);
  const basePath = (opts.basePath ?? '/v1').replace(/\/+$/, '');
  const requests: RecordedRequest[] = [];
  const queue: ScriptedReply[] = [];
  let base: UpstreamReply = {};
  let serial = 0;
  let split = opts.split ?? defaultSplit();
  let cache: { minTokens: number; increment: number; seen: Set<string> } | undefined;

  /**
   * Implicit prompt caching: the longest run of leading messages (with the same model and tools)
   * an earlier request sent, counted in prompt tokens, rounded down to the cache's granularity.
   * Every prefix of this prompt is cached for the next request.
   */
  function cachedPrefixTokens(body: any): number {
    if (!cache || !Array.isArray(body?.messages)) return 0;
    let tokens = 0;
    let hit = 0;
    const keys = body.messages.map((m: any, i: number) => {
      tokens += words(textOf(m?.content));
      const key = JSON.stringify([body.model, body.tools ?? null, body.messages.slice(0, i + 1)]);
      if (cache!.seen.has(key)) hit = tokens;
      return key;
    });
    for (const k of keys) cache.seen.add(k);
    if (hit < cache.minTokens) return 0;
    return cache.minTokens + Math.floor((hit - cache.minTokens) / cache.increment) * cache.increment;
  }

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: any;
      try {
        body = raw ? JSON.parse(raw) : undefined;
      } catch {
        body = undefined;
      }
      const rec: RecordedRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body,
        aborted: false,
        remotePort: req.socket.remotePort,
      };
      requests.push(rec);
      res.on('close', () => {
        if (!res.writableFinished) rec.aborted = true;
      });
      handle(rec, raw, res).catch((err) => {
        if (!res.headersSent) send(res, 500, errorBody(500, { message: String(err) }));
        else res.destroy();
      });
    });
  });

  async function handle(rec: RecordedRequest, raw: string, res: http.ServerResponse): Promise<void> {
    const route =
      rec.path === `${basePath}/chat/completions`
        ? 'chat'
        : rec.path === `${basePath}/completions`
          ? 'completions'
          : rec.path === `${basePath}/moderations`
            ? 'moderations'
            : undefined;
    if (rec.method !== 'POST' || !route) {
      return send(res, 404, errorBody(404, { message: `Invalid URL (${rec.method} ${rec.path})`, code: null }));
    }
    if (apiKey !== undefined) {
      const auth = rec.headers.authorization;
      if (!auth?.startsWith('Bearer ')) {
        return send(
          res,
          401,
          errorBody(401, {
            message:
              "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
          }),
        );
      }
      const given = auth.slice('Bearer '.length);
      if (given !== apiKey) {
        return send(
          res,
          401,
          errorBody(401, {
            message: `Incorrect API key provided: ${given.slice(0, 3)}***${given.slice(-4)}. You can find your API key at https://platform.openai.com/account/api-keys.`,
            code: 'invalid_api_key',
          }),
        );
      }
    }
    if (rec.body === undefined || typeof rec.body !== 'object') {
      return send(
        res,
        400,
        errorBody(400, {
          message: `We could not parse the JSON body of your request. The OpenAI API expects a JSON payload, but what was sent was not valid JSON: ${raw.slice(0, 50)}`,
        }),
      );
    }
    if (route === 'moderations') return moderations(rec, res);
    if (typeof rec.body.model !== 'string')
      return send(res, 400, errorBody(400, { message: 'you must provide a model parameter' }));
    if (route === 'chat' && !Array.isArray(rec.body.messages))
      return send(
        res,
        400,
        errorBody(400, {
          message: "Missing required parameter: 'messages'.",
          param: 'messages',
          code: 'missing_required_parameter',
        }),
      );
    if (route === 'completions' && rec.body.prompt === undefined)
      return send(
        res,
        400,
        errorBody(400, {
          message: "Missing required parameter: 'prompt'.",
          param: 'prompt',
          code: 'missing_required_parameter',
        }),
      );
    const problem = opts.strict ? strictProblem(route, rec.body) : undefined;
    if (problem) return send(res, 400, errorBody(400, { message: problem }));

    const next = queue.shift();
    const reply: UpstreamReply = { ...base, ...(typeof next === 'function' ? next(rec) : next) };
    if (reply.hang) return; // held open until the client leaves
    if (reply.drop) return void res.socket?.destroy();
    if (reply.delayMs) {
      await sleep(reply.delayMs);
      if (res.destroyed) return;
    }
    if (reply.status && reply.status >= 400) {
      return send(res, reply.status, errorBody(reply.status, reply.error), reply.headers);
    }
    if (reply.headersThenHang) {
      res.writeHead(200, { 'content-type': rec.body.stream === true ? 'text/event-stream' : 'application/json' });
      res.flushHeaders();
      return; // held open until the client leaves
    }
    const answer = compose(route, rec.body, reply, ++serial, route === 'chat' ? cachedPrefixTokens(rec.body) : 0);
    if (rec.body.stream === true && !reply.ignoreStream)
      return streamAnswer(res, rec.body, answer, reply, bodyWriter(res, split));
    send(res, 200, route === 'chat' ? answer.chatJson() : answer.completionJson(), reply.headers);
  }

  /** OpenAI's moderations: `input` a string or a list of strings or text parts; `model` optional. */
  async function moderations(rec: RecordedRequest, res: http.ServerResponse): Promise<void> {
    const { input, model, ...rest } = rec.body;
    const unknown = Object.keys(rest)[0];
    if (opts.strict && unknown)
      return send(res, 400, errorBody(400, { message: `Unrecognized request argument supplied: ${unknown}` }));
    const items = typeof input === 'string' ? [input] : input;
    const texts = Array.isArray(items)
      ? items.map((x: any) => (typeof x === 'string' ? x : x?.type === 'text' ? x.text : undefined))
      : undefined;
    if (!texts?.length || texts.some((t: unknown) => typeof t !== 'string'))
      return send(
        res,
        400,
        errorBody(400, { message: "Invalid value for 'input'.", param: 'input', code: 'invalid_value' }),
      );
    const next = queue.shift();
    const reply: UpstreamReply = { ...base, ...(typeof next === 'function' ? next(rec) : next) };
    if (reply.hang) return;
    if (reply.drop) return void res.socket?.destroy();
    if (reply.delayMs) await sleep(reply.delayMs);
    if (reply.status && reply.status >= 400)
      return send(res, reply.status, errorBody(reply.status, reply.error), reply.headers);
    send(res, 200, {
      id: `modr-${++serial}`,
      model: model ?? 'omni-moderation-latest',
      results: reply.moderationResults ?? texts.map(moderate),
    });
  }

  const { port } = await listenOnLoopback(server);

  return {
    url: `http://127.0.0.1:${port}${basePath}`,
    apiKey,
    requests,
    script: (...replies) => void queue.push(...replies),
    defaults: (reply) => {
      base = reply;
    },
    splitWrites: (mode) => {
      split = mode;
    },
    last: () => {
      if (!requests.length) throw new Error('the loopback upstream received no request');
      return requests[requests.length - 1];
    },
    promptCache: (o) => {
      cache = o ? { minTokens: o.minTokens ?? 1024, increment: o.increment ?? 128, seen: new Set() } : undefined;
    },
    reset: () => {
      cache = undefined;
      queue.length = 0;
      requests.length = 0;
      base = {};
    },
    close: () => closeServer(server),
  };
}

/** The loopback's classifier: a category is flagged when the text has one of its words. */
const MODERATION_WORDS: Record<string, RegExp> = {
  harassment: /\b(idiot|loser)\b/i,
  hate: /\b(subhuman|vermin)\b/i,
  'self-harm': /\b(hurt myself|end my life)\b/i,
  sexual: /\b(explicit sex)\b/i,
  violence: /\b(kill|murder|stab)\b/i,
  illicit: /\b(make a bomb|cook meth)\b/i,
};

function moderate(text: string) {
  const categories: Record<string, boolean> = {};
  const category_scores: Record<string, number> = {};
  const category_applied_input_types: Record<string, string[]> = {};
  for (const [name, re] of Object.entries(MODERATION_WORDS)) {
    categories[name] = re.test(text);
    category_scores[name] = categories[name] ? 0.97 : 0.0004;
    category_applied_input_types[name] = ['text'];
  }
  return {
    flagged: Object.values(categories).some(Boolean),
    categories,
    category_scores,
    category_applied_input_types,
  };
}

function send(res: http.ServerResponse, status: number, json: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(json);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One generation, laid out once and rendered as JSON or as stream chunks. */
function compose(route: 'chat' | 'completions', body: any, reply: UpstreamReply, serial: number, cachedTokens = 0) {
  const derived = derive(route, body);
  const calls = (reply.toolCalls ?? []).map((c, i) => ({
    id: c.id ?? `call_${serial}_${i}`,
    name: c.name,
    arguments: c.arguments,
  }));
  const cap = Number(body.max_completion_tokens ?? body.max_tokens ?? Infinity);
  const reasoningTokens = tokenize(reply.reasoning ?? '');
  // a scripted next-token distribution, most likely first: the reply starts with its top token
  const next =
    route === 'chat' && reply.nextTokens && body.logprobs === true
      ? Object.entries(reply.nextTokens).sort((a, b) => b[1] - a[1])
      : [];
  let tokens =
    reply.pieces ??
    (next.length
      ? [next[0][0], ...tokenize(reply.text ?? '')]
      : calls.length && reply.text === undefined
        ? []
        : tokenize(reply.text ?? derived.text));
  let finish = calls.length ? 'tool_calls' : 'stop';
  if (reasoningTokens.length + tokens.length > cap) {
    tokens = tokens.slice(0, Math.max(0, cap - reasoningTokens.length));
    finish = 'length';
  }
  finish = reply.finishReason ?? finish;
  const completion = reasoningTokens.length + tokens.length + calls.reduce((n, c) => n + words(c.arguments), 0);
  const usage =
    reply.usage !== undefined
      ? reply.usage
      : {
          prompt_tokens: derived.promptTokens,
          completion_tokens: completion,
          total_tokens: derived.promptTokens + completion,
          prompt_tokens_details: { cached_tokens: cachedTokens, audio_tokens: 0 },
          completion_tokens_details: {
            reasoning_tokens: reasoningTokens.length,
            audio_tokens: 0,
            accepted_prediction_tokens: 0,
            rejected_prediction_tokens: 0,
          },
        };
  const reasoningField = reply.reasoningField ?? 'reasoning_content';
  const id = `${route === 'chat' ? 'chatcmpl' : 'cmpl'}-loopback${serial}`;
  const created = Math.floor(Date.now() / 1000);
  const model = body.model;
  const topN = Number(route === 'chat' ? (body.top_logprobs ?? 0) : (body.logprobs ?? 0));
  const wantLogprobs =
    !reply.omitLogprobs && (route === 'chat' ? body.logprobs === true : typeof body.logprobs === 'number');

  const chatLogprob = (tok: string, i: number) =>
    i === 0 && next.length
      ? {
          token: tok,
          logprob: next[0][1],
          bytes: [...Buffer.from(tok)],
          top_logprobs: next.slice(0, topN).map(([t, l]) => ({ token: t, logprob: l, bytes: [...Buffer.from(t)] })),
        }
      : fakeLogprob(tok, i);
  const fakeLogprob = (tok: string, i: number) => ({
    token: tok,
    logprob: lp(i),
    bytes: [...Buffer.from(tok)],
    top_logprobs: Array.from({ length: topN }, (_, k) => {
      const t = k === 0 ? tok : `${tok}~${k}`;
      return { token: t, logprob: lp(i) - k, bytes: [...Buffer.from(t)] };
    }),
  });
  const legacyLogprobs = (toks: string[], from: number, offset: number) => ({
    tokens: toks,
    token_logprobs: toks.map((_, j) => lp(from + j)),
    top_logprobs: toks.map((tok, j) =>
      Object.fromEntries(
        Array.from({ length: Math.max(1, topN) }, (_, k) => [k === 0 ? tok : `${tok}~${k}`, lp(from + j) - k]),
      ),
    ),
    text_offset: toks.map((_, j) => offset + toks.slice(0, j).join('').length),
  });
  const promptLength = route === 'completions' ? String(body.prompt).length : 0;
  const toolCallsWire = calls.map((c) => ({
    id: c.id,
    type: 'function',
    function: { name: c.name, arguments: c.arguments },
  }));

  return {
    chatJson: () => ({
      id,
      object: 'chat.completion',
      created,
      model,
      system_fingerprint: 'fp_loopback',
      service_tier: 'default',
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: tokens.length || !calls.length ? tokens.join('') : null,
            refusal: null,
            ...(reasoningTokens.length ? { [reasoningField]: reasoningTokens.join('') } : {}),
            ...(calls.length ? { tool_calls: toolCallsWire } : {}),
            annotations: [],
          },
          logprobs: wantLogprobs ? { content: tokens.map(chatLogprob), refusal: null } : null,
          finish_reason: finish,
        },
      ],
      ...(usage ? { usage } : {}),
    }),
    completionJson: () => ({
      id,
      object: 'text_completion',
      created,
      model,
      choices: [
        {
          text: tokens.join(''),
          index: 0,
          logprobs: wantLogprobs ? legacyLogprobs(tokens, 0, promptLength) : null,
          finish_reason: finish,
        },
      ],
      ...(usage ? { usage } : {}),
    }),
    /** the data events of a stream, without [DONE] */
    chunks: (includeUsage: boolean): unknown[] => {
      const u = includeUsage ? { usage: null } : {};
      if (route === 'completions') {
        let offset = promptLength;
        const out: unknown[] = tokens.map((tok, i) => {
          const c = {
            id,
            object: 'text_completion',
            created,
            model,
            choices: [
              {
                text: tok,
                index: 0,
                logprobs: wantLogprobs ? legacyLogprobs([tok], i, offset) : null,
                finish_reason: null,
              },
            ],
            ...u,
          };
          offset += tok.length;
          return c;
        });
        out.push({
          id,
          object: 'text_completion',
          created,
          model,
          choices: [{ text: '', index: 0, logprobs: null, finish_reason: finish }],
          ...u,
        });
        if (includeUsage) out.push({ id, object: 'text_completion', created, model, choices: [], usage });
        return out;
      }
      const chunk = (delta: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
        id,
        object: 'chat.completion.chunk',
        created,
        model,
        system_fingerprint: 'fp_loopback',
        service_tier: 'default',
        choices: [{ index: 0, delta, logprobs: null, finish_reason: null, ...extra }],
        ...u,
      });
      const out: unknown[] = [chunk({ role: 'assistant', content: '', refusal: null })];
      for (const tok of reasoningTokens) out.push(chunk({ [reasoningField]: tok }));
      for (const [i, tok] of tokens.entries()) {
        out.push(
          chunk({ content: tok }, wantLogprobs ? { logprobs: { content: [chatLogprob(tok, i)], refusal: null } } : {}),
        );
      }
      calls.forEach((c, index) => {
        out.push(
          chunk({ tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.name, arguments: '' } }] }),
        );
        // arguments arrive in pieces, as OpenAI sends them
        const size = Math.max(1, Math.ceil(c.arguments.length / 3));
        for (let at = 0; at < c.arguments.length; at += size) {
          out.push(chunk({ tool_calls: [{ index, function: { arguments: c.arguments.slice(at, at + size) } }] }));
        }
      });
      const finishing = chunk({}, { finish_reason: finish });
      if (includeUsage && reply.usageOnFinish) return [...out, { ...finishing, usage }];
      out.push(finishing);
      if (includeUsage)
        out.push({
          id,
          object: 'chat.completion.chunk',
          created,
          model,
          system_fingerprint: 'fp_loopback',
          choices: [],
          usage,
        });
      return out;
    },
  };
}

async function streamAnswer(
  res: http.ServerResponse,
  body: any,
  answer: ReturnType<typeof compose>,
  reply: UpstreamReply,
  out: BodyWriter,
): Promise<void> {
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    ...reply.headers,
  });
  const events = answer.chunks(body.stream_options?.include_usage === true);
  for (let i = 0; i < events.length; i++) {
    if (res.destroyed) return;
    if (reply.cutAfter === i) {
      // "destroy": the connection drops mid-body (after what was written is delivered)
      if (reply.cutMode === 'destroy') res.socket?.end();
      else res.end();
      return;
    }
    if (reply.hangAfter === i) return; // stall with the connection open
    if (reply.errorAfter === i) {
      await out.end(
        `data: ${JSON.stringify(errorBody(500, reply.error ?? { message: 'The server had an error while processing your request. Sorry about that!', type: 'server_error' }))}\n\n`,
      );
      return;
    }
    await out.write(`data: ${JSON.stringify(events[i])}\n\n`);
    if (reply.eventDelayMs) await sleep(reply.eventDelayMs);
  }
  if (reply.endDelayMs && !reply.omitDone) {
    await out.write('data: [DONE]\n\n');
    await sleep(reply.endDelayMs);
    res.end();
    return;
  }
  await out.end(reply.omitDone ? undefined : 'data: [DONE]\n\n');
}
