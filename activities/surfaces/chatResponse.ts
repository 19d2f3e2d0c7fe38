// Chat completions out: the internal result (or stream events) as `chat.completion` objects and
// `chat.completion.chunk` frames, with usage and the pricing extension as existing clients read
// them (see shared spec wire-details.md).
import type { Bill } from '../inference/execute.js';
import type { FinishReason, InferenceResult, StreamEvent, TokenLogprob, ToolCall, Usage } from '../core/types.js';
import { config } from '../config.js';
import { type Currency, parseAmount, toDisplayNumber } from '../core/money.js';
import { chatAnnotations, type UrlCitation } from '../search/context.js';

const pricingField = () => `x_${config.serviceName}_pricing`;

export function usageJson(u: Usage) {
  return {
    prompt_tokens: u.promptTokens,
    completion_tokens: u.completionTokens,
    total_tokens: u.promptTokens + u.completionTokens,
    prompt_tokens_details: { cached_tokens: u.cachedTokens, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: u.reasoningTokens, audio_tokens: 0 },
    // prompt-cache writes (an Anthropic upstream's), billed at the cache-write price: one of the spec's optional fields
    ...(u.cacheWriteTokens ? { cache_creation_input_tokens: u.cacheWriteTokens } : {}),
  };
}

function pricingJson(b: Bill) {
  return {
    amount: b.amount,
    currency: b.currency,
    cost: b.cost,
    paymentSource: b.paymentSource,
    inputTokens: b.inputTokens,
    outputTokens: b.outputTokens,
    // the spec's optional fields: the prompt cache's share of the cost, and why a billed stream broke
    ...(b.cacheCost === undefined ? {} : { cacheCost: b.cacheCost }),
    ...(b.error ? { error: b.error } : {}),
    // the spec's team fields, when a team paid (clients ignore keys they do not know)
    ...(b.billedToTeam ? { billedToTeam: true, billedTeamId: b.billedTeamId, billedTeamName: b.billedTeamName } : {}),
    // an extension of ours: the subscription's allowance paid (cost 0, one operation spent)
    ...(b.billedToSubscription ? { billedToSubscription: true } : {}),
  };
}

/**
 * `body` with the bill after its own fields, as every surface shows it: the pricing extension,
 * `cost`, `paymentSource`, `remainingBalance`. The fields are assigned to `body` (the caller's own,
 * freshly built or parsed object) rather than spread into a copy: under load, copying an answer
 * with a computed key into a new object cost about a tenth of a chat request's CPU.
 */
export function withBill<T extends object>(body: T, bill: Bill): T {
  const b = body as Record<string, unknown>;
  b[pricingField()] = pricingJson(bill);
  b.cost = bill.cost;
  b.paymentSource = bill.paymentSource;
  b.remainingBalance = bill.remainingBalance;
  return body;
}

function logprobsJson(lp: TokenLogprob[] | undefined) {
  if (!lp) return null;
  return {
    content: lp.map((t) => ({
      token: t.token,
      logprob: t.logprob,
      bytes: t.bytes ?? null,
      top_logprobs: (t.topLogprobs ?? []).map((a) => ({ token: a.token, logprob: a.logprob, bytes: a.bytes ?? null })),
    })),
  };
}

const toolCallsJson = (calls: ToolCall[]) =>
  calls.map((c) => ({ id: c.id, type: 'function' as const, function: { name: c.name, arguments: c.arguments } }));

export interface ChatMeta {
  id: string;
  created: number;
  model: string;
  provider: string;
  /** show reasoning text (false with `:reasoning-exclude` / `reasoning.exclude`) */
  showReasoning: boolean;
  maxToolCalls?: number;
}

export function toChatCompletion(r: InferenceResult, usage: Usage, bill: Bill, meta: ChatMeta) {
  const toolCalls = meta.maxToolCalls ? r.toolCalls.slice(0, meta.maxToolCalls) : r.toolCalls;
  const message: Record<string, unknown> = {
    role: 'assistant',
    content: toolCalls.length && !r.content ? null : r.content,
  };
  if (meta.showReasoning && r.reasoning) {
    message.reasoning = r.reasoning;
    message.reasoning_content = r.reasoning;
  }
  if (toolCalls.length) message.tool_calls = toolCallsJson(toolCalls);
  return withBill(
    {
      id: meta.id,
      object: 'chat.completion',
      created: meta.created,
      model: meta.model,
      provider: meta.provider,
      system_fingerprint: null,
      choices: [{ index: 0, message, finish_reason: r.finishReason, logprobs: logprobsJson(r.logprobs) }],
      usage: usageJson(usage),
    },
    bill,
  );
}

/**
 * The usage and bill of several calls made for one request, summed (exactly: in the currency's
 * units), the balance left after the last charge: chat's `n`, and the advisor's phases.
 */
