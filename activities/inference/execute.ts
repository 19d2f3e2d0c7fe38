// One text request (chat, messages, responses, completions, talk-to-gpt) as a metered call: what
// text declares to the one engine (activities/metering/meteredCall.ts). The worst case is the
// prompt estimate plus the output cap at the route's token prices; an attempt is a whole answer
// (non-streaming) or a first stream event (streaming: after it, no fallback); the cost is the
// usage the upstream reported, or our documented estimate when it reported none. Surfaces only
// translate.
import type { Caller } from '../core/caller.js';
import { atPriceBps, cacheCostOfUsage, costOfUsage, worstCaseCost } from '../billing/pricing.js';
import type { Route } from '../catalog/catalog.js';
import { config } from '../config.js';
import { toDisplayNumber } from '../core/money.js';
import type { InferenceRequest, InferenceResult, NativeRequest, StreamEvent, Usage } from '../core/types.js';
import { type Bill as MeteredBill, billOf, type Charge, MeteredCall, type Outcome } from '../metering/meteredCall.js';
import type { WriteWithCharge } from '../ledger/leases.js';
import { capability, targetFor } from '../providers/registry.js';
import type { NativePassThrough, ProviderTarget } from '../providers/types.js';
import { recordLatency, recordThroughput } from '../routing/stats.js';
import type { Redactor } from '../redaction/mask.js';
import { type PromptPrefixes, rememberRoute } from '../routing/cacheAffinity.js';
import { RequestError } from '../core/errors.js';

/** A text answer's bill: the charge, and the tokens it was for. */
export interface Bill extends MeteredBill {
  inputTokens: number;
  outputTokens: number;
}

/** Everything an answer produced: what is billed when the upstream reports no usage. */
export const producedText = (r: InferenceResult): string =>
  r.content + (r.reasoning ?? '') + r.toolCalls.map((c) => c.arguments).join('');

/** Did the answer produce anything (text, a tool call, reasoning)? An empty one is not charged. */
export const hasOutput = (r: InferenceResult): boolean => !!(r.content || r.toolCalls.length || r.reasoning);

export interface CallContext {
  caller: Caller;
  requestId: string;
  surface: string;
  /** the catalog model id, for records */
  modelId: string;
  routes: Route[];
  request: InferenceRequest;
  promptTokenEstimate: number;
  /** how long the reservation may stay open (default: config.holdTtlSeconds); background jobs need longer */
  holdTtlSeconds?: number;
  /** caller headers for the upstreams that understand them (a chat adapter's `forwardsHeaders`): anthropic-beta */
  passHeaders?: Record<string, string>;
  /** the caller's body, for routes whose upstream speaks its format (pass-through) */
  native?: NativeRequest;
  /** the caller asked for pay-as-you-go (`X-Billing-Mode`, completions' `billing_mode`) */
  forcePaygo?: boolean;
  /** the caller chose the provider (billed pay-as-you-go, never by a subscription) */
  explicitProvider?: boolean;
  /** the price in basis points of the route's (a batch row pays its batch price); default 10,000 */
  priceBps?: number;
  /** the reservation's idempotency key (a batch row's: its retries find the same hold) */
  holdKey?: string;
  /** the answer is stored with its charge, by settleWith (a batch row; see MeteredCallSpec.storesAnswer) */
  storesAnswer?: boolean;
  /**
   * PII redaction: the request was masked by this redactor, whose placeholders the answer gets back
   * (whole, or as the stream goes); its fee is part of the worst case and of the charge, so it is
   * reserved, charged once and given back with the rest (README, PII redaction).
   */
  redaction?: { redactor: Redactor; feeUsd: bigint };
  /**
   * Native web search: the spec's fee per search, on top of the tokens. The reservation covers
   * `maxSearches`; the charge is the searches the upstream reports (at most that), or one when it
   * does not count them (OpenAI's search models search once per request).
   */
  searchFee?: { perSearch: bigint; maxSearches: number };
  /**
   * Prompt-cache affinity (routing/cacheAffinity.ts): this prompt's prefixes, remembered at
   * settlement for the route that answered when it caches prompts and caching was in play (`asked`:
   * the request asked for caching or stickiness, or marked a breakpoint; or the upstream reported
   * cache reads or writes); `blockedFallbacks`, the routes a sticky request gave up by going only
   * to its remembered one (README, Prompt caching).
   */
  affinity?: { prefixes: PromptPrefixes; asked: boolean; blockedFallbacks: Route[] };
}

export interface OpenedStream {
  route: Route;
  first: StreamEvent | undefined;
  rest: AsyncIterator<StreamEvent>;
  /** the stream relays the upstream's own frames (`native` events), which the surface writes as they came */
  passedThrough: boolean;
}

const ids = (routes: Route[]) => [...new Set(routes.map((r) => r.provider.id))].join(', ');

