// biome-ignore-all lint/suspicious/noExplicitAny: wire JSON, read field by field
// The message-style surface passed through to Anthropic (see providers/anthropic/native.ts): the
// caller's body goes upstream as written, and Anthropic's message or named events come back as
// they came (ids, signatures, stop_sequence, cache usage, citations), plus the gateway's
// additions: the model name the caller asked for, `provider` (JSON answers), and the pricing
// extension beside the usage (on message_delta when streaming, as on the translated path).
import type { Bill } from '../inference/execute.js';
import type { NativeRequest, StreamEvent, Usage } from '../core/types.js';
import { messageUsage, type MessageMeta } from './messagesResponse.js';
import { withBill } from './chatResponse.js';
import { renamed } from './passthrough.js';

/** Body fields only the gateway reads. */
const GATEWAY_FIELDS = ['provider', 'caching', 'stickyprovider', 'stickyProvider'];

export function messagesPassThroughBody(body: Record<string, any>): NativeRequest {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(body)) if (!GATEWAY_FIELDS.includes(k)) out[k] = v;
  return { format: 'anthropic-messages', body: out };
}

export function passedThroughMessage(
  raw: Record<string, any>,
  usage: Usage,
  bill: Bill,
  meta: Pick<MessageMeta, 'model' | 'provider'>,
) {
  raw.model = meta.model;
  raw.usage ??= messageUsage(usage);
  raw.provider = meta.provider;
  return withBill(raw, bill); // this request's own parsed answer, completed in place
}

type NativeEvent = Extract<StreamEvent, { type: 'native' }>;

/** A frame as [event name, data text] (data already JSON). */
export type RawFrame = [event: string, data: string];

/**
 * Relays the named events of one passed-through stream. message_delta (the usage) and
 * message_stop are held until the call is settled; everything else goes out at once.
 */
export class MessagesRelay {
  private delta?: NativeEvent;
  private stop?: NativeEvent;

  constructor(private readonly meta: Pick<MessageMeta, 'model'>) {}

  /** The frame to write now for one upstream frame, or null when it is held. */
  frame(e: NativeEvent): RawFrame | null {
    const name = e.event ?? e.json?.type ?? 'message';
    if (name === 'message_delta') this.delta = e;
    if (name === 'message_stop') this.stop = e;
    if (name === 'message_delta' || name === 'message_stop') return null;
    return [name, name === 'message_start' ? renamed(e.data, e.json, this.meta.model) : e.data];
  }

  /** message_delta with the bill beside its usage, then message_stop. */
  end(usage: Usage, bill: Bill): RawFrame[] {
    const d = this.delta?.json ?? { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null } };
    return [
      // the upstream's usage, completed with the input side it gave in message_start (as Anthropic's
      // newer answers restate it here), so the bill beside it explains itself
      ['message_delta', JSON.stringify(withBill({ ...d, usage: { ...messageUsage(usage), ...d.usage } }, bill))],
      ['message_stop', this.stop?.data ?? '{"type":"message_stop"}'],
    ];
  }
}
