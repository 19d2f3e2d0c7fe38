// The metered call: the one engine under every billed operation, synchronous or inside an
// activity (chat, messages, responses, completions, talk-to-gpt, speech, speech jobs, video jobs;
// next batch rows, images, embeddings, decisions). Its steps, in order:
//   cover    a synchronous call of a covered model is paid by the caller's subscription when it
//            can be: one operation of its allowance is spent instead of money
//            (ledger/allowance.ts), given back if the call fails or never reaches the caller;
//   reserve  otherwise the worst case over every route the call may end up on: a share of this process's
//            credit lease (synchronous text calls of keys without a daily USD cap), else one
//            exact hold (jobs, whose money must outlive the request, hold for `holdTtlSeconds`);
//   attempt  the routes in order, falling back to the next on a retryable failure, but only
//            until an attempt has produced its first byte for the caller (the surface's attempt
//            function decides what that is: a whole answer, a first stream event, a first audio
//            chunk, a submitted job);
//   settle   the actual cost on the route that answered, releasing the rest, or `fail` (nothing
//            reached the caller: the reservation goes back, nothing is charged);
//   record   one request record either way;
//   deliver  an answer the caller never receives is not charged: until `delivered()` says the
//            caller has it (a non-streaming answer written out, a stream's first byte), `abandon()`
//            gives the money back, a settled charge included (a refund entry).
// What differs per surface is declared, not re-implemented: how to price the worst case on a
// route, what the attempt is, what the answer cost, how a shortfall is explained. Money never moves
// anywhere else (activities/ledger/ holds the arithmetic and the idempotency).
import type { Payer } from '../core/caller.js';
import type { Route } from '../catalog/catalog.js';
import { isCallersOwn, RequestError, UPSTREAM_ERROR } from '../core/errors.js';
import { type Currency, formatAmount, toDisplayNumber } from '../core/money.js';
import { recordRequest } from './records.js';
import { type AllowanceClaim, type Bypass, claimAllowance, giveBack } from '../ledger/allowance.js';
import {
  chargeLeasedWith,
  writeWithoutCharge,
  releaseLeased,
  reserveFromLease,
  settleLeased,
  unchargeLeased,
  type LeasedFunds,
  type WriteWithCharge,
} from '../ledger/leases.js';
import { InsufficientFunds, refundCharges, release, reserve, settle, type Settlement } from '../ledger/ledger.js';
import {
  refundTeamBudget,
  releaseTeamBudget,
  reserveTeamBudget,
  settleTeamBudget,
  type TeamBilling,
  teamBillingOf,
} from '../ledger/teamBudget.js';

export interface MeteredCallSpec {
  caller: Payer;
  /** the request's id: the reservation's idempotency key, the charge's request id, the record's id */
  requestId: string;
  /** what the record calls this operation: 'chat', 'speech', 'video', … */
  surface: string;
  /** the catalog model id, for records and ledger reasons */
  modelId: string;
  /** the routes to try, in order (planned once, by activities/routing/planRoute.ts) */
  routes: Route[];
  /** the most this call can cost on a route, in nano-USD */
  worstCase(route: Route): bigint;
  /**
   * Why the balance does not cover the worst case, for the 402: `required` and `available` are
   * USD amounts as text. Say what the money is for and what the caller can change.
   */
  shortfall(required: string, available: string): string;
  /** a job's reservation must outlive the request that made it; unset for synchronous calls */
  holdTtlSeconds?: number;
  /**
   * May a synchronous call take its share of this process's credit lease (ledger/leases.ts)
   * instead of a hold of its own? Worth it where calls are many and small (text); the rest keep
   * one exact hold each, whose settlement reports the exact balance left.
   */
  creditLease?: boolean;
  /** the reservation's idempotency key (default `hold:<requestId>`) */
  holdKey?: string;
  /**
   * The call's answer is stored by `settleWith`, in the same statement as its charge (a batch
   * row): so even a job's call may pay from this process's credit lease, since no charge can be
   * left pending in memory when the process dies.
   */
  storesAnswer?: boolean;
  /** the caller asked for pay-as-you-go (`X-Billing-Mode`, completions' `billing_mode`) */
  forcePaygo?: boolean;
  /** the caller chose the provider (`X-Provider`, `provider: "id"`): billed pay-as-you-go (spec) */
  explicitProvider?: boolean;
}

