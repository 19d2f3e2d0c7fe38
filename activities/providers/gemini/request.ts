// The internal request as a Gemini `GenerateContentRequest`. Gemini differs from the chat shape in
// a few ways this file absorbs: system text goes to `systemInstruction`; the assistant is 'model';
// a tool result is a 'user' turn holding a `functionResponse` that names the FUNCTION (found from
// the assistant turn that made the call, since our tool message carries only the call id);
// consecutive turns of one role must be merged (parallel tool results become one turn); and
// Gemini cannot fetch image URLs itself, so http(s) images are fetched (safely) and inlined.
import type { ContentPart, InferenceRequest, Message, ReasoningEffort } from '../../core/types.js';
import { MediaFetchError, safeFetch } from '../../core/safeFetch.js';
import { transportError } from '../http.js';
import type { ProviderTarget } from '../types.js';
import type { GeminiContent, GeminiGenerationConfig, GeminiPart, GeminiRequest, GeminiThinkingConfig } from './wire.js';
import { RequestError, upstreamError } from '../../core/errors.js';

/**
 * `reasoning.effort` as a thinking budget: Google's own mapping for its OpenAI-compatible
 * endpoint (low 1,024 / medium 8,192 / high 24,576). 24,576 is also Gemini 2.5 Flash's ceiling, so
 * `xhigh` and `max` stay there unless the route sets `thinkingBudgetMax` (2.5 Pro takes 32,768).
 */
const effortBudget: Record<Exclude<ReasoningEffort, 'none' | 'xhigh' | 'max'>, number> = {
  low: 1024,
  medium: 8192,
  high: 24576,
};

/**
 * Gemini 3 rejects a replayed function call without its `thoughtSignature`. Our tool calls do not
 * carry one, so for those models each replayed call gets Google's documented bypass value instead
 * (the model then continues without its earlier reasoning state). A route can force it either way
 * with the `skipThoughtSignatureValidator` option.
 */
const BYPASS_SIGNATURE = 'skip_thought_signature_validator';

export async function toGeminiRequest(
  req: InferenceRequest,
  target: ProviderTarget,
  signal: AbortSignal,
): Promise<GeminiRequest> {
  const system: Array<{ text: string }> = [];
  const turns: GeminiContent[] = [];
  const toolNames = new Map<string, string>();
  const bypass =
    typeof target.options.skipThoughtSignatureValidator === 'boolean'
      ? target.options.skipThoughtSignatureValidator
      : /^(models\/)?gemini-([3-9]|\d\d)/.test(req.model);

  for (const msg of req.messages) {
    if (msg.role === 'system') {
      for (const p of msg.content) if (p.type === 'text' && p.text) system.push({ text: p.text });
      continue;
    }
    if (msg.role === 'assistant') {
      const parts: GeminiPart[] = textParts(msg.content);
      for (const call of msg.toolCalls ?? []) {
        toolNames.set(call.id, call.name);
        parts.push({
          functionCall: { name: call.name, args: argsObject(call.arguments) },
          ...(bypass ? { thoughtSignature: BYPASS_SIGNATURE } : {}),
        });
      }
      turns.push({ role: 'model', parts });
      continue;
    }
    if (msg.role === 'tool') {
      const name = (msg.toolCallId && toolNames.get(msg.toolCallId)) || msg.name;
      if (!name) {
        throw upstreamError(
          `a tool result (tool_call_id ${msg.toolCallId ?? 'missing'}) answers no earlier tool call`,
          400,
          false,
          { providerId: target.providerId, code: 'invalid_tool_result' },
        );
      }
      const parts: GeminiPart[] = [{ functionResponse: { name, response: responseObject(msg) } }];
      for (const p of msg.content) if (p.type !== 'text') parts.push(await mediaPart(p, target, signal));
      turns.push({ role: 'user', parts });
      continue;
    }
    turns.push({ role: 'user', parts: await userParts(msg, target, signal) });
  }
  if (req.prompt !== undefined) turns.push({ role: 'user', parts: [{ text: req.prompt }] });

  const body: GeminiRequest = { contents: mergeTurns(turns) };
  if (system.length) body.systemInstruction = { parts: system };
  if (req.tools?.length) {
    // `parametersJsonSchema` takes full JSON Schema ($ref, anyOf, additionalProperties...), where
    // `parameters` takes only Google's OpenAPI subset and rejects much of what clients send.
    body.tools = [
      {
        functionDeclarations: req.tools.map((t) => ({
          name: t.name,
          ...(t.description ? { description: t.description } : {}),
          ...(t.parameters ? { parametersJsonSchema: t.parameters } : {}),
        })),
      },
    ];
  }
  if (req.toolChoice && req.tools?.length) {
    const c = req.toolChoice;
    body.toolConfig = {
      functionCallingConfig:
        c === 'auto'
          ? { mode: 'AUTO' }
          : c === 'none'
            ? { mode: 'NONE' }
            : c === 'required'
              ? { mode: 'ANY' }
              : { mode: 'ANY', allowedFunctionNames: [c.name] },
    };
  }
  body.generationConfig = generationConfig(req, target);
  return body;
}

