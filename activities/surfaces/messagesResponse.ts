// The message-style surface out: the internal result (or stream events) as an Anthropic `message`
// object and its named SSE events, with the gateway's pricing extension beside usage (clients
// ignore unknown keys). Usage follows Anthropic's convention: `input_tokens` EXCLUDES cache reads
// and writes (the internal promptTokens includes them).
import type { Bill } from '../inference/execute.js';
import type { FinishReason, InferenceResult, StreamEvent, ToolCall, Usage } from '../core/types.js';
import { withBill } from './chatResponse.js';

export interface MessageMeta {
  id: string;
  model: string;
  provider: string;
  showReasoning: boolean;
}

type StopReason = 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use' | 'refusal';

/** `stopSequence`: the stop sequence that ended the answer, when the upstream said which. */
function stopReason(finish: FinishReason, toolCalls: number, stopSequence?: string): StopReason {
  if (finish === 'length') return 'max_tokens';
  if (finish === 'content_filter') return 'refusal';
  if (finish === 'tool_calls' || toolCalls > 0) return 'tool_use';
  return stopSequence !== undefined ? 'stop_sequence' : 'end_turn';
}

/** `stop_reason` and `stop_sequence` together, as Anthropic reports them. */
function stopFields(finish: FinishReason, toolCalls: number, stopSequence?: string) {
  const reason = stopReason(finish, toolCalls, stopSequence);
  return { stop_reason: reason, stop_sequence: reason === 'stop_sequence' ? stopSequence! : null };
}

export function messageUsage(u: Usage) {
  return {
    input_tokens: Math.max(0, u.promptTokens - u.cachedTokens - u.cacheWriteTokens),
    output_tokens: u.completionTokens,
    cache_creation_input_tokens: u.cacheWriteTokens,
    cache_read_input_tokens: u.cachedTokens,
  };
}

function toolInput(call: ToolCall): unknown {
  try {
    const v = JSON.parse(call.arguments || '{}');
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? v : { value: v };
  } catch {
    return {};
  }
}

export function toMessage(r: InferenceResult, usage: Usage, bill: Bill, meta: MessageMeta) {
  const content: Array<Record<string, unknown>> = [];
  // signed blocks as the upstream gave them (a caller sends them back to keep thinking on in a tool
  // loop); reasoning from upstreams that do not sign it has an empty signature
  if (meta.showReasoning && r.thinkingBlocks?.length) {
    for (const t of r.thinkingBlocks)
      content.push(
        'redacted' in t
          ? { type: 'redacted_thinking', data: t.redacted }
          : { type: 'thinking', thinking: t.text, signature: t.signature },
      );
  } else if (meta.showReasoning && r.reasoning)
    content.push({ type: 'thinking', thinking: r.reasoning, signature: '' });
  if (r.content || (!r.toolCalls.length && !content.length)) content.push({ type: 'text', text: r.content });
  for (const c of r.toolCalls) content.push({ type: 'tool_use', id: c.id, name: c.name, input: toolInput(c) });
  return withBill(
    {
      id: meta.id,
      type: 'message',
      role: 'assistant',
      model: meta.model,
      content,
      ...stopFields(r.finishReason, r.toolCalls.length, r.stopSequence),
      usage: messageUsage(usage),
      provider: meta.provider,
    },
    bill,
  );
}

export type Frame = [event: string, data: Record<string, unknown>];

/**
 * Builds the named events of one streamed message in Anthropic's order: message_start, ping, per
 * block content_block_start / content_block_delta... / content_block_stop (a new block whenever
 * the kind of event changes; each tool call its own tool_use block), message_delta, message_stop.
 */
export class MessageStreamer {
  private index = -1;
  private open: { kind: 'text' | 'thinking' | 'redacted' | 'tool'; toolIndex?: number } | null = null;
  private toolCalls = 0;

  constructor(private readonly meta: MessageMeta) {}

  start(promptTokenEstimate: number): Frame[] {
    return [
      [
        'message_start',
        {
          type: 'message_start',
          message: {
            id: this.meta.id,
            type: 'message',
            role: 'assistant',
            model: this.meta.model,
            content: [],
            stop_reason: null,
            stop_sequence: null,
            usage: {
              input_tokens: promptTokenEstimate,
              output_tokens: 0,
              cache_creation_input_tokens: 0,
              cache_read_input_tokens: 0,
            },
          },
        },
      ],
      ['ping', { type: 'ping' }],
    ];
  }

