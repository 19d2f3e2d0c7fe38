// A loopback Gemini API for tests: `POST /v1beta/models/{model}:generateContent` and
// `:streamGenerateContent` (`?alt=sse` frames, or the JSON array without it), speaking the real wire
// format. It checks what the real API checks (the key in `x-goog-api-key` or `?key=`, unknown
// fields, roles, the function call/response turn order and counts, one data field per part) and
// answers with Google's error envelope; it records every request; and each reply can be scripted.
//
//   const up = await startGeminiUpstream();          // key: up.apiKey
//   up.script({ text: 'hi' }, { toolCalls: [{ name: 'f', args: { a: 1 } }] });   // next two replies
//   up.script({ error: { status: 429 } });            // Google's 429 RESOURCE_EXHAUSTED body
//   up.script({ cutAfter: 1 }, { hang: true });       // a stream cut after one frame; never answering
//   ... up.requests[0].body.contents ...
//   await up.close();
//
// Unscripted replies are derived from the request: "Echo: <last user text>", a summary of the
// function responses when the last turn holds them, a JSON object when JSON output was asked for,
// a call of the first allowed function under mode ANY, a thought summary when thoughts are asked
// for, and MAX_TOKENS truncation at maxOutputTokens (one word = one token). `stopSequences` cut
// the text where the first one starts, leaving it out, with a plain STOP, as the real API does.
// Every stream frame carries the running usage totals; the last one the whole count.
import http from 'node:http';
import { bodyWriter, defaultSplit, type SplitWrites } from './split.js';
import type {
  GeminiContent,
  GeminiErrorBody,
  GeminiPart,
  GeminiRequest,
  GeminiResponse,
  GeminiUsageMetadata,
} from '../../../activities/providers/gemini/wire.js';
import { listenOnLoopback, closeServer } from './loopback.js';

interface GeminiReplyScript {
  /** the reply's text (default: derived from the request) */
  text?: string;
  /** thought summary; sent only when the request asks `includeThoughts`, always counted as thoughtsTokenCount */
  reasoning?: string;
  toolCalls?: Array<{ name: string; args?: Record<string, unknown>; id?: string }>;
  /** default STOP (MAX_TOKENS when the text was cut at maxOutputTokens) */
  finishReason?: string;
  /** block the prompt: no candidates, `promptFeedback.blockReason` */
  blockReason?: string;
  /** fields replace the computed counts; null sends no usageMetadata */
  usage?: Partial<GeminiUsageMetadata> | null;
  /** stream: false = frames before the last report the prompt count only (default: running totals) */
  runningUsage?: boolean;
  modelVersion?: string;
  /** stream: how many frames the text is split into (default up to 3) */
  chunks?: number;
  /** stream: the text's frames exactly (they join to the text; a stop sequence still cuts it) */
  textChunks?: string[];
  /** wait this long before answering at all */
  delayMs?: number;
  /** answer with this HTTP status and Google's error body (or, with `errorAfter`, as a stream frame) */
  error?: { status: number; message?: string; googleStatus?: string };
  /** stream: send this many frames, then `error` as a `data:` frame */
  errorAfter?: number;
  /** stream: send this many frames, then stop without the final frame */
  cutAfter?: number;
  /** how a cut stream stops: 'end' finishes the HTTP body cleanly, 'destroy' (default) drops the connection */
  cutMode?: 'end' | 'destroy';
  /** never answer (until the client goes away) */
  hang?: boolean;
  /** stream: send this many frames, then hang */
  hangAfter?: number;
}

interface RecordedGeminiRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  /** e.g. 'gemini-2.0-flash' */
  model: string;
  /** 'generateContent' | 'streamGenerateContent' */
  action: string;
  headers: http.IncomingHttpHeaders;
  body: GeminiRequest;
  /** the client went away before the answer was complete */
  clientClosed: boolean;
}