function generationConfig(req: InferenceRequest, target: ProviderTarget): GeminiGenerationConfig {
  const s = req.sampling;
  const g: GeminiGenerationConfig = { maxOutputTokens: req.maxTokens };
  if (s.temperature !== undefined) g.temperature = s.temperature;
  if (s.topP !== undefined) g.topP = s.topP;
  if (s.topK !== undefined) g.topK = s.topK;
  if (s.seed !== undefined) g.seed = s.seed;
  if (s.presencePenalty !== undefined) g.presencePenalty = s.presencePenalty;
  if (s.frequencyPenalty !== undefined) g.frequencyPenalty = s.frequencyPenalty;
  if (s.logprobs) {
    g.responseLogprobs = true;
    if (s.topLogprobs) g.logprobs = s.topLogprobs;
  }
  // minP, repetitionPenalty and logitBias have no Gemini equivalent and are left out.
  // Stop sequences are NOT sent as `stopSequences`: Gemini would stop on one, leave it out of the
  // text and finish with a plain STOP, so nobody could tell which one ended the answer, or that
  // one did. The gateway enforces them on the streamed text instead (stream.ts), which also lifts
  // Gemini's limit of 5.
  const f = req.responseFormat;
  if (f?.type === 'json_object') g.responseMimeType = 'application/json';
  if (f?.type === 'json_schema') {
    g.responseMimeType = 'application/json';
    g.responseJsonSchema = f.schema;
  }
  const thinking = thinkingConfig(req, target);
  if (thinking) g.thinkingConfig = thinking;
  return g;
}

/** No `reasoning` leaves the model's default; otherwise a budget (0 = off, -1 = the model decides). */
function thinkingConfig(req: InferenceRequest, target: ProviderTarget): GeminiThinkingConfig | undefined {
  const r = req.reasoning;
  if (!r) return undefined;
  const ceiling = typeof target.options.thinkingBudgetMax === 'number' ? target.options.thinkingBudgetMax : 24576;
  let budget: number;
  if (r.enabled === false || r.effort === 'none') budget = 0;
  else if (r.budgetTokens !== undefined) budget = r.budgetTokens;
  else if (r.effort === 'xhigh' || r.effort === 'max') budget = Math.min(ceiling, req.maxTokens);
  else if (r.effort) budget = Math.min(effortBudget[r.effort], ceiling, req.maxTokens);
  else if (r.enabled) budget = -1;
  else return undefined;
  return budget === 0 ? { thinkingBudget: 0 } : { thinkingBudget: budget, includeThoughts: !r.exclude };
}

function textParts(content: ContentPart[]): GeminiPart[] {
  return content.flatMap((p) => (p.type === 'text' && p.text ? [{ text: p.text }] : []));
}

async function userParts(msg: Message, target: ProviderTarget, signal: AbortSignal): Promise<GeminiPart[]> {
  const parts: GeminiPart[] = [];
  for (const p of msg.content) {
    if (p.type === 'text') {
      if (p.text) parts.push({ text: p.text });
    } else parts.push(await mediaPart(p, target, signal));
  }
  return parts;
}

