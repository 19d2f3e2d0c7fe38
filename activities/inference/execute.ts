// Runs one inference request over its planned routes, with the money around it: reserve the
// worst case, call the first route, fall back to the next on a retryable failure BEFORE the first
// byte reaches the caller (never after), settle the real cost, release on failure. Surfaces
// (chat, messages, responses, completions) call this and only translate.
import type { Route } from '../catalog/catalog.js';
import type { Caller } from '../accounts/keys.js';
import { config, providerEnv } from '../config.js';
import { InsufficientFunds, release, reserve, settle, type Hold, type Settlement } from '../ledger/ledger.js';
import { releaseLeased, reserveFromLease, settleLeased, type LeasedFunds } from '../ledger/leases.js';
import { formatAmount, toDisplayNumber } from '../core/money.js';
import { costOfUsage, worstCaseCost } from '../billing/pricing.js';
import { adapterFor } from '../providers/index.js';
import { type NativePassThrough, type ProviderTarget } from '../providers/types.js';
import { recordLatency, recordThroughput } from '../routing/stats.js';
import { recordRequest } from './records.js';
import type { InferenceRequest, InferenceResult, NativeRequest, StreamEvent, Usage } from '../core/types.js';
import { RequestError, UPSTREAM_ERROR, upstreamError } from '../core/errors.js';

function paymentRequired(requiredUsd: bigint, availableUsd: bigint): RequestError {
  return new RequestError(
    402,
    'insufficient_balance',
    `Insufficient balance: this request may cost up to $${formatAmount(requiredUsd, 'USD')} and $${formatAmount(availableUsd, 'USD')} is available. ` +
      'Add funds, or lower max_tokens to reserve less.',
    {
      details: {
        requiredBalance: toDisplayNumber(requiredUsd, 'USD'),
        availableBalance: toDisplayNumber(availableUsd, 'USD'),
      },
    },
  );
}

export interface Bill {
  /** charged, in the paying currency */
  amount: number;
  currency: 'USD' | 'XNO';
  /** the cost in USD */
  cost: number;
  paymentSource: 'USD' | 'XNO';
  remainingBalance: number;
  inputTokens: number;
  outputTokens: number;
}

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
  /** caller headers meant for one protocol's upstreams only, e.g. { anthropic: { 'anthropic-beta': ... } } */
  passHeaders?: Record<string, Record<string, string>>;
  /** the caller's body, for routes whose upstream speaks its format (pass-through) */
  native?: NativeRequest;
}

/** A route's options over its provider's, merged once per route (a catalog reload makes new routes). */
const mergedOptions = new WeakMap<Route, Record<string, unknown>>();

export function targetFor(route: Route, passHeaders?: Record<string, Record<string, string>>): ProviderTarget {
  const env = providerEnv(route.provider.id);
  let options = mergedOptions.get(route);
  if (!options) mergedOptions.set(route, (options = { ...route.provider.options, ...route.options }));
  return {
    providerId: route.provider.id,
    baseUrl: env.baseUrl ?? route.provider.baseUrl ?? '',
    apiKey: env.apiKey,
    options,
    headers: passHeaders?.[route.provider.protocol],
  };
}

/**
 * How an upstream's failure reads to our caller. Their credentials problem is not the caller's
 * (401/403/402 become 502), a timeout is a 504, their rate limit stays a 429 with its Retry-After,
 * their judgement of the request itself (400/404/413/422) stays a 400.
 */
function callerStatus(upstream: number): number {
  if (upstream === 499) return 499;
  if (upstream === 429) return 429;
  if (upstream === 408 || upstream === 504) return 504;
  if (upstream === 400 || upstream === 404 || upstream === 413 || upstream === 422) return 400;
  return 502;
}

/** Why every attempt failed, as one error for the caller. */
function exhausted(failures: RequestError[]): RequestError {
  const last = failures[failures.length - 1];
  if (failures.length === 1) {
    const status = callerStatus(last.status);
    const code =
      (last.code !== UPSTREAM_ERROR ? last.code : undefined) ??
      (status === 400 ? 'upstream_rejected_request' : status === 429 ? 'rate_limit_exceeded' : 'upstream_error');
    return new RequestError(status, code, last.message, { retryAfterSeconds: last.opts.retryAfterSeconds });
  }
  const summary = failures.map((f) => f.message).join('; ');
  return new RequestError(502, 'all_fallbacks_failed', `Every provider failed: ${summary}`);
}