/** What a settlement charged, exactly and as shown to callers. */
export interface Charge {
  currency: Currency;
  /** charged, in `currency`'s smallest unit */
  charged: bigint;
  /** what the answer cost, in nano-USD */
  costUsd: bigint;
  /** what the account can still spend, in `currency` (undefined when nothing was reserved) */
  available?: bigint;
  /** the team that paid (its owner's account), when the caller bills to one */
  team?: { uuid: string; name: string };
  /** the caller's subscription paid (one operation of its allowance; nothing charged) */
  subscription?: boolean;
}

/** A charge as the answers show it. */
export interface Bill {
  /** charged, in the paying currency */
  amount: number;
  currency: Currency;
  /** the cost in USD */
  cost: number;
  paymentSource: Currency;
  remainingBalance: number;
  /** the pricing extension's team fields, when a team paid */
  billedToTeam?: boolean;
  billedTeamId?: string;
  billedTeamName?: string;
  /** the pricing extension's subscription field, when the subscription paid */
  billedToSubscription?: boolean;
}

export function billOf(c: Charge): Bill {
  const bill: Bill = {
    amount: toDisplayNumber(c.charged, c.currency),
    currency: c.currency,
    cost: toDisplayNumber(c.costUsd, 'USD'),
    paymentSource: c.currency,
    remainingBalance: c.available === undefined ? 0 : toDisplayNumber(c.available, c.currency),
  };
  if (c.team) {
    bill.billedToTeam = true;
    bill.billedTeamId = c.team.uuid;
    bill.billedTeamName = c.team.name;
  }
  if (c.subscription) bill.billedToSubscription = true;
  return bill;
}

/** What a record says beside the money: how it ended and what was consumed. */
export interface Outcome {
  status?: string;
  inputUnits: number | null;
  outputUnits: number | null;
}

/**
 * Where a call's money stands: reserved (`open`), charged but not yet known to have reached the
 * caller (`settled`), charged for good (`delivered`), or given back (`failed`, `refunded`).
 */
type MoneyState = 'open' | 'settled' | 'delivered' | 'failed' | 'refunded';

export class MeteredCall {
  private state: MoneyState = 'open';
  /** what the settlement charged, to give back if the answer never reaches the caller */
  private charge?: Charge;
  private outcome?: Outcome;
  private holdId?: string;
  /** the reservation when it came from this process's credit lease (no round trip; leases.ts) */
  private leased?: LeasedFunds;
  private answered?: Route;
  /** the provider that served an adopted call (a job's worker knows it from the job's row) */
  private servedBy?: string;
  /** the team paying for this call, when its caller bills to one (synchronous calls only) */
  private team?: TeamBilling;
  /** the subscription's operation this call spent, when the subscription pays for it */
  private allowance?: AllowanceClaim;
  private readonly started = Date.now();

  constructor(readonly spec: MeteredCallSpec) {}

  /**
   * A call whose reservation was made earlier, elsewhere (a job's API request), to settle or fail
   * from a worker: `providerId` is the provider that served it, when known.
   */
  static adopted(a: {
    caller: Payer;
    requestId: string;
    surface: string;
    modelId: string;
    holdId: string | null | undefined;
    providerId?: string;
  }): MeteredCall {
    const call = new MeteredCall({
      caller: a.caller,
      requestId: a.requestId,
      surface: a.surface,
      modelId: a.modelId,
      routes: [],
      worstCase: () => 0n,
      shortfall: () => 'nothing more is reserved for a job that is already running',
    });
    call.adoptReservation(a.holdId);
    call.servedBy = a.providerId;
    return call;
  }

