// Our conversation as Anthropic's `system` + `messages`: system turns move to the top level, tool
// results become user turns of `tool_result` blocks, tool calls become `tool_use` blocks, and
// consecutive turns of one role are merged, because Anthropic wants user and assistant to alternate.
import type { CacheControl, ContentPart, Message, ToolCall } from '../../core/types.js';

type Block = Record<string, unknown> & { type: string };
export interface AnthropicMessage {
  role: 'user' | 'assistant';
  content: Block[];
}

export interface Conversation {
  system?: string | Array<{ type: 'text'; text: string; cache_control?: CacheControl }>;
  messages: AnthropicMessage[];
}

const cached = (p: { cacheControl?: CacheControl }) => (p.cacheControl ? { cache_control: p.cacheControl } : {});

export function toConversation(messages: Message[], prompt?: string): Conversation {
  const system: Array<{ type: 'text'; text: string; cache_control?: CacheControl }> = [];
  const turns: AnthropicMessage[] = [];
  for (const m of messages) {
    if (m.role === 'system') {
      for (const p of m.content)
        if (p.type === 'text' && p.text !== '') system.push({ type: 'text', text: p.text, ...cached(p) });
      continue;
    }
    const turn = toTurn(m);
    if (turn.content.length === 0) continue; // Anthropic rejects empty turns
    const last = turns[turns.length - 1];
    if (last && last.role === turn.role) last.content.push(...turn.content);
    else turns.push(turn);
  }
  if (prompt !== undefined && prompt !== '') {
    const last = turns[turns.length - 1];
    if (last?.role === 'user') last.content.push({ type: 'text', text: prompt });
    else turns.push({ role: 'user', content: [{ type: 'text', text: prompt }] });
  }
  trimFinalAssistant(turns);
  // one plain system text goes as a string; blocks only when there are several or one is a cache breakpoint
  const plain = system.length === 1 && !system[0].cache_control;
  return { system: system.length === 0 ? undefined : plain ? system[0].text : system, messages: turns };
}

function toTurn(m: Message): AnthropicMessage {
  if (m.role === 'tool') {
    const content = toolResultContent(m.content);
    // an empty result is sent without content (it is optional; empty text is not allowed)
    return {
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: m.toolCallId ?? '', ...(content.length ? { content } : {}) }],
    };
  }
  if (m.role === 'assistant') {
    // signed thinking first, as Anthropic returned it; then text (assistants only write text) and tool calls
    const content: Block[] = (m.thinking ?? []).map(
      (t): Block =>
        'redacted' in t
          ? { type: 'redacted_thinking', data: t.redacted }
          : { type: 'thinking', thinking: t.text, signature: t.signature },
    );
    for (const p of m.content)
      if (p.type === 'text' && p.text !== '') content.push({ type: 'text', text: p.text, ...cached(p) });
    for (const call of m.toolCalls ?? [])
      content.push({ type: 'tool_use', id: call.id, name: call.name, input: toolInput(call) });
    return { role: 'assistant', content };
  }
  return { role: 'user', content: m.content.flatMap(toBlock) };
}

/**
 * The `input` object of a past tool call. Its arguments are JSON text; Anthropic wants an object.
 * Empty text is a call without arguments. Text that is not a JSON object (broken JSON, or a bare
 * value) is sent as `{}` instead of failing the request: it is the model's own earlier output, and
 * the tool result that follows it in the conversation already tells the model what went wrong.
 */
function toolInput(call: ToolCall): Record<string, unknown> {
  if (call.arguments.trim() === '') return {};
  try {
    const v = JSON.parse(call.arguments);
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? v : {};
  } catch {
    return {};
  }
}

function toolResultContent(parts: ContentPart[]): string | Block[] {
  if (parts.every((p) => p.type === 'text' && !p.cacheControl)) return textsOf(parts).join('\n');
  return parts.flatMap(toBlock);
}

function textsOf(parts: ContentPart[]): string[] {
  return parts.flatMap((p) => (p.type === 'text' && p.text !== '' ? [p.text] : []));
}

function toBlock(p: ContentPart): Block[] {
  if (p.type === 'text') return p.text === '' ? [] : [{ type: 'text', text: p.text, ...cached(p) }];
  if (p.type === 'image') return [{ type: 'image', source: imageSource(p), ...cached(p) }];
  return [{ ...documentBlock(p), ...cached(p) }];
}

function imageSource(p: Extract<ContentPart, { type: 'image' }>): Record<string, unknown> {
  if (p.data) return { type: 'base64', media_type: p.mediaType ?? sniffImageType(p.data), data: p.data };
  const url = p.url ?? '';
  const inline = parseDataUrl(url);
  if (inline) return { type: 'base64', media_type: inline.mediaType || sniffImageType(inline.data), data: inline.data };
  return { type: 'url', url };
}

function documentBlock(p: Extract<ContentPart, { type: 'document' }>): Block {
  // plain text goes as text (Anthropic can cite it); PDFs and anything else as base64
  const source =
    p.mediaType === 'text/plain'
      ? { type: 'text', media_type: 'text/plain', data: Buffer.from(p.data, 'base64').toString('utf8') }
      : { type: 'base64', media_type: p.mediaType, data: p.data };
  return { type: 'document', source, ...(p.title ? { title: p.title } : {}) };
}

/** `data:[<type>][;base64],<data>` as base64 (percent-encoded data is re-encoded). */
function parseDataUrl(url: string): { mediaType: string; data: string } | undefined {
  const m = /^data:([^,]*?),(.*)$/s.exec(url);
  if (!m) return undefined;
  const params = m[1].split(';');
  const base64 = params.includes('base64');
  const mediaType = params[0]?.trim() ?? '';
  const data = base64 ? m[2] : Buffer.from(decodeURIComponent(m[2]), 'utf8').toString('base64');
  return { mediaType, data };
}

/** Anthropic requires a media type; when the caller gave none, read it from the magic bytes. */
function sniffImageType(base64: string): string {
  const b = Buffer.from(base64.slice(0, 24), 'base64');
  if (b[0] === 0xff && b[1] === 0xd8) return 'image/jpeg';
  if (b.subarray(0, 4).toString('latin1') === 'GIF8') return 'image/gif';
  if (b.subarray(0, 4).toString('latin1') === 'RIFF' && b.subarray(8, 12).toString('latin1') === 'WEBP')
    return 'image/webp';
  return 'image/png';
}

/** Anthropic continues a final assistant turn (prefill) but rejects one ending in whitespace. */
function trimFinalAssistant(turns: AnthropicMessage[]): void {
  const last = turns[turns.length - 1];
  if (last?.role !== 'assistant') return;
  const block = last.content[last.content.length - 1];
  if (block?.type !== 'text') return;
  block.text = String(block.text).trimEnd();
  if (block.text === '') last.content.pop();
  if (last.content.length === 0) turns.pop();
}
