// biome-ignore-all lint/suspicious/noExplicitAny: request bodies are arbitrary JSON
// A loopback Anthropic Messages API for tests: POST {base}/v1/messages (JSON or SSE) and
// POST {base}/v1/messages/count_tokens, with Anthropic's headers (x-api-key, anthropic-version),
// bodies, named SSE events and error shapes, and the request checks (400s) whose violation a
// translation bug would cause. It answers from the request ("Echo: <last user text>", the forced
// tool's call with an input that fits its schema, a thinking block when thinking is on) and honours
// max_tokens and stop_sequences (stop_reason "stop_sequence" naming the one that matched), unless a
// test scripts the next reply. Every request is recorded for assertions.
//
//   const up = await startAnthropicUpstream();          // key "sk-ant-loopback-key"
//   target = { providerId: 'anthropic', baseUrl: up.url, apiKey: up.apiKey, options: {} }
//   up.script({ toolCalls: [{ name: 'get_weather', input: { city: 'Paris' } }] });
//   up.script({ error: { status: 529 } });               // Anthropic's overloaded_error body
//   up.script({ text: 'a b c', streamError: { afterEvents: 4 } });  // `event: error` midway
//   up.script({ endpoint: 'count_tokens', inputTokens: 42 });
//   up.last().body.messages ...; await up.close();
//   up.promptCache(true);   // cache at `cache_control` breakpoints, reporting reads and writes as Anthropic does
import http from 'node:http';
import { type BodyWriter, bodyWriter, defaultSplit, type SplitWrites } from './split.js';
import { listenOnLoopback, closeServer } from './loopback.js';

interface AnthropicReply {
  /** which endpoint consumes this script (default 'messages') */
  endpoint?: 'messages' | 'count_tokens';
  /** the answer text (default: "Echo: <last user text>"); '' for none */
  text?: string;
  /** a thinking block before the text (default when the request enables thinking) */
  reasoning?: string;
  toolCalls?: Array<{ id?: string; name: string; input: unknown }>;
  /** default: tool_use when there are tool calls, else end_turn */
  stopReason?: string;
  /** wire usage fields (defaults estimate ~4 characters a token); null = report none */
  usage?: {
    input_tokens?: number;
    output_tokens?: number;
    cache_creation_input_tokens?: number;
    cache_read_input_tokens?: number;
    output_tokens_details?: { thinking_tokens: number };
  } | null;
  /** count_tokens answer */
  inputTokens?: number;
  /** wait this long before the response headers */
  delayMs?: number;
  /** answer with this status and Anthropic's error body (type from the status unless given) */
  error?: { status: number; type?: string; message?: string; retryAfter?: number };
  /** streaming: after this many events, an `event: error` frame, then the end of the response */
  streamError?: { afterEvents: number; type?: string; message?: string };
  /** streaming: after this many events, stop ('end' closes the response cleanly, 'destroy' the socket) */
  cut?: { afterEvents: number; mode?: 'end' | 'destroy' };
  /** never answer (before headers, or after this many stream events) until the client goes away */
  hang?: boolean | { afterEvents: number };
  /**
   * With the `web_search_20250305` server tool in the request: the searches the model runs (capped
   * by the tool's max_uses, default 1) and the results each finds; the text then cites the first.
   */
  webSearch?: { searches?: number; results?: Array<{ url: string; title: string }> };
}

interface RecordedRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: any;
  /** when it arrived (epoch ms) */
  at: number;
  /** the client went away before the reply was complete */
  aborted: boolean;
  /** resolves when the connection for this request closed (complete or not) */
  closed: Promise<void>;
  /** the request's connection is still open (kept alive for the next request) */
  readonly connectionOpen: boolean;
}

export interface AnthropicUpstream {
  /** base URL, as the catalog's `https://api.anthropic.com` */
  url: string;
  apiKey: string;
  requests: RecordedRequest[];
  /** queue replies, consumed in order by the next requests to their endpoint */
  script(...replies: AnthropicReply[]): void;
  /** the reply used when nothing is queued (undefined: back to the derived default) */
  always(reply: AnthropicReply | undefined): void;
  last(): RecordedRequest;
  /** from now on, write streams split at arbitrary byte boundaries (undefined: whole frames) */
  splitWrites(mode: SplitWrites | undefined): void;
  /**
   * Prompt caching as Anthropic does it (off by default): the prompt up to each `cache_control`
   * breakpoint (tools, then system, then messages) is cached for its ttl; a later prompt that
   * reaches a cached breakpoint reads it (`cache_read_input_tokens`), and the part up to its last
   * breakpoint beyond that is written (`cache_creation_input_tokens`, split by ttl in `cache_creation`).
   */
  promptCache(on: boolean): void;
  close(): Promise<void>;
}