export function sumCharges(parts: Array<{ usage: Usage; bill: Bill }>): { usage: Usage; bill: Bill } {
  const sum = (pick: (b: Bill) => number, currency: Currency) =>
    toDisplayNumber(
      parts.reduce((a, p) => a + parseAmount(pick(p.bill), currency), 0n),
      currency,
    );
  const currency = parts[0]!.bill.currency;
  const bill: Bill = {
    ...parts[0]!.bill,
    amount: sum((b) => b.amount, currency),
    cost: sum((b) => b.cost, 'USD'),
    remainingBalance: Math.min(...parts.map((p) => p.bill.remainingBalance)),
    inputTokens: parts.reduce((a, p) => a + p.bill.inputTokens, 0),
    outputTokens: parts.reduce((a, p) => a + p.bill.outputTokens, 0),
  };
  const usage: Usage = {
    ...parts[0]!.usage,
    promptTokens: parts.reduce((a, p) => a + p.usage.promptTokens, 0),
    completionTokens: parts.reduce((a, p) => a + p.usage.completionTokens, 0),
    cachedTokens: parts.reduce((a, p) => a + p.usage.cachedTokens, 0),
    cacheWriteTokens: parts.reduce((a, p) => a + p.usage.cacheWriteTokens, 0),
    reasoningTokens: parts.reduce((a, p) => a + p.usage.reasoningTokens, 0),
  };
  return { usage, bill };
}

/** One `chat.completion` from the completions of several calls made for one request (chat's `n`): their choices in order, indexed 0..n-1, usage and bill summed. */
export function mergeCompletions(parts: Array<{ body: Record<string, unknown>; usage: Usage; bill: Bill }>) {
  const first = parts[0]!.body;
  const { usage, bill } = sumCharges(parts);
  const choices = parts.flatMap((p) => p.body.choices as Array<Record<string, unknown>>);
  return withBill({ ...first, choices: choices.map((c, index) => ({ ...c, index })), usage: usageJson(usage) }, bill);
}

/** What a web search adds to an answer: its citations, the sources' URLs, and what the search cost. */
export interface WebSearchShown {
  citations: UrlCitation[];
  /** every source put before the model, in order (empty for native search) */
  sourceUrls: string[];
  /** an external search's own bill (native search is in the answer's bill) */
  fee?: { provider: string; depth: string; cost: number };
}

/**
 * Web search on a chat answer (or its last chunk): OpenAI's `annotations` with `url_citation`s on the
 * message (`delta` when streaming), `citations` (the sources' URLs, as Perplexity-style clients read
 * them) and the search's cost in the pricing extension.
 */
export function withSearchCitations<T extends object>(body: T, shown: WebSearchShown, part: 'message' | 'delta'): T {
  // biome-ignore lint/suspicious/noExplicitAny: a completion or chunk just built by this module
  const b = body as Record<string, any>;
  const target = b.choices?.[0]?.[part];
  if (target) target.annotations = chatAnnotations(shown.citations);
  if (shown.sourceUrls.length) b.citations = shown.sourceUrls;
  if (shown.fee && b[pricingField()]) b[pricingField()].webSearch = shown.fee;
  return body;
}

/** Builds the chunk frames of one streamed completion, in the order the spec's Events table gives. */
export class ChatChunker {
  private toolCalls = 0;
  private readonly seenCalls = new Set<number>();
  /** the answer text so far (web search: its citations are found in it at the end) */
  content = '';

  constructor(private readonly meta: ChatMeta) {}

  private chunk(
    delta: Record<string, unknown>,
    finish: FinishReason | null = null,
    extra: Record<string, unknown> = {},
    logprobs?: TokenLogprob[],
  ) {
    return {
      id: this.meta.id,
      object: 'chat.completion.chunk',
      created: this.meta.created,
      model: this.meta.model,
      provider: this.meta.provider,
      system_fingerprint: null,
      choices: [{ index: 0, delta, finish_reason: finish, logprobs: logprobsJson(logprobs) }],
      ...extra,
    };
  }

  first() {
    return this.chunk({ role: 'assistant', content: '' });
  }

  /** The frame for one event, or null when the event shows nothing (usage, finish: see final()). */
  event(e: StreamEvent) {
    switch (e.type) {
      case 'text':
        this.content += e.text;
        return this.chunk({ content: e.text }, null, {}, e.logprobs);
      case 'reasoning':
        return this.meta.showReasoning ? this.chunk({ reasoning: e.text, reasoning_content: e.text }) : null;
      case 'tool_call': {
        if (this.meta.maxToolCalls !== undefined && e.index >= this.meta.maxToolCalls) return null;
        const fresh = !this.seenCalls.has(e.index);
        this.seenCalls.add(e.index);
        if (fresh) this.toolCalls++;
        const call: Record<string, unknown> = {
          index: e.index,
          function: { arguments: e.argumentsDelta, ...(fresh && e.name ? { name: e.name } : {}) },
        };
        if (fresh) Object.assign(call, { id: e.id, type: 'function' });
        return this.chunk({ tool_calls: [call] });
      }
      default:
        return null;
    }
  }

  /**
   * The last frames, as OpenAI sends them: the finish_reason; then, when the caller asked for usage
   * (`stream_options.include_usage`), a chunk with empty `choices` carrying `usage`. The pricing
   * extension rides on the last of them.
   */
  final(finish: FinishReason, usage: Usage, bill: Bill, includeUsage: boolean, web?: WebSearchShown) {
    const reason = finish === 'stop' && this.toolCalls > 0 ? 'tool_calls' : finish;
    // a web search's annotations ride on the finishing chunk's delta, its cost beside the bill
    const finishing = (extra: Record<string, unknown>) => {
      const c = this.chunk({}, reason, extra);
      return web ? withSearchCitations(c, web, 'delta') : c;
    };
    if (!includeUsage) return [finishing(withBill({}, bill))];
    const usageChunk = withBill({ ...this.chunk({}), choices: [], usage: usageJson(usage) }, bill);
    if (web?.fee)
      (usageChunk as unknown as Record<string, Record<string, unknown>>)[pricingField()].webSearch = web.fee;
    return [finishing({}), usageChunk];
  }
}
