// biome-ignore-all lint/suspicious/noExplicitAny: wire JSON, read field by field
// Chat completions passed through to an OpenAI-compatible upstream (see
// providers/openai/native.ts): the caller's body with the gateway's own fields taken out, and the
// upstream's answer or chunks shown as they came, plus the gateway's additions: the model name the
// caller asked for, `provider`, and the pricing extension (top level in JSON; on the final chunk
// when streaming, as on the translated path). The usage chunk the gateway asked for on the
// caller's behalf is not shown unless the caller asked for it too.
import type { Bill } from '../inference/execute.js';
import type { NativeRequest, StreamEvent, Usage } from '../core/types.js';
import { usageJson, withBill, type ChatMeta } from './chatResponse.js';
import { ModelRename, renamed } from './passthrough.js';

/**
 * Body fields only the gateway reads: routing preferences, prompt caching (README, Prompt caching), tool-call cap, and
 * web search turned off (`web_search: false`; a request that searches is never passed through).
 */
const GATEWAY_FIELDS = new Set([
  'provider',
  'caching',
  'stickyprovider',
  'stickyProvider',
  'prompt_caching',
  'promptCaching',
  'max_tool_calls',
  'web_search',
  'webSearch',
  'linkup',
]);

/**
 * The caller's body for a pass-through, or undefined when the answer needs the gateway's hand
 * (`max_tool_calls` trims tool calls). Messages are cleaned as the translation cleans them: tool
 * results answering no earlier call and the deprecated `function` role are dropped (spec).
 */
export function chatPassThroughBody(body: Record<string, any>): NativeRequest | undefined {
  if (body.max_tool_calls !== undefined) return undefined;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(body)) if (!GATEWAY_FIELDS.has(k)) out[k] = body[k];
  // spec: tool_choice 'none' drops the tools
  if (body.tool_choice === 'none') {
    delete out.tools;
    delete out.tool_choice;
    delete out.parallel_tool_calls;
  }
  const issued = new Set<string>();
  out.messages = (body.messages as any[]).filter((m) => {
    if (m.role === 'assistant') for (const c of m.tool_calls ?? []) issued.add(c.id);
    if (m.role === 'function') return false;
    return m.role !== 'tool' || issued.has(m.tool_call_id);
  });
  return { format: 'openai-chat', body: out };
}

/**
 * A passed-through `chat.completion`: the upstream's, renamed, with provider and pricing. `raw` is
 * this request's own parsed answer and is completed in place (see withBill).
 */
export function passedThroughCompletion(
  raw: Record<string, any>,
  usage: Usage,
  bill: Bill,
  meta: Pick<ChatMeta, 'model' | 'provider'>,
) {
  raw.model = meta.model;
  raw.provider = meta.provider;
  raw.usage ??= usageJson(usage);
  return withBill(raw, bill);
}

type NativeEvent = Extract<StreamEvent, { type: 'native' }>;

/**
 * Relays the chunks of one passed-through stream. Chunks before the finish go out at once,
 * renamed and with `provider` beside the model (as translated chunks have it); the finishing chunk and what follows it are held until the call is settled, so the
 * last one shown can carry the bill.
 */
export class ChatRelay {
  private tail: NativeEvent[] = [];
  private usageChunks: NativeEvent[] = [];
  /** the model name the upstream's chunks carry (from the parsed ones), for renaming unparsed ones */
  private rename: ModelRename | undefined;

  constructor(
    private readonly meta: Pick<ChatMeta, 'model' | 'provider'>,
    private readonly callerWantsUsage: boolean,
  ) {}

  /** The data to write now for one upstream chunk, or null when it is held. */
  chunk(e: NativeEvent): string | null {
    if (e.json === undefined) {
      // a plain text delta, not parsed (providers/openai/stream.ts plainTextDelta): no finish, no
      // usage, no provider field of its own; renamed in its text as a parsed one would be
      const shown = this.tail.length ? undefined : this.rename?.in(e.data);
      if (shown !== undefined) return shown;
      e.json = JSON.parse(e.data);
    }
    const upstream = e.json?.model;
    if (typeof upstream !== 'string') this.rename = undefined;
    else if (this.rename?.upstream !== upstream) this.rename = new ModelRename(upstream, this.meta);
    if (isUsageOnly(e.json)) {
      this.usageChunks.push(e); // shown last, and only when the caller asked for usage
      return null;
    }
    if (this.tail.length || e.json?.choices?.some?.((c: any) => c?.finish_reason)) {
      this.tail.push(e);
      return null;
    }
    return renamed(e.data, e.json, this.meta.model, this.meta.provider);
  }

  /**
   * The held chunks, the last one with the bill. A caller who asked for usage gets it as OpenAI sends
   * it, on a last chunk with empty `choices`: the upstream's own, or one made here when the upstream
   * sent none (some servers put usage on the finishing chunk). Without usage the bill rides on the
   * last chunk shown (a chunk of its own if none is left).
   */
  final(usage: Usage, bill: Bill): string[] {
    const shown = [...this.tail, ...(this.callerWantsUsage ? this.usageChunks : [])];
    const ownUsageChunk = this.callerWantsUsage && this.usageChunks.length === 0;
    const last = ownUsageChunk ? undefined : shown.pop();
    const out = shown.map((e) => renamed(e.data, e.json, this.meta.model, this.meta.provider));
    // the last chunk is this stream's own parsed object: completed in place
    const like = shown.at(-1)?.json;
    const base = last?.json ?? {
      ...(like?.id === undefined ? {} : { id: like.id }),
      object: 'chat.completion.chunk',
      ...(like?.created === undefined ? {} : { created: like.created }),
      choices: [],
    };
    base.model = this.meta.model;
    base.provider = this.meta.provider;
    if (this.callerWantsUsage) base.usage ??= usageJson(usage);
    out.push(JSON.stringify(withBill(base, bill)));
    return out;
  }
}

const isUsageOnly = (j: any) => Array.isArray(j?.choices) && j.choices.length === 0 && !!j.usage;