/** The usage to bill when the upstream did not report one: our estimate of what was consumed. */
function estimatedUsage(promptTokens: number, output: string): Usage {
  return {
    promptTokens,
    cachedTokens: 0,
    cacheWriteTokens: 0,
    completionTokens: Math.ceil(Buffer.byteLength(output) / 4),
    reasoningTokens: 0,
  };
}

export class InferenceCall {
  readonly metered: MeteredCall;
  private readonly started = Date.now();
  /**
   * A paid step that must pass before the call is sent, after every call of the request is reserved
   * (the chat route's moderation preflight, shared by a request's calls): a refusal at reservation
   * never pays for it, and its failure fails the call before anything is sent.
   */
  beforeSend?: () => Promise<void>;

  constructor(readonly ctx: CallContext) {
    const { request, promptTokenEstimate } = ctx;
    this.metered = new MeteredCall({
      caller: ctx.caller,
      requestId: ctx.requestId,
      surface: ctx.surface,
      modelId: ctx.modelId,
      routes: ctx.routes,
      holdTtlSeconds: ctx.holdTtlSeconds,
      forcePaygo: ctx.forcePaygo,
      explicitProvider: ctx.explicitProvider,
      holdKey: ctx.holdKey,
      storesAnswer: ctx.storesAnswer,
      creditLease: true,
      worstCase: (route) =>
        this.priced(worstCaseCost(route, promptTokenEstimate, request.maxTokens)) +
        (ctx.redaction?.feeUsd ?? 0n) +
        (ctx.searchFee ? ctx.searchFee.perSearch * BigInt(ctx.searchFee.maxSearches) : 0n),
      shortfall: (required, available) =>
        `this request may cost up to $${required} and $${available} is available. Add funds, or lower max_tokens to reserve less.`,
    });
  }

  /** a cost at this call's price (a batch row's is a share of the synchronous one) */
  private priced(cost: bigint): bigint {
    const bps = this.ctx.priceBps;
    return bps === undefined || bps === 10_000 ? cost : atPriceBps(cost, bps);
  }

  /** The usage an answer is billed for: the upstream's, or our estimate when it reported none. */
  billable(usage: Usage | null, producedText: string): Usage {
    return usage ?? estimatedUsage(this.ctx.promptTokenEstimate, producedText);
  }

  /** What `usage` costs on `route` at this call's price, the fee included: what settle() charges for it. */
  costOf(route: Route, usage: Usage): bigint {
    return this.priced(costOfUsage(route, usage)) + (this.ctx.redaction?.feeUsd ?? 0n) + this.searchCost(usage);
  }

  /** What a native web search adds to `usage`'s cost (see CallContext.searchFee). */
  private searchCost(usage: Usage): bigint {
    const fee = this.ctx.searchFee;
    if (!fee) return 0n;
    const searches = Math.min(usage.webSearchRequests ?? 1, fee.maxSearches);
    return fee.perSearch * BigInt(Math.max(0, searches));
  }

  reserve(): Promise<unknown> {
    return this.metered.reserve();
  }

  /** The exact hold, for work that continues elsewhere (a background job settles it later). */
  get reservation(): string | undefined {
    return this.metered.reservation;
  }

  /** Continue a call whose reservation was made earlier, by another process (a background job). */
  adoptReservation(holdId: string | undefined | null): void {
    this.metered.adoptReservation(holdId);
  }

  /**
   * The route's pass-through, when the caller's body can go to it as written: its upstream speaks
   * the caller's format and takes this request without translation. Decided per route, so a
   * fallback to another protocol is translated.
   */
  private passThroughFor(route: Route, req: InferenceRequest, target: ProviderTarget): NativePassThrough | undefined {
    if (!config.passThrough || !this.ctx.native) return undefined;
    const native = capability(route, 'chat').native;
    if (native?.format !== this.ctx.native.format) return undefined;
    return native.accepts(req, target) ? native : undefined;
  }

  /** Non-streaming: try the routes in order. A passed-through answer carries `result.native`. */
  async complete(signal: AbortSignal): Promise<{ result: InferenceResult; route: Route }> {
    if (this.beforeSend) await this.beforeSend();
    const { value, route } = await this.attemptRoutes(signal, async (route) => {
      const t0 = Date.now();
      const req = { ...this.ctx.request, model: route.upstreamModel };
      const target = targetFor(route, this.ctx.passHeaders);
      const native = this.passThroughFor(route, req, target);
      const result = native
        ? await native.complete(this.ctx.native!, req, target, signal)
        : await capability(route, 'chat').complete(req, target, signal);
      recordLatency(route.id, Date.now() - t0);
      if (result.usage) recordThroughput(route.id, result.usage.completionTokens, Date.now() - t0);
      return this.ctx.redaction ? this.ctx.redaction.redactor.restoreResult(result) : result;
    });
    return { result: value, route };
  }

