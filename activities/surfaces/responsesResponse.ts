// biome-ignore-all lint/suspicious/noExplicitAny: wire JSON, read field by field
// Responses API out: the internal result (or stream events) as a `response` object and its typed
// SSE events with sequence numbers (the request side is responses.ts).
import type { FinishReason, InferenceResult, StreamEvent, Usage } from '../core/types.js';
import { newId } from '../core/ids.js';
import type { Bill } from '../inference/execute.js';
import { withBill } from './chatResponse.js';

export interface ResponseMeta {
  id: string;
  createdAt: number;
  model: string;
  provider: string;
  showReasoning: boolean;
  /** the request's echoed fields */
  body: Record<string, any>;
  /** web search: a text's url_citation annotations (streaming; the non-streaming route sets them itself) */
  annotate?: (text: string) => Array<Record<string, unknown>>;
}

export type ResponseStatus = 'queued' | 'in_progress' | 'completed' | 'incomplete' | 'failed' | 'cancelled';

function responsesUsage(u: Usage) {
  return {
    input_tokens: u.promptTokens,
    input_tokens_details: { cached_tokens: u.cachedTokens },
    output_tokens: u.completionTokens,
    output_tokens_details: { reasoning_tokens: u.reasoningTokens },
    total_tokens: u.promptTokens + u.completionTokens,
  };
}

function statusOf(finish: FinishReason): { status: ResponseStatus; incomplete: { reason: string } | null } {
  if (finish === 'length') return { status: 'incomplete', incomplete: { reason: 'max_output_tokens' } };
  if (finish === 'content_filter') return { status: 'incomplete', incomplete: { reason: 'content_filter' } };
  return { status: 'completed', incomplete: null };
}

/** The response object, without output yet (the skeleton streaming starts from and the terminal states fill in). */
export function responseShell(meta: ResponseMeta, status: ResponseStatus) {
  const b = meta.body;
  const format = b.text?.format ?? { type: 'text' };
  return {
    id: meta.id,
    object: 'response' as const,
    created_at: meta.createdAt,
    completed_at: null as number | null,
    status,
    background: b.background === true,
    error: null as { code: string; message: string } | null,
    incomplete_details: null as { reason: string } | null,
    instructions: b.instructions ?? null,
    max_output_tokens: b.max_output_tokens ?? null,
    metadata: b.metadata ?? {},
    model: meta.model,
    output: [] as any[],
    output_text: '',
    parallel_tool_calls: b.parallel_tool_calls ?? true,
    previous_response_id: b.previous_response_id ?? null,
    reasoning: { effort: b.reasoning?.effort ?? null, summary: null },
    store: b.store !== false,
    temperature: b.temperature ?? 1,
    text: {
      format:
        format.type === 'json_schema'
          ? {
              type: 'json_schema',
              name: format.name,
              schema: format.schema,
              strict: format.strict === true,
              ...(format.description ? { description: format.description } : {}),
            }
          : { type: format.type },
    },
    tool_choice: b.tool_choice ?? 'auto',
    tools: (b.tools ?? []).map((t: any) => ({
      type: 'function',
      name: t.name,
      description: t.description ?? null,
      parameters: t.parameters ?? null,
      strict: t.strict ?? true,
    })),
    top_p: b.top_p ?? 1,
    truncation: 'disabled',
    usage: null as ReturnType<typeof responsesUsage> | null,
    user: b.user ?? null,
    provider: meta.provider,
  };
}

export type ResponseObject = ReturnType<typeof responseShell>;

const messageItem = (id: string, text: string, status: string) => ({
  type: 'message',
  id,
  status,
  role: 'assistant',
  content: [{ type: 'output_text', text, annotations: [], logprobs: [] }],
});
const reasoningItem = (id: string, text: string) => ({
  type: 'reasoning',
  id,
  summary: [{ type: 'summary_text', text }],
});
const callItem = (id: string, callId: string, name: string, args: string, status: string) => ({
  type: 'function_call',
  id,
  call_id: callId,
  name,
  arguments: args,
  status,
});