const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  504: 'timeout_error',
  529: 'overloaded_error',
};
const ERROR_MESSAGES: Record<string, string> = {
  overloaded_error: 'Overloaded',
  api_error: 'Internal server error',
  rate_limit_error: 'This request would exceed the rate limit for your organization of 50 requests per minute.',
  timeout_error: 'Request timed out',
};

export async function startAnthropicUpstream(
  opts: { apiKey?: string; split?: SplitWrites } = {},
): Promise<AnthropicUpstream> {
  const apiKey = opts.apiKey ?? 'sk-ant-loopback-key';
  let split = opts.split ?? defaultSplit();
  const requests: RecordedRequest[] = [];
  const queue: AnthropicReply[] = [];
  let fallback: AnthropicReply | undefined;
  let ids = 0;
  const nextId = (prefix: string) => `${prefix}_loop${String(++ids).padStart(6, '0')}`;
  let cache: Map<string, number> | undefined; // prefix → when it expires

  /** The input side of the usage under prompt caching (see promptCache), or undefined when it is off. */
  function cacheUsage(body: any): CacheUsage | undefined {
    if (!cache) return undefined;
    const blocks: Array<{ at: string; block: any }> = [];
    for (const t of body.tools ?? []) blocks.push({ at: 'tools', block: t });
    const system = typeof body.system === 'string' ? [{ type: 'text', text: body.system }] : (body.system ?? []);
    for (const b of system) blocks.push({ at: 'system', block: b });
    for (const m of body.messages ?? [])
      for (const b of typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content)
        blocks.push({ at: m.role, block: b });
    const plain = blocks.map(({ at, block: { cache_control: _, ...b } }) => [at, b]);
    const tokens = (n: number) => Math.ceil(JSON.stringify([body.model, plain.slice(0, n)]).length / 4);
    const now = Date.now();
    const keyAt = (n: number) => JSON.stringify([body.model, plain.slice(0, n)]);
    const breakpoints = blocks.flatMap(({ block }, i) =>
      block.cache_control ? [{ end: i + 1, ttl: block.cache_control.ttl as string | undefined }] : [],
    );
    // a read: the longest cached prefix ending at a breakpoint or up to 20 blocks before one (Anthropic's lookback)
    let readEnd = 0;
    for (const b of breakpoints)
      for (let end = b.end; end > Math.max(0, b.end - 20); end--)
        if (end > readEnd && (cache!.get(keyAt(end)) ?? 0) > now) readEnd = end;
    const read = readEnd ? tokens(readEnd) : 0;
    // writes: each breakpoint beyond the read caches the part since the one before, for its ttl
    const written = { '5m': 0, '1h': 0 };
    let upTo = read;
    for (const b of breakpoints.filter((b) => b.end > readEnd)) {
      written[b.ttl === '1h' ? '1h' : '5m'] += tokens(b.end) - upTo;
      upTo = tokens(b.end);
    }
    for (const b of breakpoints) cache.set(keyAt(b.end), now + (b.ttl === '1h' ? 3_600_000 : 300_000));
    return {
      input_tokens: tokens(blocks.length) - upTo,
      cache_read_input_tokens: read,
      cache_creation_input_tokens: written['5m'] + written['1h'],
      cache_creation: { ephemeral_5m_input_tokens: written['5m'], ephemeral_1h_input_tokens: written['1h'] },
    };
  }

  const takeScript = (endpoint: 'messages' | 'count_tokens'): AnthropicReply => {
    const i = queue.findIndex((r) => (r.endpoint ?? 'messages') === endpoint);
    return i === -1 ? (fallback ?? {}) : queue.splice(i, 1)[0];
  };

  const server = http.createServer(async (req, res) => {
    const raw = await readBody(req);
    let body: any;
    try {
      body = raw ? JSON.parse(raw) : undefined;
    } catch {
      body = undefined;
    }
    let aborted = false;
    const closed = new Promise<void>((resolve) =>
      res.on('close', () => {
        if (!res.writableFinished) aborted = true;
        resolve();
      }),
    );
    const rec: RecordedRequest = {
      method: req.method ?? '',
      path: req.url ?? '',
      headers: req.headers,
      body,
      at: Date.now(),
      get aborted() {
        return aborted;
      },
      closed,
      get connectionOpen() {
        return !req.socket.destroyed;
      },
    };
    requests.push(rec);
    res.setHeader('request-id', nextId('req'));

    const endpoint =
      req.method === 'POST' && rec.path === '/v1/messages'
        ? 'messages'
        : req.method === 'POST' && rec.path === '/v1/messages/count_tokens'
          ? 'count_tokens'
          : undefined;
    if (!endpoint) return sendError(res, 404, 'not_found_error', 'Not Found');
    // Anthropic's order: the key first, then the version header, then the body
    const key = req.headers['x-api-key'];
    if (!key) return sendError(res, 401, 'authentication_error', 'x-api-key header is required');
    if (key !== apiKey) return sendError(res, 401, 'authentication_error', 'invalid x-api-key');
    if (!req.headers['anthropic-version'])
      return sendError(res, 400, 'invalid_request_error', 'anthropic-version: header is required');
    if (body === undefined || typeof body !== 'object') {
      return sendError(
        res,
        400,
        'invalid_request_error',
        'There was an error parsing the body of your request. Please make sure it is valid JSON.',
      );
    }
    const problem = endpoint === 'messages' ? anthropicBodyProblem(body) : countTokensBodyProblem(body);
    if (problem) return sendError(res, 400, 'invalid_request_error', problem);

    const script = takeScript(endpoint);
    if (script.hang === true) return; // the response stays open until the client goes away
    if (script.delayMs) await sleep(script.delayMs);
    if (res.destroyed) return;
    if (script.error) {
      const type = script.error.type ?? ERROR_TYPES[script.error.status] ?? 'api_error';
      if (script.error.retryAfter !== undefined) res.setHeader('retry-after', String(script.error.retryAfter));
      return sendError(
        res,
        script.error.status,
        type,
        script.error.message ?? ERROR_MESSAGES[type] ?? `${type} (scripted)`,
      );
    }
    if (endpoint === 'count_tokens')
      return sendJson(res, 200, { input_tokens: script.inputTokens ?? estimateInput(body) });

    const message = buildMessage(body, script, nextId, cacheUsage(body));
    if (!body.stream) return sendJson(res, 200, message);
    await streamMessage(res, message, script, bodyWriter(res, split));
  });

  const { port } = await listenOnLoopback(server);
  return {
    url: `http://127.0.0.1:${port}`,
    apiKey,
    requests,
    script: (...replies) => {
      queue.push(...replies);
    },
    always: (reply) => {
      fallback = reply;
    },
    splitWrites: (mode) => {
      split = mode;
    },
    promptCache: (on) => {
      cache = on ? new Map() : undefined;
    },
    last: () => {
      const r = requests[requests.length - 1];
      if (!r) throw new Error('the Anthropic loopback has received no request');
      return r;
    },
    close: () => closeServer(server),
  };
}

