// Internal request -> OpenAI wire body (POST /chat/completions, or POST /completions for a raw
// prompt), shaped by the vendor's quirks. Everything optional is left out when unset, so a
// vendor's own defaults apply.
import type { ContentPart, InferenceRequest, Message, ReasoningEffort, ReasoningOptions } from '../../core/types.js';
import type { ProviderTarget } from '../types.js';
import type { OpenAIQuirks } from './quirks.js';

type Body = Record<string, unknown>;

/** `base` already ends in the API version (".../v1", ".../openai/v1"): append, never resolve. */
export function endpointUrl(base: string, path: 'chat/completions' | 'completions'): string {
  return `${base.replace(/\/+$/, '')}/${path}`;
}

/**
 * A raw prompt goes to the legacy text endpoint only when the vendor has one and nothing in the
 * request needs chat (tools, structured output): otherwise it becomes the last user turn.
 */
export function usesCompletionsEndpoint(req: InferenceRequest, q: OpenAIQuirks): boolean {
  return (
    req.prompt !== undefined &&
    q.promptEndpoint === 'completions' &&
    !req.tools?.length &&
    (req.responseFormat === undefined || req.responseFormat.type === 'text')
  );
}

export function requestHeaders(target: ProviderTarget, q: OpenAIQuirks, stream: boolean): Record<string, string> {
  const h: Record<string, string> = {
    'content-type': 'application/json',
    accept: stream ? 'text/event-stream' : 'application/json',
  };
  // keyless self-hosted servers (vLLM without --api-key, llama.cpp, Ollama) get no Authorization at all
  if (target.apiKey) h.authorization = `Bearer ${target.apiKey}`;
  if (q.httpReferer) h['http-referer'] = q.httpReferer;
  if (q.appTitle) h['x-title'] = q.appTitle;
  return { ...h, ...target.headers };
}

export function toChatBody(req: InferenceRequest, q: OpenAIQuirks, stream: boolean): Body {
  const messages = req.messages.map((m) => toWireMessage(m, q));
  if (req.prompt !== undefined) messages.push({ role: 'user', content: req.prompt });
  const body: Body = { model: req.model, messages };
  // native web search, as OpenAI's search models and OpenRouter take it
  if (req.webSearch)
    body.web_search_options = req.webSearch.contextSize ? { search_context_size: req.webSearch.contextSize } : {};
  if (req.tools?.length) {
    body.tools = req.tools.map((t) => ({
      type: 'function',
      function: {
        name: t.name,
        ...(t.description !== undefined && { description: t.description }),
        ...(t.parameters && { parameters: t.parameters }),
      },
    }));
    // OpenAI answers 400 to tool_choice / parallel_tool_calls without tools, hence inside this branch
    if (req.toolChoice !== undefined) {
      body.tool_choice =
        typeof req.toolChoice === 'string'
          ? req.toolChoice
          : { type: 'function', function: { name: req.toolChoice.name } };
    }
    if (req.parallelToolCalls !== undefined) body.parallel_tool_calls = req.parallelToolCalls;
  }
  const rf = req.responseFormat;
  if (rf?.type === 'json_object') body.response_format = { type: 'json_object' };
  if (rf?.type === 'json_schema') {
    body.response_format = {
      type: 'json_schema',
      json_schema: {
        name: rf.name,
        schema: rf.schema,
        ...(rf.strict !== undefined && { strict: rf.strict }),
        ...(rf.description !== undefined && { description: rf.description }),
      },
    };
  }
  body[q.maxTokensField] = req.maxTokens;
  Object.assign(body, samplingFields(req, q, false), reasoningFields(req.reasoning, q));
  return finish(body, req, q, stream);
}

export function toCompletionBody(req: InferenceRequest, q: OpenAIQuirks, stream: boolean): Body {
  // The legacy endpoint takes `max_tokens` everywhere, OpenAI included.
  const body: Body = { model: req.model, prompt: req.prompt ?? '', max_tokens: req.maxTokens };
  Object.assign(body, samplingFields(req, q, true));
  return finish(body, req, q, stream);
}

function finish(body: Body, req: InferenceRequest, q: OpenAIQuirks, stream: boolean): Body {
  if (req.user !== undefined && q.sendUser) body.user = req.user;
  if (stream) {
    body.stream = true;
    if (q.streamUsage) body.stream_options = { include_usage: true };
  }
  for (const p of q.dropParams) delete body[p];
  return body;
}