  /** the dearest route's worst case: what is reserved */
  worstCase(): bigint {
    let worst = 0n;
    for (const r of this.spec.routes) {
      const c = this.spec.worstCase(r);
      if (c > worst) worst = c;
    }
    return worst;
  }

  /**
   * Reserve the worst case, unless the caller's subscription pays (then nothing is reserved). A
   * free call reserves nothing; a shortfall is a 402 that says why.
   */
  async reserve(): Promise<{ currency: Currency; amount: bigint; available: bigint } | undefined> {
    const { caller, requestId, holdTtlSeconds } = this.spec;
    this.allowance = await claimAllowance({ caller, modelId: this.spec.modelId, bypass: this.bypass() });
    if (this.allowance) return undefined;
    // Team billing covers synchronous calls; a job's money is its caller's own (README, Teams).
    if (caller.userId != null && holdTtlSeconds === undefined) await this.billToTeam(caller.userId);
    const worst = this.worstCase();
    if (worst === 0n) return undefined;
    if (this.team) return this.reserveForTeam(this.team, caller.userId!, worst);
    // Keys with a daily USD cap are checked exactly, so they never lease; jobs never lease either
    // (their reservation outlives this process's lease bookkeeping), unless their answer and its
    // charge are written together (storesAnswer).
    if (
      this.spec.creditLease &&
      (holdTtlSeconds === undefined || this.spec.storesAnswer) &&
      caller.dailyUsdLimit == null
    ) {
      this.leased = await reserveFromLease(caller.accountId, worst);
      if (this.leased) return { currency: 'USD', amount: worst, available: 0n };
    }
    try {
      const hold = await reserve({
        accountId: caller.accountId,
        usd: worst,
        idempotencyKey: this.spec.holdKey ?? `hold:${requestId}`,
        requestId,
        apiKeyId: caller.keyId ?? undefined,
        ttlSeconds: holdTtlSeconds,
      });
      this.holdId = hold.id;
      return { currency: hold.currency, amount: hold.amount, available: hold.available };
    } catch (err) {
      if (!(err instanceof InsufficientFunds)) throw err;
      throw new RequestError(
        402,
        'insufficient_balance',
        `Insufficient balance: ${this.spec.shortfall(formatAmount(err.requiredUsd, 'USD'), formatAmount(err.availableUsd, 'USD'))}`,
        {
          details: {
            requiredBalance: toDisplayNumber(err.requiredUsd, 'USD'),
            availableBalance: toDisplayNumber(err.availableUsd, 'USD'),
          },
        },
      );
    }
  }

  /** Why the subscription may not pay for this call, whatever it covers (spec: Authentication, Chat). */
  private bypass(): Bypass | undefined {
    if (this.spec.forcePaygo) return 'paygo';
    if (this.spec.explicitProvider) return 'provider';
    // a job's reservation outlives the request (README, Subscriptions)
    if (this.spec.holdTtlSeconds !== undefined) return 'job';
    return undefined;
  }

  /** Does the caller bill to a team? Then the team must be active and allow the model (else 403). */
  private async billToTeam(userId: number): Promise<void> {
    const team = await teamBillingOf(userId);
    if (!team) return;
    if (team.status !== 'active') {
      throw new RequestError(
        403,
        `team_${team.status}`,
        `Your requests are billed to the team "${team.teamName}", which is ${team.status}. Ask its owner or an ` +
          'admin to make it active, or turn bill_to_team off to pay from your own balance.',
        { details: { teamId: team.teamUuid, reason: `team_${team.status}` } },
      );
    }
    if (team.allowedModels?.[this.spec.modelId] === false) {
      throw new RequestError(
        403,
        'model_not_allowed',
        `The team "${team.teamName}" does not allow the model '${this.spec.modelId}' for requests billed to it.`,
        { param: 'model', details: { teamId: team.teamUuid, model: this.spec.modelId } },
      );
    }
    this.team = team;
  }