/** Gemini takes media only inline (or as files uploaded to Google): everything becomes inlineData. */
async function mediaPart(
  p: Exclude<ContentPart, { type: 'text' }>,
  target: ProviderTarget,
  signal: AbortSignal,
): Promise<GeminiPart> {
  if (p.type === 'document') return { inlineData: { mimeType: p.mediaType, data: p.data } };
  if (p.data)
    return {
      inlineData: { mimeType: p.mediaType ?? sniffImage(Buffer.from(p.data, 'base64')) ?? 'image/jpeg', data: p.data },
    };
  const url = p.url ?? '';
  if (url.startsWith('data:')) return { inlineData: parseDataUrl(url, target.providerId) };
  try {
    const media = await safeFetch(url, { signal, errorCode: 'invalid_image_url' });
    const mimeType = media.mediaType.startsWith('image/') ? media.mediaType : sniffImage(media.data);
    if (!mimeType)
      throw new MediaFetchError(
        `${url} is not an image (${media.mediaType || 'no content type'})`,
        'invalid_image_url',
        'bad_url',
      );
    return { inlineData: { mimeType, data: media.data.toString('base64') } };
  } catch (err) {
    if (err instanceof MediaFetchError)
      // the gateway's own refusal of the caller's URL, not Gemini's: its message as it is
      throw new RequestError(err.status, err.code, err.message, {
        providerId: target.providerId,
        detail: err.detail,
        retryable: false,
      });
    throw transportError(target.providerId, err); // the caller's abort, as every adapter reports it
  }
}

function parseDataUrl(url: string, providerId: string): { mimeType: string; data: string } {
  const m = /^data:([^;,]*)((?:;[^;,]*)*?)(;base64)?,(.*)$/s.exec(url);
  if (!m) throw upstreamError('a data: URL image is malformed', 400, false, { code: 'invalid_image_url', providerId });
  const bytes = m[3] ? Buffer.from(m[4], 'base64') : Buffer.from(decodeURIComponent(m[4]), 'utf8');
  const mimeType = m[1] || sniffImage(bytes) || 'image/jpeg';
  return { mimeType, data: m[3] ? m[4] : bytes.toString('base64') };
}

/** The image types Gemini accepts, told by their first bytes, for servers that send none or a generic type. */
function sniffImage(b: Buffer): string | undefined {
  if (b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return 'image/png';
  if (b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'image/jpeg';
  if (b.subarray(0, 4).toString('latin1') === 'GIF8') return 'image/gif';
  if (b.subarray(0, 4).toString('latin1') === 'RIFF' && b.subarray(8, 12).toString('latin1') === 'WEBP')
    return 'image/webp';
  if (
    b
      .subarray(4, 12)
      .toString('latin1')
      .match(/^ftyp(heic|heix|mif1)/)
  )
    return 'image/heic';
  return undefined;
}

/** A call's JSON text as Gemini's `args` object (a Struct: it must be an object). */
function argsObject(text: string): Record<string, unknown> {
  if (!text.trim()) return {};
  try {
    const v = JSON.parse(text);
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? v : { value: v };
  } catch {
    return { arguments: text };
  }
}

/** A tool's output as Gemini's `response` object: the JSON object it printed, else `{result: text}`. */
function responseObject(msg: Message): Record<string, unknown> {
  const text = msg.content.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('');
  try {
    const v = JSON.parse(text);
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) return v;
  } catch {
    // not JSON: wrapped below
  }
  return { result: text };
}

/** Gemini wants one turn per speaker change: consecutive same-role turns become one; empty turns go. */
function mergeTurns(turns: GeminiContent[]): GeminiContent[] {
  const out: GeminiContent[] = [];
  for (const t of turns) {
    if (t.parts.length === 0) continue;
    const last = out[out.length - 1];
    if (last && last.role === t.role) last.parts.push(...t.parts);
    else out.push({ role: t.role, parts: [...t.parts] });
  }
  return out;
}
