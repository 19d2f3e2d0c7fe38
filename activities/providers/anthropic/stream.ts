// A Messages API event stream as StreamEvents. Anthropic sends named events: message_start
// (input-side usage), content_block_start/delta/stop per block, message_delta (stop reason and
// output tokens), message_stop (the terminal marker), ping, and `error` frames.
import { errors } from 'undici';
import type { StreamEvent } from '../../core/types.js';
import { transportError } from '../http.js';
import { jsonStringAt, parseSse, type SseFrame } from '../sse.js';
import { abortedError, streamErrorFrame } from './errors.js';
import type { MessagesPlan } from './request.js';
import { finishReasonOf, jsonToolText, toUsage, type AnthropicUsage } from './response.js';
import { RequestError, upstreamError } from '../../core/errors.js';

type BlockKind =
  | { kind: 'text' | 'thinking' | 'ignored' }
  | { kind: 'tool'; index: number }
  | { kind: 'json'; buffered: string };

/**
 * Reads a Messages API stream one frame at a time: the events each frame stands for, and whether
 * the message is complete (message_stop). Used by the translated stream (toStreamEvents) and by
 * the pass-through (native.ts), which relays the frames and bills from these events.
 */
export class MessageStreamDecoder {
  private readonly blocks = new Map<number, BlockKind>();
  private toolCalls = 0;
  private stopReason: unknown;
  private stopSequence: unknown;
  private usage: AnthropicUsage | undefined;
  /** message_stop arrived */
  done = false;
  /** the last frame's data, parsed (undefined for pings and error frames) */
  last: unknown;

  constructor(
    private readonly plan: MessagesPlan,
    private readonly providerId: string,
  ) {}

  push(frame: SseFrame): StreamEvent[] {
    const { plan, providerId } = this;
    this.last = undefined;
    if (frame.event === 'error') throw streamErrorFrame(providerId, frame.data);
    if (frame.event === 'ping' || frame.data === '') return [];
    // biome-ignore lint/suspicious/noExplicitAny: wire JSON
    let ev: any;
    try {
      ev = JSON.parse(frame.data);
    } catch {
      throw upstreamError(`${providerId} sent a stream event that is not JSON`, 502, true, {
        code: 'upstream_bad_response',
        providerId,
        upstreamBody: frame.data.slice(0, 2000),
      });
    }
    this.last = ev;
    const out: StreamEvent[] = [];
    switch (frame.event ?? ev?.type) {
      case 'error':
        throw streamErrorFrame(providerId, frame.data);
      case 'message_start':
        this.usage = { ...ev.message?.usage };
        break;
      case 'content_block_start': {
        const b = ev.content_block ?? {};
        if (b.type === 'tool_use' && plan.jsonTool && b.name === plan.jsonTool.name) {
          this.blocks.set(ev.index, { kind: 'json', buffered: '' });
        } else if (b.type === 'tool_use') {
          const index = this.toolCalls++;
          this.blocks.set(ev.index, { kind: 'tool', index });
          out.push({ type: 'tool_call', index, id: b.id, name: b.name, argumentsDelta: '' });
        } else if (b.type === 'text' || b.type === 'thinking') {
          this.blocks.set(ev.index, { kind: b.type });
          // a block may start with content already in it
          if (b.type === 'text' && b.text) out.push({ type: 'text', text: b.text });
          if (b.type === 'thinking' && b.thinking && !plan.hideReasoning)
            out.push({ type: 'reasoning', text: b.thinking });
        } else if (b.type === 'redacted_thinking' && typeof b.data === 'string' && !plan.hideReasoning) {
          this.blocks.set(ev.index, { kind: 'ignored' });
          out.push({ type: 'reasoning_redacted', data: b.data });
        } else {
          this.blocks.set(ev.index, { kind: 'ignored' });
        }
        break;
      }
      case 'content_block_delta': {
        const block = this.blocks.get(ev.index);
        const d = ev.delta ?? {};
        if (d.type === 'text_delta' && d.text) out.push({ type: 'text', text: d.text });
        else if (d.type === 'thinking_delta' && d.thinking && !plan.hideReasoning)
          out.push({ type: 'reasoning', text: d.thinking });
        // the signature closes a thinking block: a caller needs it to send the block back
        else if (d.type === 'signature_delta' && d.signature && !plan.hideReasoning)
          out.push({ type: 'reasoning_signature', signature: d.signature });
        else if (d.type === 'input_json_delta' && block?.kind === 'tool' && d.partial_json) {
          out.push({ type: 'tool_call', index: block.index, argumentsDelta: d.partial_json });
        } else if (d.type === 'input_json_delta' && block?.kind === 'json' && d.partial_json) {
          // JSON mode: the tool input IS the answer text. A wrapped schema is unwrapped at the end.
          if (plan.jsonTool?.wrapped) block.buffered += d.partial_json;
          else out.push({ type: 'text', text: d.partial_json });
        }
        // citations carry nothing our callers can use
        break;
      }
      case 'content_block_stop': {
        const block = this.blocks.get(ev.index);
        if (block?.kind === 'json' && plan.jsonTool?.wrapped)
          out.push({ type: 'text', text: wrappedText(plan, block.buffered) });
        break;
      }
      case 'message_delta':
        if (ev.delta?.stop_reason) this.stopReason = ev.delta.stop_reason;
        if (typeof ev.delta?.stop_sequence === 'string') this.stopSequence = ev.delta.stop_sequence;
        // output_tokens is cumulative; newer answers may also restate the input side here
        if (ev.usage) this.usage = { ...this.usage, ...definedOnly(ev.usage) };
        break;
      case 'message_stop': {
        this.done = true;
        const finish = finishReasonOf(this.stopReason, this.toolCalls > 0);
        out.push({
          type: 'finish',
          reason: finish,
          ...(this.stopReason === 'stop_sequence' && typeof this.stopSequence === 'string'
            ? { stopSequence: this.stopSequence }
            : {}),
        });
        const u = toUsage(this.usage);
        if (u) out.push({ type: 'usage', usage: u });
        break;
      }
      default:
        // Anthropic may add event types; unknown ones are skipped, as its docs ask
        break;
    }
    return out;
  }