  private close(): Frame[] {
    if (!this.open) return [];
    this.open = null;
    return [['content_block_stop', { type: 'content_block_stop', index: this.index }]];
  }

  private begin(
    kind: 'text' | 'thinking' | 'redacted' | 'tool',
    block: Record<string, unknown>,
    toolIndex?: number,
  ): Frame[] {
    const frames = this.close();
    this.index++;
    this.open = { kind, toolIndex };
    frames.push(['content_block_start', { type: 'content_block_start', index: this.index, content_block: block }]);
    return frames;
  }

  private delta(delta: Record<string, unknown>): Frame {
    return ['content_block_delta', { type: 'content_block_delta', index: this.index, delta }];
  }

  /** The frames for one event (none for finish and usage: see end()). */
  event(e: StreamEvent): Frame[] {
    switch (e.type) {
      case 'text': {
        if (!e.text) return [];
        const frames = this.open?.kind === 'text' ? [] : this.begin('text', { type: 'text', text: '' });
        frames.push(this.delta({ type: 'text_delta', text: e.text }));
        return frames;
      }
      case 'reasoning': {
        if (!this.meta.showReasoning || !e.text) return [];
        const frames =
          this.open?.kind === 'thinking'
            ? []
            : this.begin('thinking', { type: 'thinking', thinking: '', signature: '' });
        frames.push(this.delta({ type: 'thinking_delta', thinking: e.text }));
        return frames;
      }
      case 'reasoning_signature':
        // closes the open thinking block; the caller needs it to send the block back
        return this.meta.showReasoning && this.open?.kind === 'thinking'
          ? [this.delta({ type: 'signature_delta', signature: e.signature }), ...this.close()]
          : [];
      case 'reasoning_redacted':
        return this.meta.showReasoning
          ? [...this.begin('redacted', { type: 'redacted_thinking', data: e.data }), ...this.close()]
          : [];
      case 'tool_call': {
        const same = this.open?.kind === 'tool' && this.open.toolIndex === e.index;
        const frames: Frame[] = [];
        if (!same) {
          this.toolCalls++;
          frames.push(
            ...this.begin(
              'tool',
              {
                type: 'tool_use',
                id: e.id ?? `toolu_${this.meta.id.slice(4)}_${e.index}`,
                name: e.name ?? '',
                input: {},
              },
              e.index,
            ),
          );
        }
        if (e.argumentsDelta) frames.push(this.delta({ type: 'input_json_delta', partial_json: e.argumentsDelta }));
        return frames;
      }
      default:
        return [];
    }
  }

  /** Close the open block; then message_delta (stop reason, usage, pricing) and message_stop. */
  end(finish: FinishReason, usage: Usage, bill: Bill, stopSequence?: string): Frame[] {
    return [
      ...this.close(),
      [
        'message_delta',
        withBill(
          {
            type: 'message_delta',
            delta: stopFields(finish, this.toolCalls, stopSequence),
            usage: messageUsage(usage),
          },
          bill,
        ),
      ],
      ['message_stop', { type: 'message_stop' }],
    ];
  }

  /** Close the open block before a mid-stream error frame. */
  abort(): Frame[] {
    return this.close();
  }

  /** A stream that broke after it began: close the open block, then say what it cost (cutDelta). */
  cut(usage: Usage, bill: Bill): Frame[] {
    return [...this.close(), cutDelta(usage, bill)];
  }
}

/**
 * What a stream that broke midway cost, before its error frame: a message_delta with no stop reason
 * (the message did not end), the usage billed and the pricing extension. Every charged stream says
 * what it cost; an `event: error` frame has no place for it, and clients stop reading there.
 */
export function cutDelta(usage: Usage, bill: Bill): Frame {
  return [
    'message_delta',
    withBill(
      { type: 'message_delta', delta: { stop_reason: null, stop_sequence: null }, usage: messageUsage(usage) },
      bill,
    ),
  ];
}