/** The finished response for a non-streamed result. */
export function toResponse(r: InferenceResult, usage: Usage, meta: ResponseMeta): ResponseObject {
  const res = responseShell(meta, 'completed');
  if (meta.showReasoning && r.reasoning) res.output.push(reasoningItem(newId('rs'), r.reasoning));
  if (r.content || !r.toolCalls.length) res.output.push(messageItem(newId('msg'), r.content, 'completed'));
  for (const c of r.toolCalls) res.output.push(callItem(newId('fc'), c.id, c.name, c.arguments, 'completed'));
  return finish(res, r.finishReason, usage, r.content);
}

function finish(res: ResponseObject, reason: FinishReason, usage: Usage, text: string): ResponseObject {
  const s = statusOf(reason);
  res.status = s.status;
  res.incomplete_details = s.incomplete;
  res.completed_at = Math.floor(Date.now() / 1000);
  res.output_text = text;
  res.usage = responsesUsage(usage);
  return res;
}

export type Frame = [event: string, data: Record<string, any>];

/**
 * Builds the typed events of one streamed response, each with its sequence_number: created,
 * in_progress, per output item added → (content_part.added → output_text.delta… → output_text.done
 * → content_part.done | function_call_arguments.delta… → .done) → output_item.done, and a terminal
 * completed / incomplete / failed carrying the whole response.
 */
export class ResponseStreamer {
  private seq = 0;
  private readonly res: ResponseObject;
  private open: { kind: 'text' | 'reasoning'; index: number; id: string; text: string } | null = null;
  private readonly calls = new Map<
    number,
    { index: number; id: string; callId: string; name: string; args: string; done: boolean }
  >();
  private text = '';
  readonly toolCalls: Array<{ id: string; name: string; arguments: string }> = [];

  constructor(private readonly meta: ResponseMeta) {
    this.res = responseShell(meta, 'in_progress');
  }

  private frame(type: string, data: Record<string, any>): Frame {
    return [type, { type, sequence_number: this.seq++, ...data }];
  }

  private snapshot() {
    return JSON.parse(JSON.stringify(this.res));
  }

  start(): Frame[] {
    return [
      this.frame('response.created', { response: this.snapshot() }),
      this.frame('response.in_progress', { response: this.snapshot() }),
    ];
  }

  private closeOpen(): Frame[] {
    const o = this.open;
    if (!o) return [];
    this.open = null;
    if (o.kind === 'reasoning') {
      const item = reasoningItem(o.id, o.text);
      this.res.output[o.index] = item;
      return [
        this.frame('response.reasoning_summary_text.done', {
          item_id: o.id,
          output_index: o.index,
          summary_index: 0,
          text: o.text,
        }),
        this.frame('response.output_item.done', { output_index: o.index, item }),
      ];
    }
    const item = messageItem(o.id, o.text, 'completed');
    this.res.output[o.index] = item;
    const part = item.content[0];
    // web search citations are known once the text is whole: each announced, then on the part
    const annotations = this.meta.annotate?.(o.text) ?? [];
    (part as { annotations: unknown[] }).annotations = annotations;
    return [
      ...annotations.map((annotation, i) =>
        this.frame('response.output_text.annotation.added', {
          item_id: o.id,
          output_index: o.index,
          content_index: 0,
          annotation_index: i,
          annotation,
        }),
      ),
      this.frame('response.output_text.done', {
        item_id: o.id,
        output_index: o.index,
        content_index: 0,
        text: o.text,
        logprobs: [],
      }),
      this.frame('response.content_part.done', { item_id: o.id, output_index: o.index, content_index: 0, part }),
      this.frame('response.output_item.done', { output_index: o.index, item }),
    ];
  }

  private openItem(kind: 'text' | 'reasoning'): Frame[] {
    const frames = this.closeOpen();
    const index = this.res.output.length;
    const id = newId(kind === 'text' ? 'msg' : 'rs');
    this.open = { kind, index, id, text: '' };
    if (kind === 'reasoning') {
      this.res.output.push({ type: 'reasoning', id, summary: [] });
      frames.push(
        this.frame('response.output_item.added', { output_index: index, item: { type: 'reasoning', id, summary: [] } }),
      );
      return frames;
    }
    this.res.output.push({ type: 'message', id, status: 'in_progress', role: 'assistant', content: [] });
    frames.push(
      this.frame('response.output_item.added', {
        output_index: index,
        item: { type: 'message', id, status: 'in_progress', role: 'assistant', content: [] },
      }),
      this.frame('response.content_part.added', {
        item_id: id,
        output_index: index,
        content_index: 0,
        part: { type: 'output_text', text: '', annotations: [], logprobs: [] },
      }),
    );
    return frames;
  }