export interface GeminiUpstream {
  url: string;
  apiKey: string;
  requests: RecordedGeminiRequest[];
  lastRequest(): RecordedGeminiRequest | undefined;
  /** queue replies, used in order by the next requests */
  script(...replies: GeminiReplyScript[]): void;
  /** scripted replies not used yet */
  pending(): number;
  /** from now on, write streams split at arbitrary byte boundaries (undefined: whole frames) */
  splitWrites(mode: SplitWrites | undefined): void;
  reset(): void;
  close(): Promise<void>;
}

const GOOGLE_STATUS: Record<number, [string, string]> = {
  400: ['INVALID_ARGUMENT', 'Request contains an invalid argument.'],
  401: ['UNAUTHENTICATED', 'Request had invalid authentication credentials.'],
  403: ['PERMISSION_DENIED', 'The caller does not have permission'],
  404: ['NOT_FOUND', 'Requested entity was not found.'],
  429: ['RESOURCE_EXHAUSTED', 'Resource has been exhausted (e.g. check quota).'],
  500: [
    'INTERNAL',
    'An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting',
  ],
  503: ['UNAVAILABLE', 'The model is overloaded. Please try again later.'],
  504: ['DEADLINE_EXCEEDED', 'Deadline expired before operation could complete.'],
};

function googleError(
  code: number,
  message?: string,
  status?: string,
  details?: Array<Record<string, unknown>>,
): GeminiErrorBody {
  const [defStatus, defMessage] = GOOGLE_STATUS[code] ?? ['UNKNOWN', 'Unknown error.'];
  return {
    error: { code, message: message ?? defMessage, status: status ?? defStatus, ...(details ? { details } : {}) },
  };
}

class BadRequest extends Error {}

// Field names the real API knows, per message type (proto JSON also takes snake_case).
const KNOWN: Record<string, string[]> = {
  request: [
    'contents',
    'systemInstruction',
    'tools',
    'toolConfig',
    'generationConfig',
    'safetySettings',
    'cachedContent',
    'labels',
  ],
  content: ['role', 'parts'],
  part: [
    'text',
    'thought',
    'thoughtSignature',
    'inlineData',
    'fileData',
    'functionCall',
    'functionResponse',
    'executableCode',
    'codeExecutionResult',
    'videoMetadata',
    'partMetadata',
  ],
  inlineData: ['mimeType', 'data'],
  fileData: ['mimeType', 'fileUri'],
  functionCall: ['id', 'name', 'args'],
  functionResponse: ['id', 'name', 'response', 'willContinue', 'scheduling', 'parts'],
  tool: ['functionDeclarations', 'googleSearch', 'googleSearchRetrieval', 'codeExecution', 'urlContext'],
  functionDeclaration: [
    'name',
    'description',
    'parameters',
    'parametersJsonSchema',
    'response',
    'responseJsonSchema',
    'behavior',
  ],
  toolConfig: ['functionCallingConfig'],
  functionCallingConfig: ['mode', 'allowedFunctionNames'],
  generationConfig: [
    'stopSequences',
    'responseMimeType',
    'responseSchema',
    'responseJsonSchema',
    'responseModalities',
    'candidateCount',
    'maxOutputTokens',
    'temperature',
    'topP',
    'topK',
    'seed',
    'presencePenalty',
    'frequencyPenalty',
    'responseLogprobs',
    'logprobs',
    'enableEnhancedCivicAnswers',
    'speechConfig',
    'thinkingConfig',
    'mediaResolution',
  ],
  thinkingConfig: ['thinkingBudget', 'includeThoughts', 'thinkingLevel'],
};

// Which fields hold further messages (and of which type); the rest are values (args, schemas...).
const CHILDREN: Record<string, Record<string, string>> = {
  request: {
    contents: 'content',
    systemInstruction: 'content',
    tools: 'tool',
    toolConfig: 'toolConfig',
    generationConfig: 'generationConfig',
  },
  content: { parts: 'part' },
  part: {
    inlineData: 'inlineData',
    fileData: 'fileData',
    functionCall: 'functionCall',
    functionResponse: 'functionResponse',
  },
  tool: { functionDeclarations: 'functionDeclaration' },
  toolConfig: { functionCallingConfig: 'functionCallingConfig' },
  generationConfig: { thinkingConfig: 'thinkingConfig' },
};