  /**
   * Reserve a team-billed call: first its claim on the member's and the team's monthly budgets
   * (one conditional statement, teamBudget.ts), then an exact hold on the owner's account, whose
   * charge entry names the team and the member. A refused hold gives the claim back.
   */
  private async reserveForTeam(team: TeamBilling, userId: number, worst: bigint) {
    const { requestId } = this.spec;
    const verdict = await reserveTeamBudget(team, userId, requestId, worst);
    if (!verdict.ok) {
      const whose = verdict.scope === 'member' ? 'your monthly limit in' : 'the monthly limit of';
      throw new RequestError(
        402,
        'team_usage_limit_exceeded',
        `This request may cost up to $${formatAmount(worst, 'USD')}, which would pass ${whose} the team ` +
          `"${team.teamName}" ($${formatAmount(verdict.used, 'USD')} of $${formatAmount(verdict.limit, 'USD')} ` +
          'used or reserved this month). Lower max_tokens, wait for next month, or ask the team to raise the limit.',
        {
          details: {
            scope: verdict.scope,
            limit: toDisplayNumber(verdict.limit, 'USD'),
            used: toDisplayNumber(verdict.used, 'USD'),
            teamId: team.teamUuid,
          },
        },
      );
    }
    try {
      const hold = await reserve({
        accountId: team.ownerAccountId,
        usd: worst,
        idempotencyKey: this.spec.holdKey ?? `hold:${requestId}`,
        requestId,
        apiKeyId: this.spec.caller.keyId ?? undefined,
        team: { teamId: team.teamId, actorUserId: userId },
      });
      this.holdId = hold.id;
      return { currency: hold.currency, amount: hold.amount, available: hold.available };
    } catch (err) {
      await releaseTeamBudget(requestId);
      if (!(err instanceof InsufficientFunds)) throw err;
      throw new RequestError(
        402,
        'insufficient_balance',
        `Insufficient balance: the team "${team.teamName}" pays for your requests, and its owner's account has ` +
          `$${formatAmount(err.availableUsd, 'USD')} available for a request that may cost up to ` +
          `$${formatAmount(err.requiredUsd, 'USD')}.`,
        {
          details: {
            requiredBalance: toDisplayNumber(err.requiredUsd, 'USD'),
            availableBalance: toDisplayNumber(err.availableUsd, 'USD'),
            teamId: team.teamUuid,
          },
        },
      );
    }
  }

  /** the exact hold, for work that continues elsewhere (a job's worker settles it later) */
  get reservation(): string | undefined {
    return this.holdId;
  }

  /** Continue a call whose reservation was made earlier, by another process (a job's worker). */
  adoptReservation(holdId: string | undefined | null): void {
    this.holdId = holdId ?? undefined;
  }

  /** The answer was made earlier, on `route` (by an attempt of a job that did not live to settle it). */
  resumeAnswered(route: Route): void {
    this.answered = route;
  }

  /** the route that answered (after a successful attempt) */
  get route(): Route | undefined {
    return this.answered;
  }

  /**
   * Try the routes in order until `attempt` succeeds on one. A retryable failure moves on to the
   * next route; anything else, or an aborted signal, stops. Nothing is settled or released here:
   * the caller settles what the answer cost, or fails the call.
   */
  async attempt<T>(signal: AbortSignal, attempt: (route: Route) => Promise<T>): Promise<{ value: T; route: Route }> {
    const failures: RequestError[] = [];
    for (const route of this.spec.routes) {
      try {
        const value = await attempt(route);
        this.answered = route;
        return { value, route };
      } catch (err) {
        const e = asUpstreamFailure(route, err);
        this.logFailure(e);
        failures.push(e);
        if (!e.retryable || signal.aborted) break;
      }
    }
    throw exhausted(this.spec.modelId, failures, this.spec.requestId);
  }