/** An adapter bug is not the caller's business: log it, answer a generic provider failure. */
function asUpstreamError(route: Route, err: unknown): RequestError {
  if (err instanceof RequestError) return err;
  console.error(`[inference] adapter for ${route.provider.id} failed unexpectedly:`, err);
  return upstreamError(`${route.provider.id} failed unexpectedly`, 502, false, {
    code: 'provider_error',
    providerId: route.provider.id,
  });
}

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
  private holdId?: string;
  /** the reservation when it came from this process's credit lease (no round trip; leases.ts) */
  private leased?: LeasedFunds;
  private route?: Route;
  private readonly started = Date.now();

  constructor(readonly ctx: CallContext) {}

  /** Reserve the worst case over every route the call may end up on. */
  async reserve(): Promise<void> {
    const max = this.ctx.request.maxTokens;
    const worst = this.ctx.routes.reduce((m, r) => {
      const c = worstCaseCost(r, this.ctx.promptTokenEstimate, max);
      return c > m ? c : m;
    }, 0n);
    if (worst === 0n) return; // a free model: nothing to hold
    // Synchronous requests of keys without a daily USD cap (which must be checked exactly) take
    // their share of a credit lease when the account can afford one; otherwise one hold each.
    if (this.ctx.holdTtlSeconds === undefined && this.ctx.caller.dailyUsdLimit == null) {
      this.leased = await reserveFromLease(this.ctx.caller.accountId, worst);
      if (this.leased) return;
    }
    try {
      const hold: Hold = await reserve({
        accountId: this.ctx.caller.accountId,
        usd: worst,
        idempotencyKey: `hold:${this.ctx.requestId}`,
        requestId: this.ctx.requestId,
        apiKeyId: this.ctx.caller.keyId,
        ttlSeconds: this.ctx.holdTtlSeconds,
      });
      this.holdId = hold.id;
    } catch (err) {
      if (err instanceof InsufficientFunds) throw paymentRequired(err.requiredUsd, err.availableUsd);
      throw err;
    }
  }

  /** The reservation, for work that continues elsewhere (a background job settles it later). */
  get reservation(): string | undefined {
    return this.holdId;
  }

  /** Continue a call whose reservation was made earlier, by another process (a background job). */
  adoptReservation(holdId: string | undefined): void {
    this.holdId = holdId;
  }

  get chosenRoute(): Route | undefined {
    return this.route;
  }

  /**
   * The route's pass-through, when the caller's body can go to it as written: its upstream speaks
   * the caller's format and takes this request without translation. Decided per route, so a
   * fallback to another protocol is translated.
   */
  private passThroughFor(route: Route, req: InferenceRequest, target: ProviderTarget): NativePassThrough | undefined {
    const native = adapterFor(route).native;
    if (!config.passThrough || !this.ctx.native || native?.format !== this.ctx.native.format) return undefined;
    return native.accepts(req, target) ? native : undefined;
  }

  /** Non-streaming: try the routes in order. A passed-through answer carries `result.native`. */
  async complete(signal: AbortSignal): Promise<{ result: InferenceResult; route: Route }> {
    const failures: RequestError[] = [];
    for (const route of this.ctx.routes) {
      const t0 = Date.now();
      try {
        const req = { ...this.ctx.request, model: route.upstreamModel };
        const target = targetFor(route, this.ctx.passHeaders);
        const native = this.passThroughFor(route, req, target);
        const result = native
          ? await native.complete(this.ctx.native!, req, target, signal)
          : await adapterFor(route).complete(req, target, signal);
        this.route = route;
        recordLatency(route.id, Date.now() - t0);
        if (result.usage) recordThroughput(route.id, result.usage.completionTokens, Date.now() - t0);
        return { result, route };
      } catch (err) {
        const e = asUpstreamError(route, err);
        failures.push(e);
        if (!e.retryable || signal.aborted) break;
      }
    }
    throw exhausted(failures);
  }

  /**
   * Streaming: open the first route that yields a first event. Returns that event and the rest of
   * the stream; from here on there is no fallback (bytes have reached the caller). `passedThrough`:
   * the stream relays the upstream's own frames (`native` events), which the surface writes as
   * they came.
   */
  async openStream(signal: AbortSignal): Promise<{
    route: Route;
    first: StreamEvent | undefined;
    rest: AsyncIterator<StreamEvent>;
    passedThrough: boolean;
  }> {
    const failures: RequestError[] = [];
    for (const route of this.ctx.routes) {
      const t0 = Date.now();
      const req = { ...this.ctx.request, model: route.upstreamModel };
      const target = targetFor(route, this.ctx.passHeaders);
      let it: AsyncIterator<StreamEvent>;
      try {
        const native = this.passThroughFor(route, req, target);
        it = (
          native ? native.stream(this.ctx.native!, req, target, signal) : adapterFor(route).stream(req, target, signal)
        )[Symbol.asyncIterator]();
      } catch (err) {
        failures.push(asUpstreamError(route, err));
        if (!failures.at(-1)!.retryable || signal.aborted) break;
        continue;
      }
      try {
        const first = await it.next();
        this.route = route;
        recordLatency(route.id, Date.now() - t0);
        // an upstream that ignored `stream` and answered in one piece is replayed as events, not frames
        const firstEvent = first.done ? undefined : first.value;
        return { route, first: firstEvent, rest: it, passedThrough: firstEvent?.type === 'native' };
      } catch (err) {
        const e = asUpstreamError(route, err);
        failures.push(e);
        if (!e.retryable || signal.aborted) break;
      }
    }
    throw exhausted(failures);
  }

  /**
   * Charge what was used and release the rest. `usage` null = the upstream did not say: bill
   * our estimate of the prompt and of the text produced (documented in the README).
   */
  async settle(usage: Usage | null, producedText: string, status = 'completed'): Promise<{ usage: Usage; bill: Bill }> {
    const route = this.route!;
    const billed = usage ?? estimatedUsage(this.ctx.promptTokenEstimate, producedText);
    const cost = costOfUsage(route, billed);
    let s: Settlement | undefined;
    const reason = `${this.ctx.surface} ${this.ctx.modelId} via ${route.provider.id}`;
    if (this.leased)
      s = settleLeased(this.leased, {
        usd: cost,
        requestId: this.ctx.requestId,
        apiKeyId: this.ctx.caller.keyId,
        reason,
      });
    else if (this.holdId) s = await settle({ holdId: this.holdId, usd: cost, reason });
    const currency = s?.currency ?? 'USD';
    const charged = s?.charged ?? 0n;
    const bill: Bill = {
      amount: toDisplayNumber(charged, currency),
      currency,
      cost: toDisplayNumber(cost, 'USD'),
      paymentSource: currency,
      remainingBalance: s ? toDisplayNumber(s.available, currency) : 0,
      inputTokens: billed.promptTokens,
      outputTokens: billed.completionTokens,
    };
    if (status === 'completed') recordThroughput(route.id, billed.completionTokens, Date.now() - this.started);
    void recordRequest({
      id: this.ctx.requestId,
      accountId: this.ctx.caller.accountId,
      apiKeyId: this.ctx.caller.keyId,
      surface: this.ctx.surface,
      model: this.ctx.modelId,
      providerId: route.provider.id,
      status,
      inputTokens: billed.promptTokens,
      outputTokens: billed.completionTokens,
      currency,
      cost: charged,
      holdId: this.holdId ?? this.leased?.lease.id ?? null,
      errorCode: null,
      startedAt: new Date(this.started),
    });
    return { usage: billed, bill };
  }

  /** Nothing was produced: give the reservation back and record the failure. */
  async fail(code: string): Promise<void> {
    if (this.leased) releaseLeased(this.leased);
    else if (this.holdId) await release(this.holdId);
    void recordRequest({
      id: this.ctx.requestId,
      accountId: this.ctx.caller.accountId,
      apiKeyId: this.ctx.caller.keyId,
      surface: this.ctx.surface,
      model: this.ctx.modelId,
      providerId: this.route?.provider.id ?? null,
      status: 'failed',
      inputTokens: null,
      outputTokens: null,
      currency: null,
      cost: null,
      holdId: this.holdId ?? this.leased?.lease.id ?? null,
      errorCode: code,
      startedAt: new Date(this.started),
    });
  }
}