const snake = (s: string) => s.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
const camel = (s: string) => s.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());

/**
 * Proto JSON takes `generation_config` as well as `generationConfig`: check every message's
 * field names (the API's "Unknown name" error) and give back the camelCase form the rest reads.
 */
function normalize(obj: unknown, type: string, at: string): any {
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) {
    throw new BadRequest(`Invalid JSON payload received. Expected an object at '${at}'.`);
  }
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(obj)) {
    const name = camel(key);
    if (!KNOWN[type].includes(name)) {
      throw new BadRequest(
        `Invalid JSON payload received. Unknown name "${key}"${at ? ` at '${at}'` : ''}: Cannot find field.`,
      );
    }
    const child = CHILDREN[type]?.[name];
    const path = `${at ? `${at}.` : ''}${snake(name)}`;
    if (!child) out[name] = value;
    else if (Array.isArray(value)) out[name] = value.map((v, i) => normalize(v, child, `${path}[${i}]`));
    else out[name] = normalize(value, child, path);
  }
  return out;
}

const DATA_FIELDS = [
  'text',
  'inlineData',
  'fileData',
  'functionCall',
  'functionResponse',
  'executableCode',
  'codeExecutionResult',
] as const;

/** The checks the real API makes before generating, with its own messages. */
function validate(body: GeminiRequest): void {
  if (!Array.isArray(body.contents) || body.contents.length === 0)
    throw new BadRequest('* GenerateContentRequest.contents: contents is not specified\n');
  const checkContent = (c: GeminiContent, at: string, system = false) => {
    if (!system && c.role !== undefined && c.role !== 'user' && c.role !== 'model')
      throw new BadRequest('Please use a valid role: user, model.');
    if (!Array.isArray(c.parts) || c.parts.length === 0)
      throw new BadRequest(`* GenerateContentRequest.${at}.parts: contents.parts must not be empty.\n`);
    c.parts.forEach((p, j) => {
      const pat = `${at}.parts[${j}]`;
      const set = DATA_FIELDS.filter((f) => (p as Record<string, unknown>)[f] !== undefined);
      if (set.length !== 1)
        throw new BadRequest(
          `* GenerateContentRequest.${pat}.data: required oneof field 'data' must have one initialized field\n`,
        );
      if (p.inlineData) {
        if (!p.inlineData.mimeType)
          throw new BadRequest(`* GenerateContentRequest.${pat}.inline_data.mime_type: mime_type is not specified\n`);
        if (!/^[A-Za-z0-9+/]*={0,2}$/.test(p.inlineData.data ?? ''))
          throw new BadRequest(
            `Invalid value at '${snake(pat)}.inline_data.data' (TYPE_BYTES), Base64 decoding failed`,
          );
      }
      if (p.functionCall) {
        if (!p.functionCall.name)
          throw new BadRequest(`* GenerateContentRequest.${pat}.function_call.name: Name cannot be empty.\n`);
      }
      if (p.functionResponse) {
        if (!p.functionResponse.name)
          throw new BadRequest(`* GenerateContentRequest.${pat}.function_response.name: Name cannot be empty.\n`);
        const r = p.functionResponse.response;
        if (r === null || typeof r !== 'object' || Array.isArray(r))
          throw new BadRequest(
            `Invalid value at '${snake(pat)}.function_response.response' (type.googleapis.com/google.protobuf.Struct), expected an object`,
          );
      }
    });
  };
  for (const [i, c] of body.contents.entries()) checkContent(c, `contents[${i}]`);
  if (body.systemInstruction) checkContent(body.systemInstruction as GeminiContent, 'system_instruction', true);

  // Function calling turn order, as the API enforces it.
  body.contents.forEach((c, i) => {
    const calls = c.parts.filter((p) => p.functionCall).length;
    const responses = c.parts.filter((p) => p.functionResponse).length;
    const prev = body.contents[i - 1];
    if (calls > 0) {
      const ok = i === 0 || prev.role !== 'model';
      if (!ok)
        throw new BadRequest(
          'Please ensure that function call turn comes immediately after a user turn or after a function response turn.',
        );
    }
    if (responses > 0) {
      const prevCalls = prev?.role === 'model' ? prev.parts.filter((p) => p.functionCall).length : 0;
      if (prevCalls === 0)
        throw new BadRequest('Please ensure that function response turn comes immediately after a function call turn.');
      if (prevCalls !== responses)
        throw new BadRequest(
          'Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.',
        );
    }
  });

  body.tools?.forEach((t, i) => {
    t.functionDeclarations?.forEach((d, j) => {
      const at = `tools[${i}].function_declarations[${j}]`;
      if (!d.name) throw new BadRequest(`* GenerateContentRequest.${at}.name: Name cannot be empty.\n`);
      if (d.parameters && d.parametersJsonSchema)
        throw new BadRequest(
          `* GenerateContentRequest.${at}: parameters and parameters_json_schema are mutually exclusive.\n`,
        );
    });
  });
  if (body.toolConfig) {
    const f = body.toolConfig.functionCallingConfig;
    if (f) {
      if (!['AUTO', 'ANY', 'NONE', 'VALIDATED', 'MODE_UNSPECIFIED'].includes(f.mode)) {
        throw new BadRequest(
          `Invalid value at 'tool_config.function_calling_config.mode' (type.googleapis.com/google.ai.generativelanguage.v1beta.FunctionCallingConfig.Mode), "${f.mode}"`,
        );
      }
      if (f.allowedFunctionNames?.length && f.mode !== 'ANY' && f.mode !== 'VALIDATED') {
        throw new BadRequest(
          '* GenerateContentRequest.tool_config.function_calling_config.allowed_function_names: allowed_function_names should only be set when the Function calling mode is ANY.\n',
        );
      }
    }
  }
  const g = body.generationConfig;
  if (g) {
    if (g.responseSchema && g.responseJsonSchema)
      throw new BadRequest(
        '* GenerateContentRequest.generation_config: response_schema and response_json_schema cannot both be set.\n',
      );
    if (
      (g.responseSchema || g.responseJsonSchema) &&
      g.responseMimeType !== 'application/json' &&
      g.responseMimeType !== 'text/x.enum'
    ) {
      throw new BadRequest(
        '* GenerateContentRequest.generation_config.response_mime_type: must be application/json or text/x.enum when a response schema is set.\n',
      );
    }
    const budget = g.thinkingConfig?.thinkingBudget;
    if (budget !== undefined && (!Number.isInteger(budget) || budget < -1 || budget > 32768)) {
      throw new BadRequest(`The thinking budget ${budget} is invalid. Please choose a value between -1 and 32768.`);
    }
  }
}