  /**
   * A failure after the caller had the first byte (a stream that broke midway): logged for the
   * operator like any upstream failure, and told to the caller without the upstream's words.
   */
  brokeMidway(err: unknown): RequestError {
    const e =
      err instanceof RequestError
        ? err
        : new RequestError(502, (err as { code?: string }).code ?? UPSTREAM_ERROR, 'The stream broke after it began.', {
            providerId: this.answered?.provider.id ?? this.servedBy,
            detail: String((err as Error)?.message ?? err),
          });
    this.logFailure(e);
    if (!pointsToLog(e)) return e;
    return new RequestError(e.status, e.code, e.message + logPointer(this.spec.requestId), e.opts);
  }

  /** The operator's copy of an upstream failure: what the upstream said, which the caller is not shown. */
  private logFailure(e: RequestError): void {
    if (e.status === 499 || !e.opts.providerId) return; // the caller's own abort; the gateway's own refusal
    const body = e.opts.upstreamBody ? ` | body: ${e.opts.upstreamBody.slice(0, 1000)}` : '';
    console.warn(
      `[upstream] ${this.spec.requestId} ${e.opts.providerId} ${e.status} ${e.code}: ${e.opts.detail ?? e.message}${body}`,
    );
  }

  /** Charge `costUsd` on the answering route and release the rest; record the request. */
  async settle(costUsd: bigint, outcome: Outcome): Promise<Charge> {
    const { caller, requestId } = this.spec;
    const reason = this.chargeReason();
    if (this.allowance)
      return this.settled(outcome, {
        currency: 'USD',
        charged: 0n,
        costUsd: 0n,
        available: this.allowance.available,
        subscription: true,
      });
    let s: Settlement | undefined;
    if (this.leased) s = settleLeased(this.leased, { usd: costUsd, requestId, apiKeyId: caller.keyId, reason });
    else if (this.holdId) s = await settle({ holdId: this.holdId, usd: costUsd, reason });
    const charge: Charge = {
      currency: s?.currency ?? 'USD',
      charged: s?.charged ?? 0n,
      costUsd,
      available: s?.available,
    };
    if (this.team) {
      // the budgets count USD: the charge, or what an XNO charge was worth
      await settleTeamBudget(requestId, charge.currency === 'USD' ? charge.charged : costUsd);
      charge.team = { uuid: this.team.teamUuid, name: this.team.teamName };
    }
    return this.settled(outcome, charge);
  }

  /** What the charge's ledger entry says it was for. */
  private chargeReason(): string {
    const providerId = this.answered?.provider.id ?? this.servedBy;
    if (!providerId) throw new Error(`${this.spec.requestId}: settle before any route answered`);
    const { caller, surface, modelId } = this.spec;
    // a team-billed charge says whose it was in the owner's ledger too (the entry's actor_user_id)
    return this.team
      ? `${surface} ${modelId} via ${providerId}, by user ${caller.userId} for team "${this.team.teamName}"`
      : `${surface} ${modelId} via ${providerId}`;
  }