interface CacheUsage {
  input_tokens: number;
  cache_read_input_tokens: number;
  cache_creation_input_tokens: number;
  cache_creation: { ephemeral_5m_input_tokens: number; ephemeral_1h_input_tokens: number };
}

interface WireMessage {
  id: string;
  type: 'message';
  role: 'assistant';
  model: string;
  content: Array<Record<string, any>>;
  stop_reason: string;
  stop_sequence: string | null;
  usage?: {
    input_tokens: number;
    output_tokens: number;
    cache_creation_input_tokens: number;
    cache_read_input_tokens: number;
    cache_creation?: CacheUsage['cache_creation'];
    output_tokens_details?: { thinking_tokens: number };
    server_tool_use?: { web_search_requests: number };
  };
}

/** The reply a real model would give in shape: thinking, text, tool calls, stop reason, usage. */
function buildMessage(
  body: any,
  script: AnthropicReply,
  nextId: (p: string) => string,
  cached?: CacheUsage,
): WireMessage {
  const content: WireMessage['content'] = [];
  const reasoning =
    script.reasoning ?? (body.thinking?.type === 'enabled' ? `Thinking about "${lastUserText(body)}".` : undefined);
  if (reasoning) content.push({ type: 'thinking', thinking: reasoning, signature: signatureOf(reasoning) });
  const calls = script.toolCalls ?? forcedToolCall(body);
  let text = script.text ?? (calls.length ? '' : `Echo: ${lastUserText(body)}`);
  // the output cap: a text answer longer than max_tokens (~4 characters a token) is cut there
  const room = body.max_tokens * 4 - (reasoning ?? '').length;
  // stop_sequences: the text ends before the first one it contains, which the answer names
  let stopSequence: string | null = null;
  for (const seq of Array.isArray(body.stop_sequences) ? body.stop_sequences : []) {
    const at = typeof seq === 'string' && seq ? text.indexOf(seq) : -1;
    if (at !== -1 && (stopSequence === null || at < text.indexOf(stopSequence))) stopSequence = seq;
  }
  if (stopSequence !== null) text = text.slice(0, text.indexOf(stopSequence));
  const capped = calls.length === 0 && text.length > room;
  if (capped) text = text.slice(0, Math.max(0, room));
  if (capped) stopSequence = null;
  // Anthropic's web search server tool: a server_tool_use and its web_search_tool_result per search
  // (at most max_uses), then the text citing the first result, and the count in the usage
  const searchTool = (body.tools ?? []).find((t: any) => t.type === 'web_search_20250305');
  const found = script.webSearch?.results ?? [{ url: 'https://news.example.com/a', title: 'Example news' }];
  const searches = searchTool ? Math.min(script.webSearch?.searches ?? 1, searchTool.max_uses ?? Infinity) : 0;
  for (let i = 0; i < searches; i++) {
    const id = nextId('srvtoolu');
    content.push({ type: 'server_tool_use', id, name: 'web_search', input: { query: lastUserText(body) } });
    content.push({
      type: 'web_search_tool_result',
      tool_use_id: id,
      content: found.map((r) => ({
        type: 'web_search_result',
        ...r,
        encrypted_content: 'RW5jcnlwdGVk',
        page_age: null,
      })),
    });
  }
  const citations =
    searches > 0 && found[0]
      ? [{ type: 'web_search_result_location', ...found[0], cited_text: text.slice(0, 40), encrypted_index: 'RW5j' }]
      : undefined;
  if (text) content.push({ type: 'text', text, ...(citations ? { citations } : {}) });
  for (const c of calls) content.push({ type: 'tool_use', id: c.id ?? nextId('toolu'), name: c.name, input: c.input });
  const out = (reasoning ?? '') + text + calls.map((c) => JSON.stringify(c.input)).join('');
  return {
    id: nextId('msg'),
    type: 'message',
    role: 'assistant',
    model: body.model,
    content,
    stop_reason:
      script.stopReason ??
      (capped ? 'max_tokens' : calls.length ? 'tool_use' : stopSequence !== null ? 'stop_sequence' : 'end_turn'),
    stop_sequence: stopSequence,
    ...(script.usage === null
      ? {}
      : {
          usage: {
            input_tokens: estimateInput(body),
            output_tokens: Math.max(1, Math.ceil(out.length / 4)),
            cache_creation_input_tokens: 0,
            cache_read_input_tokens: 0,
            ...cached,
            ...(searchTool ? { server_tool_use: { web_search_requests: searches } } : {}),
            ...script.usage,
          },
        }),
  };
}