function samplingFields(req: InferenceRequest, q: OpenAIQuirks, legacy: boolean): Body {
  const s = req.sampling ?? {};
  const b: Body = {};
  if (s.temperature !== undefined) b.temperature = s.temperature;
  if (s.topP !== undefined) b.top_p = s.topP;
  if (s.frequencyPenalty !== undefined) b.frequency_penalty = s.frequencyPenalty;
  if (s.presencePenalty !== undefined) b.presence_penalty = s.presencePenalty;
  if (s.seed !== undefined) b.seed = s.seed;
  if (s.stop?.length) b.stop = s.stop;
  if (s.logitBias && Object.keys(s.logitBias).length) b.logit_bias = s.logitBias;
  if (s.logprobs) {
    // chat: a flag plus a count; legacy: the count itself (0 = only the chosen token's)
    if (legacy) b.logprobs = s.topLogprobs ?? 0;
    else {
      b.logprobs = true;
      if (s.topLogprobs !== undefined) b.top_logprobs = s.topLogprobs;
    }
  }
  if (q.extendedSampling) {
    if (s.topK !== undefined) b.top_k = s.topK;
    if (s.minP !== undefined) b.min_p = s.minP;
    if (s.repetitionPenalty !== undefined) b.repetition_penalty = s.repetitionPenalty;
  }
  // self-hosted servers' own controls, only those this vendor reads, under its names
  for (const [name, value] of Object.entries(s.vendor ?? {})) {
    const wire = q.vendorSampling[name];
    if (wire && value !== undefined && value !== null) b[wire] = value;
  }
  return b;
}

// Both OpenAI and OpenRouter name the top level "xhigh"; our "max" is the most either accepts.
const wireEffort = (e: ReasoningEffort): string => (e === 'max' ? 'xhigh' : e);

export function reasoningFields(r: ReasoningOptions | undefined, q: OpenAIQuirks): Body {
  if (!r || q.reasoningStyle === 'none') return {};
  if (q.reasoningStyle === 'reasoning_effort') return r.effort ? { reasoning_effort: wireEffort(r.effort) } : {};
  // OpenRouter takes an effort OR a token budget, not both: the explicit budget wins.
  if (r.enabled === false) return { reasoning: { enabled: false } };
  const o: Body = {};
  if (r.budgetTokens !== undefined) o.max_tokens = r.budgetTokens;
  else if (r.effort) o.effort = wireEffort(r.effort);
  else if (r.enabled) o.enabled = true;
  if (r.exclude) o.exclude = true;
  return Object.keys(o).length ? { reasoning: o } : {};
}

function toWireMessage(m: Message, q: OpenAIQuirks): Body {
  const named = m.name !== undefined && q.messageNames && m.role !== 'tool' ? { name: m.name } : {};
  switch (m.role) {
    case 'system':
      return { role: 'system', content: textOf(m.content), ...named };
    case 'tool':
      return { role: 'tool', tool_call_id: m.toolCallId ?? '', content: textOf(m.content) };
    case 'assistant': {
      const text = textOf(m.content);
      if (!m.toolCalls?.length) return { role: 'assistant', content: text, ...named };
      return {
        role: 'assistant',
        // OpenAI's own shape for a turn that only called tools is `content: null`
        content: text === '' ? null : text,
        tool_calls: m.toolCalls.map((c) => ({
          id: c.id,
          type: 'function',
          function: { name: c.name, arguments: c.arguments },
        })),
        ...named,
      };
    }
    default: {
      // one text part as a plain string: every server takes that, not all take part arrays
      const only = m.content.length === 1 && m.content[0].type === 'text' ? m.content[0].text : undefined;
      return { role: 'user', content: only ?? m.content.map(toWirePart), ...named };
    }
  }
}

/** Text of the parts; separate blocks stay separate lines. */
function textOf(parts: ContentPart[]): string {
  return parts
    .filter((p): p is Extract<ContentPart, { type: 'text' }> => p.type === 'text')
    .map((p) => p.text)
    .join('\n');
}

function toWirePart(p: ContentPart): Body {
  if (p.type === 'text') return { type: 'text', text: p.text };
  if (p.type === 'image') {
    const url = p.url ?? `data:${p.mediaType ?? 'image/png'};base64,${p.data ?? ''}`;
    return { type: 'image_url', image_url: { url, ...(p.detail && { detail: p.detail }) } };
  }
  // Plain-text documents are just text to any model; others (PDF) go as OpenAI's `file` part.
  if (p.mediaType.startsWith('text/') || p.mediaType === 'application/json') {
    const text = Buffer.from(p.data, 'base64').toString('utf8');
    return { type: 'text', text: p.title ? `${p.title}\n\n${text}` : text };
  }
  return {
    type: 'file',
    file: {
      filename: p.title ?? (p.mediaType === 'application/pdf' ? 'document.pdf' : 'document'),
      file_data: `data:${p.mediaType};base64,${p.data}`,
    },
  };
}