  /** The stream ended without message_stop. */
  cut(): RequestError {
    return upstreamError(`${this.providerId} stream ended before message_stop`, 502, true, {
      code: 'upstream_stream_cut',
      providerId: this.providerId,
    });
  }
}

const TEXT_DELTA_HEAD = '{"type":"content_block_delta","index":';
const TEXT_DELTA = '"delta":{"type":"text_delta","text":"';

/**
 * The text of a `content_block_delta` frame that only continues a text block, e.g.
 * `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}` (Anthropic's
 * own layout), read with a few substring tests instead of JSON.parse; undefined for any other
 * frame or layout, which the decoder parses. A text delta changes none of the decoder's state, so
 * the pass-through (native.ts) relays such a frame as it came and bills its text, as the decoder
 * would.
 */
export function plainTextDeltaFrame(frame: SseFrame): string | undefined {
  const { data } = frame;
  if (frame.event !== 'content_block_delta' || !data.startsWith(TEXT_DELTA_HEAD) || data.includes('\n'))
    return undefined;
  // the block's index (digits), then the delta and nothing else
  let at = TEXT_DELTA_HEAD.length;
  while (data.charCodeAt(at) >= 48 && data.charCodeAt(at) <= 57) at++;
  if (at === TEXT_DELTA_HEAD.length || !data.startsWith(TEXT_DELTA, at + 1) || data[at] !== ',') return undefined;
  const text = jsonStringAt(data, at + 1 + TEXT_DELTA.length);
  if (!text || text.end !== data.length - 3 || !data.endsWith('"}}')) return undefined;
  return text.text;
}

export async function* toStreamEvents(
  frames: AsyncIterable<SseFrame>,
  plan: MessagesPlan,
  providerId: string,
): AsyncGenerator<StreamEvent> {
  const decoder = new MessageStreamDecoder(plan, providerId);
  for await (const frame of frames) {
    for (const e of decoder.push(frame)) yield e;
    if (decoder.done) return;
  }
  throw decoder.cut();
}

/**
 * SSE frames from an upstream body, with read failures mapped: an abort stays an abort (or a
 * deadline), a stalled body a timeout, and a connection lost mid-body is a cut stream (retryable).
 */
export async function* readFrames(
  body: AsyncIterable<Uint8Array>,
  providerId: string,
  signal: AbortSignal,
): AsyncGenerator<SseFrame> {
  try {
    yield* parseSse(body);
  } catch (err) {
    if (err instanceof RequestError) throw err;
    if (signal.aborted) throw abortedError(providerId, signal);
    if (err instanceof errors.BodyTimeoutError) throw transportError(providerId, err);
    throw upstreamError(`${providerId} stream broke off: ${(err as Error).message}`, 502, true, {
      code: 'upstream_stream_cut',
      providerId,
    });
  }
}

function wrappedText(plan: MessagesPlan, buffered: string): string {
  try {
    return jsonToolText(plan.jsonTool!, JSON.parse(buffered));
  } catch {
    return buffered; // incomplete (e.g. cut by max_tokens): pass on what came
  }
}

function definedOnly(u: Record<string, unknown>): AnthropicUsage {
  return Object.fromEntries(Object.entries(u).filter(([, v]) => v !== null && v !== undefined)) as AnthropicUsage;
}