  event(e: StreamEvent): Frame[] {
    switch (e.type) {
      case 'text': {
        if (!e.text) return [];
        const frames = this.open?.kind === 'text' ? [] : this.openItem('text');
        this.open!.text += e.text;
        this.text += e.text;
        frames.push(
          this.frame('response.output_text.delta', {
            item_id: this.open!.id,
            output_index: this.open!.index,
            content_index: 0,
            delta: e.text,
            logprobs: [],
          }),
        );
        return frames;
      }
      case 'reasoning': {
        if (!this.meta.showReasoning || !e.text) return [];
        const frames = this.open?.kind === 'reasoning' ? [] : this.openItem('reasoning');
        this.open!.text += e.text;
        frames.push(
          this.frame('response.reasoning_summary_text.delta', {
            item_id: this.open!.id,
            output_index: this.open!.index,
            summary_index: 0,
            delta: e.text,
          }),
        );
        return frames;
      }
      case 'tool_call': {
        const frames: Frame[] = [];
        let call = this.calls.get(e.index);
        if (!call) {
          frames.push(...this.closeOpen());
          call = {
            index: this.res.output.length,
            id: newId('fc'),
            callId: e.id ?? newId('call'),
            name: e.name ?? '',
            args: '',
            done: false,
          };
          this.calls.set(e.index, call);
          this.res.output.push(callItem(call.id, call.callId, call.name, '', 'in_progress'));
          frames.push(
            this.frame('response.output_item.added', {
              output_index: call.index,
              item: callItem(call.id, call.callId, call.name, '', 'in_progress'),
            }),
          );
        }
        if (e.argumentsDelta) {
          call.args += e.argumentsDelta;
          frames.push(
            this.frame('response.function_call_arguments.delta', {
              item_id: call.id,
              output_index: call.index,
              delta: e.argumentsDelta,
            }),
          );
        }
        return frames;
      }
      default:
        return [];
    }
  }

  private closeAll(): Frame[] {
    const frames = this.closeOpen();
    for (const call of this.calls.values()) {
      if (call.done) continue;
      call.done = true;
      const item = callItem(call.id, call.callId, call.name, call.args || '{}', 'completed');
      this.res.output[call.index] = item;
      this.toolCalls.push({ id: call.callId, name: call.name, arguments: call.args || '{}' });
      frames.push(
        this.frame('response.function_call_arguments.done', {
          item_id: call.id,
          output_index: call.index,
          name: call.name,
          arguments: item.arguments,
        }),
        this.frame('response.output_item.done', { output_index: call.index, item }),
      );
    }
    return frames;
  }

  get outputText(): string {
    return this.text;
  }

  /** The closing frames and the terminal response.completed / response.incomplete. */
  end(reason: FinishReason, usage: Usage, bill: Bill): { frames: Frame[]; response: ResponseObject } {
    const frames = this.closeAll();
    finish(this.res, reason, usage, this.text);
    const response = this.snapshot();
    const type = this.res.status === 'incomplete' ? 'response.incomplete' : 'response.completed';
    frames.push(this.frame(type, { response: withBill({ ...response }, bill) }));
    return { frames, response };
  }

  /** The stream broke: close what is open, and the terminal response.failed. */
  fail(code: string, message: string, usage: Usage, bill: Bill): { frames: Frame[]; response: ResponseObject } {
    const frames = this.closeAll();
    finish(this.res, 'stop', usage, this.text);
    this.res.status = 'failed';
    this.res.error = { code, message };
    const response = this.snapshot();
    frames.push(this.frame('response.failed', { response: withBill({ ...response }, bill) }));
    return { frames, response };
  }
}