const words = (s: string) => s.split(/\s+/).filter(Boolean);

function lastUserText(body: GeminiRequest): string {
  for (let i = body.contents.length - 1; i >= 0; i--) {
    const c = body.contents[i];
    if (c.role === 'model') continue;
    const text = c.parts
      .flatMap((p) => (typeof p.text === 'string' ? [p.text] : []))
      .join(' ')
      .trim();
    if (text) return text;
  }
  return '';
}

function promptTokens(body: GeminiRequest): number {
  const text = JSON.stringify([body.systemInstruction ?? null, body.contents, body.tools ?? null]);
  return Math.max(1, Math.ceil(text.length / 4));
}

/** The reply as parts, before framing, with its finish reason and usage. */
function plan(body: GeminiRequest, s: GeminiReplyScript) {
  const g = body.generationConfig ?? {};
  const last = body.contents[body.contents.length - 1];
  const responses = last?.role !== 'model' ? last.parts.filter((p) => p.functionResponse) : [];
  const mode = body.toolConfig?.functionCallingConfig?.mode;
  const declared = body.tools?.flatMap((t) => t.functionDeclarations ?? []) ?? [];

  let toolCalls = s.toolCalls;
  if (!toolCalls && mode === 'ANY' && declared.length) {
    const name = body.toolConfig?.functionCallingConfig.allowedFunctionNames?.[0] ?? declared[0].name;
    toolCalls = [{ name, args: {} }];
  }
  let text = s.text;
  if (text === undefined && !toolCalls?.length) {
    const said = lastUserText(body);
    if (responses.length)
      text = responses
        .map((p) => `${p.functionResponse!.name} returned ${JSON.stringify(p.functionResponse!.response)}`)
        .join('; ');
    else if (g.responseMimeType === 'application/json') text = JSON.stringify({ echo: said });
    else text = said ? `Echo: ${said}` : 'Hello from Gemini.';
  }
  const thinkingOff = g.thinkingConfig?.thinkingBudget === 0;
  let reasoning = s.reasoning;
  if (reasoning === undefined && g.thinkingConfig?.includeThoughts && !thinkingOff)
    reasoning = `Thinking about: ${lastUserText(body) || 'the request'}`;
  if (thinkingOff) reasoning = undefined;

  let finishReason = s.finishReason ?? 'STOP';
  // Gemini stops where a stop sequence starts, leaves it out of the text and says just STOP.
  let stoppedAt: number | undefined;
  for (const stop of g.stopSequences ?? []) {
    const at = text?.indexOf(stop) ?? -1;
    if (at >= 0 && (stoppedAt === undefined || at < stoppedAt)) stoppedAt = at;
  }
  if (text !== undefined && stoppedAt !== undefined) text = text.slice(0, stoppedAt);
  if (
    text !== undefined &&
    g.maxOutputTokens !== undefined &&
    words(text).length > g.maxOutputTokens &&
    !s.finishReason
  ) {
    text = words(text).slice(0, g.maxOutputTokens).join(' ');
    finishReason = 'MAX_TOKENS';
  }
  const prompt = promptTokens(body);
  const thoughts = reasoning ? words(reasoning).length : 0;
  const candidates = (text ? words(text).length : 0) + (toolCalls?.length ?? 0) * 5;
  const usage: GeminiUsageMetadata = {
    promptTokenCount: prompt,
    candidatesTokenCount: candidates,
    ...(thoughts ? { thoughtsTokenCount: thoughts } : {}),
    totalTokenCount: prompt + candidates + thoughts,
    ...(s.usage ?? {}),
  };
  const thoughtParts: GeminiPart[] =
    reasoning && g.thinkingConfig?.includeThoughts ? [{ text: reasoning, thought: true }] : [];
  const textParts: GeminiPart[] = text ? [{ text }] : [];
  const callParts: GeminiPart[] = (toolCalls ?? []).map((c) => ({
    functionCall: { ...(c.id ? { id: c.id } : {}), name: c.name, args: c.args ?? {} },
  }));
  return {
    thoughtParts,
    textParts,
    callParts,
    finishReason,
    usage: s.usage === null ? undefined : usage,
  };
}