/** As the API streams it: message_start, per block start/deltas/stop (a ping after the first start), message_delta, message_stop. */
function streamFrames(m: WireMessage): string[] {
  const frames: Array<[string, unknown]> = [];
  // the search count is final only at the end: message_delta carries it, as the API does
  const { output_tokens, server_tool_use, ...inputSide } = m.usage ?? {};
  const startUsage = m.usage ? { usage: { ...inputSide, output_tokens: Math.min(1, output_tokens ?? 0) } } : {};
  frames.push([
    'message_start',
    { type: 'message_start', message: { ...m, content: [], stop_reason: null, ...startUsage } },
  ]);
  m.content.forEach((block, index) => {
    const delta = (d: unknown) =>
      frames.push(['content_block_delta', { type: 'content_block_delta', index, delta: d }]);
    if (block.type === 'web_search_tool_result') {
      // sent whole in its start event, as the API does
      frames.push(['content_block_start', { type: 'content_block_start', index, content_block: block }]);
      frames.push(['content_block_stop', { type: 'content_block_stop', index }]);
      return;
    }
    const opened =
      block.type === 'text'
        ? { type: 'text', text: '' }
        : block.type === 'thinking'
          ? { type: 'thinking', thinking: '', signature: '' }
          : { ...block, input: {} };
    frames.push(['content_block_start', { type: 'content_block_start', index, content_block: opened }]);
    if (index === 0) frames.push(['ping', { type: 'ping' }]); // as the real API does, right after the first block opens
    if (block.type === 'text') {
      for (const piece of words(block.text)) delta({ type: 'text_delta', text: piece });
      for (const citation of block.citations ?? []) delta({ type: 'citations_delta', citation });
    } else if (block.type === 'thinking') {
      for (const piece of words(block.thinking)) delta({ type: 'thinking_delta', thinking: piece });
      delta({ type: 'signature_delta', signature: block.signature });
    } else {
      const json = JSON.stringify(block.input);
      for (let i = 0; i < json.length; i += 7) delta({ type: 'input_json_delta', partial_json: json.slice(i, i + 7) });
    }
    frames.push(['content_block_stop', { type: 'content_block_stop', index }]);
  });
  frames.push([
    'message_delta',
    {
      type: 'message_delta',
      delta: { stop_reason: m.stop_reason, stop_sequence: m.stop_sequence },
      ...(m.usage ? { usage: { output_tokens, ...(server_tool_use ? { server_tool_use } : {}) } } : {}),
    },
  ]);
  frames.push(['message_stop', { type: 'message_stop' }]);
  return frames.map(([event, data]) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
}

async function streamMessage(
  res: http.ServerResponse,
  m: WireMessage,
  script: AnthropicReply,
  out: BodyWriter,
): Promise<void> {
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
  res.flushHeaders();
  const frames = streamFrames(m);
  const stopAt = Math.min(
    script.streamError?.afterEvents ?? Infinity,
    script.cut?.afterEvents ?? Infinity,
    typeof script.hang === 'object' ? script.hang.afterEvents : Infinity,
  );
  for (let i = 0; i < frames.length && i < stopAt; i++) {
    if (res.destroyed) return;
    await out.write(frames[i]);
    await sleep(1); // separate writes, as a real stream arrives
  }
  if (stopAt === Infinity || res.destroyed) return void (await out.end());
  if (script.streamError && script.streamError.afterEvents === stopAt) {
    const type = script.streamError.type ?? 'overloaded_error';
    await out.write(
      `event: error\ndata: ${JSON.stringify({ type: 'error', error: { type, message: script.streamError.message ?? ERROR_MESSAGES[type] ?? type } })}\n\n`,
    );
    return void res.end();
  }
  if (script.cut && script.cut.afterEvents === stopAt) {
    if (script.cut.mode === 'destroy') return void res.socket?.destroy();
    return void res.end();
  }
  // hang: keep the stream open until the client goes away
}

/** What a forced tool_choice makes the model do, with an input that fits the tool's schema. */
function forcedToolCall(body: any): Array<{ id?: string; name: string; input: unknown }> {
  const choice = body.tool_choice;
  const tools: any[] = body.tools ?? [];
  const tool =
    choice?.type === 'tool' ? tools.find((t) => t.name === choice.name) : choice?.type === 'any' ? tools[0] : undefined;
  return tool ? [{ name: tool.name, input: exampleOf(tool.input_schema) }] : [];
}

/** A deterministic value matching a JSON schema (first enum value, zero, "example", ...). */
function exampleOf(schema: any): unknown {
  if (!schema || typeof schema !== 'object') return null;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  if ('const' in schema) return schema.const;
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  if (type === 'object' || schema.properties) {
    return Object.fromEntries(Object.entries(schema.properties ?? {}).map(([k, v]) => [k, exampleOf(v)]));
  }
  if (type === 'array') return [exampleOf(schema.items)];
  if (type === 'string') return 'example';
  if (type === 'integer' || type === 'number') return 0;
  if (type === 'boolean') return false;
  return null;
}

// ---- request checks: Anthropic's 400s that a translation bug would trigger ----

const DOCS = 'Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking';

/** What Anthropic would reject in a /v1/messages body, as its error message; undefined if fine. */
function anthropicBodyProblem(body: any): string | undefined {
  if (typeof body.model !== 'string' || !body.model) return 'model: Field required';
  if (typeof body.max_tokens !== 'number') return 'max_tokens: Field required';
  if (body.max_tokens < 1) return 'max_tokens: Input should be greater than or equal to 1';
  const problem = messagesProblem(body);
  if (problem) return problem;
  if (body.temperature !== undefined && (body.temperature < 0 || body.temperature > 1))
    return 'temperature: Input should be less than or equal to 1';
  const thinking = body.thinking;
  if (thinking?.type === 'enabled') {
    if (!(thinking.budget_tokens >= 1024))
      return 'thinking.enabled.budget_tokens: Input should be greater than or equal to 1024';
    if (body.max_tokens <= thinking.budget_tokens)
      return `\`max_tokens\` must be greater than \`thinking.budget_tokens\`. ${DOCS}#max-tokens-and-context-window-size`;
    if (body.temperature !== undefined && body.temperature !== 1)
      return `\`temperature\` may only be set to 1 when thinking is enabled. ${DOCS}#feature-compatibility`;
    if (body.top_k !== undefined)
      return `\`top_k\` must be unset when thinking is enabled. ${DOCS}#feature-compatibility`;
    if (body.top_p !== undefined && body.top_p < 0.95)
      return `\`top_p\` must be greater than or equal to 0.95 or unset when thinking is enabled. ${DOCS}#feature-compatibility`;
    if (body.tool_choice?.type === 'tool' || body.tool_choice?.type === 'any')
      return 'Thinking may not be enabled when tool_choice forces tool use.';
    // in a tool loop, the assistant turn being answered must start with its thinking block
    const msgs: any[] = body.messages;
    const last = msgs[msgs.length - 1];
    const asked = msgs[msgs.length - 2];
    const answersTools =
      last?.role === 'user' && Array.isArray(last.content) && last.content.some((b: any) => b.type === 'tool_result');
    const opener = asked?.role === 'assistant' && Array.isArray(asked.content) ? asked.content[0]?.type : undefined;
    if (answersTools && opener !== 'thinking' && opener !== 'redacted_thinking') {
      return `messages.${msgs.length - 2}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${opener ?? 'text'}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block (preceeding the lastmost set of \`tool_use\` and \`tool_result\` blocks). ${DOCS}`;
    }
  }
  return toolsProblem(body);
}

/** count_tokens takes only the prompt-shaping fields. */
function countTokensBodyProblem(body: any): string | undefined {
  const allowed = new Set([
    'model',
    'messages',
    'system',
    'tools',
    'tool_choice',
    'thinking',
    'mcp_servers',
    'context_management',
    'output_config',
  ]);
  const extra = Object.keys(body).find((k) => !allowed.has(k));
  if (extra) return `${extra}: Extra inputs are not permitted`;
  if (typeof body.model !== 'string' || !body.model) return 'model: Field required';
  return messagesProblem(body) ?? toolsProblem(body);
}

function messagesProblem(body: any): string | undefined {
  const msgs = body.messages;
  if (!Array.isArray(msgs)) return 'messages: Field required';
  if (msgs.length === 0) return 'messages: at least one message is required';
  if (body.system !== undefined && typeof body.system !== 'string' && !Array.isArray(body.system))
    return 'system: Input should be a valid string';
  for (let i = 0; i < msgs.length; i++) {
    const m = msgs[i];
    if (m.role !== 'user' && m.role !== 'assistant') return `messages.${i}.role: Input should be 'user' or 'assistant'`;
    if (i > 0 && msgs[i - 1].role === m.role) {
      return `messages: roles must alternate between "user" and "assistant", but found multiple "${m.role}" roles in a row`;
    }
    const blocks = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content;
    if (!Array.isArray(blocks)) return `messages.${i}.content: Input should be a valid list`;
    const finalAssistant = i === msgs.length - 1 && m.role === 'assistant';
    if (blocks.length === 0 && !finalAssistant)
      return `messages.${i}: all messages must have non-empty content except for the optional final assistant message`;
    for (let j = 0; j < blocks.length; j++) {
      const b = blocks[j];
      if (b.type === 'text' && !b.text) return 'messages: text content blocks must be non-empty';
      if (b.type === 'text' && finalAssistant && j === blocks.length - 1 && /\s$/.test(b.text))
        return 'messages: final assistant content cannot end with trailing whitespace';
      if (b.type === 'tool_use' && m.role !== 'assistant')
        return `messages.${i}.content.${j}: tool_use blocks can only be in assistant messages`;
      // thinking blocks sent back must carry the signature this server gave them
      if (b.type === 'thinking' && b.signature !== signatureOf(String(b.thinking)))
        return `messages.${i}.content.${j}: Invalid \`signature\` in \`thinking\` block`;
      if (b.type === 'tool_use' && (b.input === null || typeof b.input !== 'object' || Array.isArray(b.input)))
        return `messages.${i}.content.${j}.tool_use.input: Input should be a valid dictionary`;
      if (b.type === 'tool_result') {
        const prev = i > 0 ? msgs[i - 1] : undefined;
        const ids = new Set(
          (Array.isArray(prev?.content) ? prev.content : [])
            .filter((x: any) => x.type === 'tool_use')
            .map((x: any) => x.id),
        );
        if (!ids.has(b.tool_use_id)) {
          return `messages.${i}.content.${j}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${b.tool_use_id}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`;
        }
      }
      if (
        (b.type === 'image' || b.type === 'document') &&
        !['base64', 'url', 'text', 'file', 'content'].includes(b.source?.type)
      ) {
        return `messages.${i}.content.${j}.${b.type}.source: Input tag '${b.source?.type}' found using 'type' does not match any of the expected tags`;
      }
    }
  }
  return undefined;
}

function toolsProblem(body: any): string | undefined {
  const tools: any[] = body.tools ?? [];
  for (let i = 0; i < tools.length; i++) {
    if (tools[i].type === 'web_search_20250305') {
      if (tools[i].name !== 'web_search') return `tools.${i}.web_search_20250305.name: Input should be 'web_search'`;
      if (tools[i].max_uses !== undefined && !(Number.isInteger(tools[i].max_uses) && tools[i].max_uses > 0))
        return `tools.${i}.web_search_20250305.max_uses: Input should be greater than 0`;
      continue;
    }
    if (!/^[a-zA-Z0-9_-]{1,128}$/.test(tools[i].name ?? ''))
      return `tools.${i}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'`;
    if (tools[i].input_schema?.type !== 'object')
      return `tools.${i}.custom.input_schema.type: Input should be 'object'`;
  }
  const choice = body.tool_choice;
  if (choice?.type === 'tool' && !tools.some((t) => t.name === choice.name))
    return `Tool '${choice.name}' not found in provided tools`;
  if (choice && tools.length === 0 && choice.type !== 'none')
    return 'tool_choice may only be specified while providing tools.';
  return undefined;
}

/** The loopback's signature of a thinking text (Anthropic's is opaque and verified the same way). */
const signatureOf = (thinking: string) => Buffer.from(`sig:${thinking}`).toString('base64');

function lastUserText(body: any): string {
  const msgs: any[] = body.messages ?? [];
  const last = [...msgs].reverse().find((m) => m.role === 'user');
  if (!last) return '';
  if (typeof last.content === 'string') return last.content;
  return last.content
    .map((b: any) =>
      b.type === 'text' ? b.text : b.type === 'tool_result' ? (typeof b.content === 'string' ? b.content : '') : '',
    )
    .filter(Boolean)
    .join(' ');
}

function estimateInput(body: any): number {
  return Math.max(1, Math.ceil(JSON.stringify([body.system ?? '', body.messages ?? [], body.tools ?? []]).length / 4));
}

function words(text: string): string[] {
  return text.match(/\S+\s*|\s+/g) ?? [];
}

function sendJson(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

function sendError(res: http.ServerResponse, status: number, type: string, message: string): void {
  sendJson(res, status, { type: 'error', error: { type, message }, request_id: res.getHeader('request-id') ?? null });
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', () => resolve(''));
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