  /**
   * Streaming: open the first route that yields a first event. Returns that event and the rest of
   * the stream; from here on there is no fallback (bytes have reached the caller).
   */
  async openStream(signal: AbortSignal): Promise<OpenedStream> {
    if (this.beforeSend) await this.beforeSend();
    const { value } = await this.attemptRoutes(signal, async (route) => {
      const t0 = Date.now();
      const req = { ...this.ctx.request, model: route.upstreamModel };
      const target = targetFor(route, this.ctx.passHeaders);
      const native = this.passThroughFor(route, req, target);
      const events = native
        ? native.stream(this.ctx.native!, req, target, signal)
        : capability(route, 'chat').stream(req, target, signal);
      // a redacted request's placeholders come back as values, even split across chunks
      const rest = (this.ctx.redaction ? this.ctx.redaction.redactor.restoreStream(events) : events)[
        Symbol.asyncIterator
      ]();
      const first = await rest.next();
      recordLatency(route.id, Date.now() - t0);
      // an upstream that ignored `stream` and answered in one piece is replayed as events, not frames
      const firstEvent = first.done ? undefined : first.value;
      return { route, first: firstEvent, rest, passedThrough: firstEvent?.type === 'native' };
    });
    return value;
  }

  /**
   * The metered attempt, plus stickiness: a sticky request whose remembered route failed
   * in a way a fallback would have got past answers 503 `fallback_blocked_for_cache_consistency`,
   * naming the providers it did not fail over to. Nothing was produced, so nothing is charged.
   */
  private async attemptRoutes<T>(signal: AbortSignal, attempt: (route: Route) => Promise<T>) {
    const affinity = this.ctx.affinity;
    try {
      return await this.metered.attempt(signal, attempt);
    } catch (err) {
      const blocked = affinity?.blockedFallbacks ?? [];
      if (!blocked.length || !(err instanceof RequestError) || !err.retryable) throw err;
      const served = this.ctx.routes[0].provider.id;
      throw new RequestError(
        503,
        'fallback_blocked_for_cache_consistency',
        `${err.message} This conversation's prompt cache is on ${served}, and the request asked for a sticky ` +
          `provider (stickyprovider: true), so it was not sent to ${ids(blocked)} instead. Retry later, or ` +
          'send stickyprovider: false to allow the fallback (its prompt cache starts cold).',
        { providerId: err.opts.providerId, retryAfterSeconds: err.opts.retryAfterSeconds },
      );
    }
  }

  /**
   * Charge what was used and release the rest. `usage` null = the upstream did not say: bill
   * our estimate of the prompt and of the text produced (documented in the README).
   */
  async settle(usage: Usage | null, producedText: string, status = 'completed'): Promise<{ usage: Usage; bill: Bill }> {
    const settled = await this.settleBy(usage, producedText, status, (cost, outcome) =>
      this.metered.settle(cost, outcome),
    );
    return settled!;
  }

  /**
   * settle(), with the answer stored by `write` in the same statement as the charge where a lease
   * pays (MeteredCall.settleWith). Undefined when the answer was already stored (another attempt):
   * nothing charged.
   */
  settleWith(
    usage: Usage | null,
    producedText: string,
    write: (holdId: string | null) => WriteWithCharge,
  ): Promise<{ usage: Usage; bill: Bill } | undefined> {
    return this.settleBy(usage, producedText, 'completed', (cost, outcome) =>
      this.metered.settleWith(cost, outcome, write),
    );
  }

  private async settleBy(
    usage: Usage | null,
    producedText: string,
    status: string,
    charge: (costUsd: bigint, outcome: Outcome) => Promise<Charge | undefined>,
  ): Promise<{ usage: Usage; bill: Bill } | undefined> {
    const route = this.metered.route!;
    const billed = this.billable(usage, producedText);
    const affinity = this.ctx.affinity;
    if (affinity && route.supportsCaching && (affinity.asked || billed.cachedTokens > 0 || billed.cacheWriteTokens > 0))
      rememberRoute(affinity.prefixes, route);
    const charged = await charge(this.costOf(route, billed), {
      status,
      inputUnits: billed.promptTokens,
      outputUnits: billed.completionTokens,
    });
    if (!charged) return undefined;
    if (status === 'completed') recordThroughput(route.id, billed.completionTokens, Date.now() - this.started);
    // billOf's object is this call's own: completed rather than copied (a copy on every answer)
    const bill: Bill = Object.assign(billOf(charged), {
      inputTokens: billed.promptTokens,
      outputTokens: billed.completionTokens,
    });
    // the prompt cache's share, at this call's price, when the answer read or wrote it
    if ((billed.cachedTokens > 0 || billed.cacheWriteTokens > 0) && !bill.billedToSubscription)
      bill.cacheCost = toDisplayNumber(this.priced(cacheCostOfUsage(route, billed)), 'USD');
    return { usage: billed, bill };
  }

  /** Nothing was produced: give the reservation back and record the failure. */
  fail(code: string): Promise<void> {
    return this.metered.fail(code);
  }
}