function splitText(text: string, n: number): string[] {
  const w = text.split(/(?<=\s)/);
  const size = Math.max(1, Math.ceil(w.length / n));
  const out: string[] = [];
  for (let i = 0; i < w.length; i += size) out.push(w.slice(i, i + size).join(''));
  return out;
}

/** Scripted frames, cut where the text was cut (at a stop sequence or the output cap). */
function scriptedChunks(chunks: string[], text: string): string[] {
  const out: string[] = [];
  let left = text.length;
  for (const c of chunks) {
    if (left <= 0) break;
    out.push(c.slice(0, left));
    left -= c.length;
  }
  return out;
}

export async function startGeminiUpstream(
  opts: { apiKey?: string; models?: string[]; split?: SplitWrites } = {},
): Promise<GeminiUpstream> {
  const apiKey = opts.apiKey ?? 'test-gemini-key';
  let split = opts.split ?? defaultSplit();
  const requests: RecordedGeminiRequest[] = [];
  let queue: GeminiReplyScript[] = [];
  let seq = 0;

  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    const sendJson = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8', vary: 'Origin, X-Origin, Referer' });
      res.end(JSON.stringify(body, null, 2));
    };

    const m = /^\/(v1beta|v1alpha|v1)\/models\/([^/:]+):(generateContent|streamGenerateContent)$/.exec(url.pathname);
    if (!m || req.method !== 'POST') {
      sendJson(404, googleError(404, `The requested URL ${url.pathname} was not found on this server.`));
      return;
    }
    const [, , model, action] = m;
    const rec: RecordedGeminiRequest = {
      method: req.method,
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      model: decodeURIComponent(model),
      action,
      headers: req.headers,
      body: undefined as unknown as GeminiRequest,
      clientClosed: false,
    };
    requests.push(rec);
    res.on('close', () => {
      if (!res.writableFinished) rec.clientClosed = true;
    });

    const key = req.headers['x-goog-api-key'] ?? url.searchParams.get('key');
    if (!key) {
      sendJson(
        403,
        googleError(
          403,
          "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.",
          'PERMISSION_DENIED',
          [
            {
              '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
              reason: 'SERVICE_DISABLED',
              domain: 'googleapis.com',
              metadata: { service: 'generativelanguage.googleapis.com' },
            },
          ],
        ),
      );
      return;
    }
    if (key !== apiKey) {
      sendJson(
        400,
        googleError(400, 'API key not valid. Please pass a valid API key.', 'INVALID_ARGUMENT', [
          {
            '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
            reason: 'API_KEY_INVALID',
            domain: 'googleapis.com',
            metadata: { service: 'generativelanguage.googleapis.com' },
          },
          {
            '@type': 'type.googleapis.com/google.rpc.LocalizedMessage',
            locale: 'en-US',
            message: 'API key not valid. Please pass a valid API key.',
          },
        ]),
      );
      return;
    }
    if (opts.models && !opts.models.includes(rec.model)) {
      sendJson(
        404,
        googleError(
          404,
          `models/${rec.model} is not found for API version ${m[1]}, or is not supported for ${action}. Call ListModels to see the list of available models and their supported methods.`,
        ),
      );
      return;
    }
    try {
      rec.body = JSON.parse(raw);
    } catch {
      sendJson(400, googleError(400, `Invalid JSON payload received. Unexpected token.\n${raw.slice(0, 40)}\n^`));
      return;
    }
    let body: GeminiRequest;
    try {
      body = normalize(rec.body, 'request', '');
      validate(body);
    } catch (err) {
      if (err instanceof BadRequest) {
        sendJson(400, googleError(400, err.message));
        return;
      }
      throw err;
    }

    const s = queue.shift() ?? {};
    if (s.delayMs) await new Promise((r) => setTimeout(r, s.delayMs));
    if (s.hang) return; // answer nothing; the client's abort closes the socket
    if (s.error && s.errorAfter === undefined) {
      sendJson(s.error.status, googleError(s.error.status, s.error.message, s.error.googleStatus));
      return;
    }

    const responseId = `resp-${++seq}-${Math.random().toString(36).slice(2, 10)}`;
    const modelVersion = s.modelVersion ?? rec.model;
    const p = plan(body, s);
    const wrap = (parts: GeminiPart[] | undefined, last: boolean, soFar?: GeminiUsageMetadata): GeminiResponse => {
      if (s.blockReason) {
        return {
          promptFeedback: { blockReason: s.blockReason },
          ...(p.usage
            ? {
                usageMetadata: {
                  promptTokenCount: p.usage.promptTokenCount,
                  totalTokenCount: p.usage.promptTokenCount,
                },
              }
            : {}),
          modelVersion,
          responseId,
        };
      }
      const candidate = {
        ...(parts?.length ? { content: { parts, role: 'model' } } : {}),
        ...(last ? { finishReason: p.finishReason } : {}),
        index: 0,
      };
      // Mid-stream frames carry the running totals; the last carries the whole count.
      const usageMetadata = p.usage && (last || !soFar ? p.usage : soFar);
      return { candidates: [candidate], ...(usageMetadata ? { usageMetadata } : {}), modelVersion, responseId };
    };

    if (action === 'generateContent') {
      sendJson(200, wrap([...p.thoughtParts, ...p.textParts, ...p.callParts], true));
      return;
    }

    // Streaming: thoughts, then the text in pieces, then the calls; the last frame has finishReason + usage.
    const text = p.textParts[0]?.text ?? '';
    const textChunks = s.textChunks ? scriptedChunks(s.textChunks, text) : splitText(text, s.chunks ?? 3);
    const pieces: GeminiPart[][] = [
      ...p.thoughtParts.map((t) => [t]),
      ...(text ? textChunks.map((t) => [{ text: t }]) : []),
      ...(p.callParts.length ? [p.callParts] : []),
    ];
    if (pieces.length === 0 || s.blockReason) pieces.push([]);
    let thoughtsSoFar = '';
    let textSoFar = '';
    let callsSoFar = 0;
    const frames = pieces.map((parts, i) => {
      for (const part of parts) {
        if (part.functionCall) callsSoFar++;
        else if (part.thought) thoughtsSoFar += part.text;
        else textSoFar += part.text ?? '';
      }
      const final = p.usage;
      let soFar: GeminiUsageMetadata | undefined;
      if (final && s.runningUsage === false) {
        const prompt = final.promptTokenCount ?? 0;
        soFar = { promptTokenCount: prompt, totalTokenCount: prompt };
      } else if (final) {
        const candidates = Math.min(words(textSoFar).length + callsSoFar * 5, final.candidatesTokenCount ?? 0);
        const thoughts = Math.min(words(thoughtsSoFar).length, final.thoughtsTokenCount ?? 0);
        const prompt = final.promptTokenCount ?? 0;
        soFar = {
          promptTokenCount: prompt,
          candidatesTokenCount: candidates,
          ...(thoughts ? { thoughtsTokenCount: thoughts } : {}),
          totalTokenCount: prompt + candidates + thoughts,
        };
      }
      return wrap(parts, i === pieces.length - 1, soFar);
    });

    const sse = url.searchParams.get('alt') === 'sse';
    res.writeHead(200, {
      'content-type': sse ? 'text/event-stream' : 'application/json; charset=UTF-8',
      'cache-control': 'no-cache',
    });
    const out = bodyWriter(res, split);
    if (!sse) await out.write('[');
    const write = (obj: unknown, i: number) =>
      out.write(sse ? `data: ${JSON.stringify(obj)}\r\n\r\n` : `${i ? ',\r\n' : ''}${JSON.stringify(obj)}`);
    for (let i = 0; i < frames.length; i++) {
      if (s.cutAfter === i) {
        if (s.cutMode === 'end') res.end();
        else res.socket?.destroy();
        return;
      }
      if (s.hangAfter === i) return;
      if (s.errorAfter === i && s.error) {
        await write(googleError(s.error.status, s.error.message, s.error.googleStatus), i);
        await out.end(sse ? '' : ']');
        return;
      }
      await write(frames[i], i);
      await new Promise((r) => setImmediate(r));
      if (res.destroyed) return;
    }
    await out.end(sse ? '' : ']');
  });

  const { port } = await listenOnLoopback(server);
  return {
    url: `http://127.0.0.1:${port}`,
    apiKey,
    requests,
    lastRequest: () => requests[requests.length - 1],
    script: (...replies) => {
      queue.push(...replies);
    },
    pending: () => queue.length,
    splitWrites: (mode) => {
      split = mode;
    },
    reset: () => {
      queue = [];
      requests.length = 0;
    },
    close: () => closeServer(server),
  };
}