  /**
   * Store the answer (`write`, see WriteWithCharge) and charge `costUsd` for it. Paid from a
   * lease: one statement does both. Paid from an exact hold: the write, then the settlement (a
   * retry finds the stored answer and settles its hold; activities/batches/run.ts). Returns
   * undefined when `write` found the answer already stored (by another attempt of the same work):
   * nothing is charged here, and an exact hold, shared with that attempt by its key, is left open
   * for it.
   */
  async settleWith(
    costUsd: bigint,
    outcome: Outcome,
    write: (holdId: string | null) => WriteWithCharge,
  ): Promise<Charge | undefined> {
    for (let tries = 0; this.leased; tries++) {
      if (tries === 3) throw new Error(`${this.spec.requestId}: the credit leases it took kept expiring`);
      const { caller, requestId } = this.spec;
      const done = await chargeLeasedWith(
        this.leased,
        { usd: costUsd, requestId, apiKeyId: caller.keyId, reason: this.chargeReason() },
        write(null),
      );
      if (done) {
        if (!done.written) return undefined;
        const s = done.settlement;
        return this.settled(outcome, { currency: s.currency, charged: s.charged, costUsd, available: s.available });
      }
      // the lease was given back while this process stalled: reserve again (another lease, or a hold)
      this.leased = undefined;
      await this.reserve();
    }
    if (!(await writeWithoutCharge(write(this.holdId ?? null)))) return undefined;
    return this.settle(costUsd, outcome);
  }

  private settled(outcome: Outcome, charge: Charge): Charge {
    this.state = 'settled';
    this.charge = charge;
    this.outcome = outcome;
    this.record(outcome.status ?? 'completed', outcome, charge, null);
    return charge;
  }

  /** Charged, and not yet known to have reached the caller (see delivered() and abandon()). */
  get awaitingDelivery(): boolean {
    return this.state === 'settled';
  }

  /** Charged, and known to have reached the caller. */
  get isDelivered(): boolean {
    return this.state === 'delivered';
  }

  /** The caller has the answer (or its first byte): the charge stands, abandon() no longer undoes it. */
  delivered(): void {
    if (this.state === 'settled') this.state = 'delivered';
  }

  /** Nothing reached the caller: give the reservation back and record the failure. */
  async fail(code: string): Promise<void> {
    this.state = 'failed';
    if (this.allowance) await giveBack(this.allowance);
    if (this.leased) releaseLeased(this.leased);
    else if (this.holdId) await release(this.holdId);
    if (this.team) await releaseTeamBudget(this.spec.requestId);
    this.record('failed', { inputUnits: null, outputUnits: null }, null, code);
  }

  /**
   * A later attempt of the same work will carry this call on (a batch row the engine retries): an
   * exact hold stays open for it (it finds the hold by key), a share of this process's lease, which
   * no other attempt can find, goes back to the lease now.
   */
  suspend(): void {
    if (this.state !== 'open' || !this.leased) return;
    releaseLeased(this.leased);
    this.leased = undefined;
  }

  /**
   * The answer will not reach the caller (something failed after the money moved, or the caller
   * left before it was written): release the reservation, or refund what the settlement charged.
   * Safe to call in any state and more than once; a delivered charge stands.
   */
  async abandon(code: string): Promise<void> {
    if (this.state === 'open') return this.fail(code);
    if (this.state !== 'settled') return;
    this.state = 'refunded';
    const { requestId, surface, modelId, caller } = this.spec;
    const charge = this.charge!;
    if (this.allowance) await giveBack(this.allowance);
    const reason = `${surface} ${modelId}: the answer did not reach the caller (${code})`;
    // A leased charge still waiting for its batch is simply taken back; a written one is refunded.
    const written = this.leased ? await unchargeLeased(this.leased, requestId) : this.holdId !== undefined;
    if (written && charge.charged > 0n) {
      const keys = this.leased ? [`charge:${requestId}`] : [`charge:${this.holdId}`, `overage:${this.holdId}`];
      // the key's daily spend goes down by what it went up by: the charge (USD), or its USD cost (XNO)
      const keyUsd = charge.currency === 'USD' ? charge.charged : charge.costUsd;
      await refundCharges({ keys, reason, apiKeyId: caller.keyId, keyUsd });
    }
    if (this.team) await refundTeamBudget(requestId);
    this.record('failed', this.outcome ?? { inputUnits: null, outputUnits: null }, null, code);
  }

