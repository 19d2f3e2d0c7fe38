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
// anywhere else (activities/ledger/ holds the arithmetic and the idempotency). Beside this file: what
// a surface declares (callSpec.ts), what pays and how it is reserved (funds.ts), how failures read
// (upstreamFailures.ts).
import type { Route } from '../catalog/catalog.js';
import type { RequestError } from '../core/errors.js';
import { type Currency, toDisplayNumber } from '../core/money.js';
import { giveBack } from '../ledger/allowance.js';
import { chargeLeasedWith, writeWithoutCharge } from '../ledger/leaseWrites.js';
import type { WriteWithCharge } from '../ledger/leases.js';
import { releaseLeased, settleLeased, unchargeLeased } from '../ledger/leases.js';
import { refundCharges } from '../ledger/refunds.js';
import { release, type Settlement, settle } from '../ledger/holds.js';
import { refundTeamBudget, releaseTeamBudget, settleTeamBudget } from '../ledger/teamBudget.js';
import type { Payer } from '../core/caller.js';
import type { MeteredCallSpec } from './callSpec.js';
import { type Funds, type Reserved, reserveFunds } from './funds.js';
import { recordRequest } from './records.js';
import { asUpstreamFailure, exhausted, logUpstreamFailure, midwayFailure } from './upstreamFailures.js';

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
  /** the pricing extension's `cacheCost` (USD): the prompt cache's share of `cost`, when the answer used it */
  cacheCost?: number;
  /** the pricing extension's `error`: why a stream that was billed for what it produced broke */
  error?: { status: number; message: string };
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
  /** what pays for this call: the subscription, a team, a share of the credit lease, a hold (funds.ts) */
  private readonly funds: Funds = {};
  private answered?: Route;
  /** the provider that served an adopted call (a job's worker knows it from the job's row) */
  private servedBy?: string;
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
   * free call reserves nothing; a shortfall is a 402 that says why (funds.ts).
   */
  reserve(): Promise<Reserved | undefined> {
    return reserveFunds(this.spec, this.funds, () => this.worstCase());
  }

  /** the exact hold, for work that continues elsewhere (a job's worker settles it later) */
  get reservation(): string | undefined {
    return this.funds.holdId;
  }

  /** Continue a call whose reservation was made earlier, by another process (a job's worker). */
  adoptReservation(holdId: string | undefined | null): void {
    this.funds.holdId = holdId ?? undefined;
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
        logUpstreamFailure(this.spec.requestId, e);
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
    return midwayFailure(err, this.answered?.provider.id ?? this.servedBy, this.spec.requestId);
  }

  /** Charge `costUsd` on the answering route and release the rest; record the request. */
  async settle(costUsd: bigint, outcome: Outcome): Promise<Charge> {
    const { caller, requestId } = this.spec;
    const { allowance, leased, holdId, team } = this.funds;
    const reason = this.chargeReason();
    if (allowance)
      return this.settled(outcome, {
        currency: 'USD',
        charged: 0n,
        costUsd: 0n,
        available: allowance.available,
        subscription: true,
      });
    let s: Settlement | undefined;
    if (leased) s = settleLeased(leased, { usd: costUsd, requestId, apiKeyId: caller.keyId, reason });
    else if (holdId) s = await settle({ holdId, usd: costUsd, reason });
    const charge: Charge = {
      currency: s?.currency ?? 'USD',
      charged: s?.charged ?? 0n,
      costUsd,
      available: s?.available,
    };
    if (team) {
      // the budgets count USD: the charge, or what an XNO charge was worth
      await settleTeamBudget(requestId, charge.currency === 'USD' ? charge.charged : costUsd);
      charge.team = { uuid: team.teamUuid, name: team.teamName };
    }
    return this.settled(outcome, charge);
  }

  /** What the charge's ledger entry says it was for. */
  private chargeReason(): string {
    const providerId = this.answered?.provider.id ?? this.servedBy;
    if (!providerId) throw new Error(`${this.spec.requestId}: settle before any route answered`);
    const { caller, surface, modelId } = this.spec;
    // a team-billed charge says whose it was in the owner's ledger too (the entry's actor_user_id)
    return this.funds.team
      ? `${surface} ${modelId} via ${providerId}, by user ${caller.userId} for team "${this.funds.team.teamName}"`
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
    for (let tries = 0; this.funds.leased; tries++) {
      if (tries === 3) throw new Error(`${this.spec.requestId}: the credit leases it took kept expiring`);
      const { caller, requestId } = this.spec;
      const done = await chargeLeasedWith(
        this.funds.leased,
        { usd: costUsd, requestId, apiKeyId: caller.keyId, reason: this.chargeReason() },
        write(null),
      );
      if (done) {
        if (!done.written) return undefined;
        const s = done.settlement;
        return this.settled(outcome, { currency: s.currency, charged: s.charged, costUsd, available: s.available });
      }
      // the lease was given back while this process stalled: reserve again (another lease, or a hold)
      this.funds.leased = undefined;
      await this.reserve();
    }
    if (!(await writeWithoutCharge(write(this.funds.holdId ?? null)))) return undefined;
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
    const { allowance, leased, holdId, team } = this.funds;
    if (allowance) await giveBack(allowance);
    if (leased) releaseLeased(leased);
    else if (holdId) await release(holdId);
    if (team) await releaseTeamBudget(this.spec.requestId);
    this.record('failed', { inputUnits: null, outputUnits: null }, null, code);
  }

  /**
   * A later attempt of the same work will carry this call on (a batch row the engine retries): an
   * exact hold stays open for it (it finds the hold by key), a share of this process's lease, which
   * no other attempt can find, goes back to the lease now.
   */
  suspend(): void {
    if (this.state !== 'open' || !this.funds.leased) return;
    releaseLeased(this.funds.leased);
    this.funds.leased = undefined;
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
    const { allowance, leased, holdId, team } = this.funds;
    const charge = this.charge!;
    if (allowance) await giveBack(allowance);
    const reason = `${surface} ${modelId}: the answer did not reach the caller (${code})`;
    // A leased charge still waiting for its batch is simply taken back; a written one is refunded.
    const written = leased ? await unchargeLeased(leased, requestId) : holdId !== undefined;
    if (written && charge.charged > 0n) {
      const keys = leased ? [`charge:${requestId}`] : [`charge:${holdId}`, `overage:${holdId}`];
      // the key's daily spend goes down by what it went up by: the charge (USD), or its USD cost (XNO)
      const keyUsd = charge.currency === 'USD' ? charge.charged : charge.costUsd;
      await refundCharges({ keys, reason, apiKeyId: caller.keyId, keyUsd });
    }
    if (team) await refundTeamBudget(requestId);
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
      holdId: this.funds.holdId ?? this.funds.leased?.lease.id ?? null,
      errorCode,
      startedAt: new Date(this.started),
    });
  }
}