  /** `work`'s result; if it fails, nothing reached the caller: release (with the failure's code, or `code`) and rethrow. */
  async orRelease<T>(work: Promise<T>, code?: string): Promise<T> {
    try {
      return await work;
    } catch (err) {
      await this.fail(code ?? (err as { code?: string }).code ?? 'error');
      throw err;
    }
  }

  /** `work`'s result; if it fails, the answer will not reach the caller: abandon(code) and rethrow. */
  async orAbandon<T>(work: Promise<T>, code: string): Promise<T> {
    try {
      return await work;
    } catch (err) {
      await this.abandon(code);
      throw err;
    }
  }

  private record(status: string, o: Outcome, charge: Charge | null, errorCode: string | null): void {
    const { caller, requestId, surface, modelId } = this.spec;
    recordRequest({
      id: requestId,
      accountId: caller.accountId,
      apiKeyId: caller.keyId,
      surface,
      model: modelId,
      providerId: this.answered?.provider.id ?? this.servedBy ?? null,
      status,
      inputTokens: o.inputUnits,
      outputTokens: o.outputUnits,
      currency: charge?.currency ?? null,
      cost: charge?.charged ?? null,
      holdId: this.holdId ?? this.leased?.lease.id ?? null,
      errorCode,
      startedAt: new Date(this.started),
    });
  }
}

/**
 * How an upstream's failure reads to our caller. Their credentials problem is not the caller's
 * (401/403/402 become 502), nor is a 404 (a model or endpoint the provider does not serve: the
 * catalog's business), a timeout is a 504, their rate limit stays a 429 with its Retry-After, their
 * judgement of the request itself (400/413/422) stays a 400.
 */
function callerStatus(upstream: number): number {
  if (upstream === 499) return 499;
  if (upstream === 429) return 429;
  if (upstream === 408 || upstream === 504) return 504;
  if (isCallersOwn(upstream)) return 400;
  return 502;
}

/**
 * Why every attempt failed, as one error for the caller. `retryable`: every failure was one that
 * a later attempt may get past (a job's engine retries then).
 */
function exhausted(modelId: string, failures: RequestError[], requestId: string): RequestError {
  const last = failures.at(-1);
  if (!last) return new RequestError(503, 'model_not_available', `Model '${modelId}' has no configured provider here.`);
  const retryable = failures.every((f) => f.retryable);
  const pointer = failures.some(pointsToLog) ? logPointer(requestId) : '';
  if (failures.length === 1) {
    const status = callerStatus(last.status);
    const named = last.code !== UPSTREAM_ERROR ? last.code : undefined;
    const code =
      named ?? (status === 400 ? 'upstream_rejected_request' : status === 429 ? 'rate_limit_exceeded' : UPSTREAM_ERROR);
    return new RequestError(status, code, last.message + pointer, {
      retryAfterSeconds: last.opts.retryAfterSeconds,
      retryable,
      providerId: last.opts.providerId,
    });
  }
  const summary = failures.map((f) => f.message).join(' ');
  return new RequestError(502, 'all_fallbacks_failed', `Every provider failed. ${summary}${pointer}`, { retryable });
}

/**
 * An upstream failure reads to the caller as the provider and the kind of failure (upstreamError),
 * plus the request id under which the operator's log has the provider's own words. A refusal of
 * the caller's own request already carries them; an abort is the caller's own doing.
 */
const pointsToLog = (e: RequestError) => !!e.opts.providerId && !isCallersOwn(e.status) && e.status !== 499;
const logPointer = (requestId: string) =>
  ` The provider's own reply is in the gateway's log under request id ${requestId}.`;

/** An adapter bug is not the caller's business: log it, answer a generic provider failure. */
function asUpstreamFailure(route: Route, err: unknown): RequestError {
  if (err instanceof RequestError) return err;
  console.error(`[metering] adapter for ${route.provider.id} failed unexpectedly:`, err);
  return new RequestError(502, 'provider_error', `${route.provider.id} failed unexpectedly`, {
    providerId: route.provider.id,
  });
}
