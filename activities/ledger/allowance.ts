// The subscription allowance on the request path: does the caller's subscription pay for this
// call, and if so, spend one of its operations. Called from one place, the metered call's
// reserve() (activities/metering/meteredCall.ts), before any money is held. It lives with the
// ledger: like teamBudget.ts, a limit kept by atomic conditional updates (ARCHITECTURE.md).
//
// Cheap by design. Which accounts have a live subscription, and which models it covers, is kept
// in memory per process (`coverage`), so a caller without one costs no query after its first
// request (a miss is one indexed query, then trusted for SWITCHYARD_KEY_CACHE_TTL_MS). Every
// change to a subscription is announced on PostgreSQL's LISTEN/NOTIFY channel
// `switchyard_subscription_changes` and forgotten by every API process at once (the cache-change
// listener's connection carries it: activities/accounts/cacheChanges.ts). A stale entry can only
// send a request down the wrong path for that long; it cannot overspend, because the spend itself
// checks the row.
//
// The spend is one conditional UPDATE of the subscription's row (state live, model covered, both
// counters below their limits, the daily one counted from 0 on a new UTC day), so any number of
// API processes cannot pass a limit. It also reads the USD balance, for the answer's
// remainingBalance, in the same round trip. A call that then fails or never reaches its caller
// gives its operation back (giveBack): only successful requests count.
import type { Caller } from '../core/caller.js';
import { config } from '../config.js';
import { RequestError } from '../core/errors.js';
import { db } from '../db.js';

/** The channel subscription changes are announced on (a comma list of account ids). */
export const SUBSCRIPTION_CHANGES = 'switchyard_subscription_changes';

/** Why a call is paid from the balance whatever the subscription covers (spec: Authentication, Chat). */
export type Bypass = 'paygo' | 'provider' | 'job';

/** One operation spent, to give back if the call does not succeed. */
export interface AllowanceClaim {
  subscriptionId: string;
  /** the period and the UTC day it was counted in (a give-back after either ended changes nothing) */
  periodNo: number;
  day: string;
  /** the account's available USD balance, nano-USD */
  available: bigint;
}

interface Coverage {
  id: string;
  models: Set<string>;
}

const cache = new Map<string, { coverage: Coverage | null; at: number }>();
const CACHE_MAX = 100_000;
/** bumped by every forget: a lookup that started before one does not store its (maybe stale) answer */
let generation = 0;

/** Forget these accounts' coverage (or every account's: null). See accounts/cacheChanges.ts. */
export function forgetCoverage(accountIds: string[] | null): void {
  generation++;
  if (accountIds === null) cache.clear();
  else for (const id of accountIds) cache.delete(id);
}

const COVERAGE_SQL = `SELECT id, models FROM subscriptions
  WHERE account_id = $1 AND status <> 'inactive' AND period_no > 0`;

async function coverageOf(accountId: string): Promise<Coverage | null> {
  const now = Date.now();
  const hit = cache.get(accountId);
  if (hit && now - hit.at <= config.keyCacheTtlMs) return hit.coverage;
  const gen = generation;
  const { rows } = await db().pool.query<{ id: string; models: string[] }>({
    name: 'subscription-coverage',
    text: COVERAGE_SQL,
    values: [accountId],
  });
  const coverage = rows[0] ? { id: rows[0].id, models: new Set(rows[0].models) } : null;
  if (gen === generation) {
    if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value as string);
    cache.set(accountId, { coverage, at: now });
  }
  return coverage;
}

const TODAY = `((now() AT TIME ZONE 'UTC')::date)`;

const SPEND_SQL = `UPDATE subscriptions s SET
    daily_used = CASE WHEN s.daily_day = ${TODAY} THEN s.daily_used + 1 ELSE 1 END,
    daily_day = ${TODAY},
    monthly_used = s.monthly_used + 1
  WHERE s.id = $1 AND s.status <> 'inactive' AND s.period_no > 0 AND $2 = ANY(s.models)
    AND (CASE WHEN s.daily_day = ${TODAY} THEN s.daily_used ELSE 0 END) < s.daily_limit
    AND s.monthly_used < s.monthly_limit
  RETURNING s.period_no AS "periodNo", s.daily_day::text AS day,
    (SELECT (b.amount - b.held)::text FROM balances b
      WHERE b.account_id = s.account_id AND b.currency = 'USD') AS available`;

const WHY_SQL = `SELECT status AS state, $2 = ANY(models) AS covered,
    daily_limit AS "dailyLimit", monthly_limit AS "monthlyLimit",
    CASE WHEN daily_day = ${TODAY} THEN daily_used ELSE 0 END AS "dailyUsed", monthly_used AS "monthlyUsed",
    period_end AS "periodEnd"
  FROM subscriptions WHERE id = $1`;

const GIVE_BACK_SQL = `UPDATE subscriptions SET
    daily_used = CASE WHEN daily_day = $3::date AND daily_used > 0 THEN daily_used - 1 ELSE daily_used END,
    monthly_used = CASE WHEN period_no = $2 AND monthly_used > 0 THEN monthly_used - 1 ELSE monthly_used END
  WHERE id = $1`;

/**
 * Does the caller's subscription pay for this call? Then one operation is spent and returned
 * (undefined: the balance pays). Refusals: 429 `rate_limit_exceeded` when the allowance for the
 * day or the period is used up (the caller may then ask for pay-as-you-go), and 402
 * `subscription_required` for a key limited to subscription billing that the subscription cannot
 * pay for.
 */
export async function claimAllowance(a: {
  caller: Pick<Caller, 'accountId' | 'billingMode'>;
  modelId: string;
  bypass?: Bypass;
}): Promise<AllowanceClaim | undefined> {
  const { caller, modelId, bypass } = a;
  if (caller.billingMode === 'paygo') return undefined;
  if (bypass) return caller.billingMode === 'subscription_only' ? refuseSubscriptionOnly(bypass) : undefined;
  const coverage = await coverageOf(caller.accountId);
  if (!coverage?.models.has(modelId)) return notCovered(caller);
  const { rows } = await db().requestPool.query<{ periodNo: number; day: string; available: string | null }>({
    name: 'subscription-spend',
    text: SPEND_SQL,
    values: [coverage.id, modelId],
  });
  const spent = rows[0];
  if (spent) {
    return {
      subscriptionId: coverage.id,
      periodNo: spent.periodNo,
      day: spent.day,
      available: BigInt(spent.available ?? 0),
    };
  }
  return whyRefused(caller, coverage, modelId);
}

/**
 * Would the caller's subscription pay for a call of any of these models (left to itself: no
 * pay-as-you-go asked for)? For requests the spec allows only pay-as-you-go (chat's advisor), to
 * refuse them up front rather than bill a subscriber's balance unasked. Reads the cached coverage.
 */
export async function subscriptionWouldCover(caller: Pick<Caller, 'accountId' | 'billingMode'>, modelIds: string[]) {
  if (caller.billingMode === 'paygo') return false;
  if (caller.billingMode === 'subscription_only') return true;
  const coverage = await coverageOf(caller.accountId);
  return !!coverage && modelIds.some((id) => coverage.models.has(id));
}

/** The call did not succeed: its operation counts for nothing. */
export async function giveBack(claim: AllowanceClaim): Promise<void> {
  await db().requestPool.query({
    name: 'subscription-give-back',
    text: GIVE_BACK_SQL,
    values: [claim.subscriptionId, claim.periodNo, claim.day],
  });
}

function notCovered(caller: Pick<Caller, 'billingMode'>): undefined {
  if (caller.billingMode === 'subscription_only') refuseSubscriptionOnly();
  return undefined;
}

const BYPASS_WHY: Record<Bypass, string> = {
  paygo: 'the request asks for pay-as-you-go billing, which this key may not use',
  provider: 'the request selects a provider, which is always billed pay-as-you-go',
  job: 'subscriptions cover synchronous requests, not jobs',
};

function refuseSubscriptionOnly(bypass?: Bypass): never {
  const why = bypass ? BYPASS_WHY[bypass] : 'no subscription covers this request';
  throw new RequestError(
    402,
    'subscription_required',
    `This API key is limited to subscription billing, and ${why}. Use a pay-as-you-go key.`,
  );
}

interface Why {
  state: string;
  covered: boolean;
  dailyLimit: number;
  monthlyLimit: number;
  dailyUsed: number;
  monthlyUsed: number;
  periodEnd: Date;
}

/** The spend was refused: used up (429), or the subscription changed since it was cached (pay as you go). */
async function whyRefused(
  caller: Pick<Caller, 'accountId' | 'billingMode'>,
  coverage: Coverage,
  modelId: string,
): Promise<undefined> {
  const { rows } = await db().pool.query<Why>({
    name: 'subscription-why',
    text: WHY_SQL,
    values: [coverage.id, modelId],
  });
  const s = rows[0];
  if (!s || s.state === 'inactive' || !s.covered) {
    forgetCoverage([caller.accountId]);
    return notCovered(caller);
  }
  const daily = s.dailyUsed >= s.dailyLimit;
  const now = Date.now();
  const resetAt = daily ? nextUtcMidnight(now) : s.periodEnd.getTime();
  const retryAfterSeconds = Math.max(1, Math.ceil((resetAt - now) / 1000));
  const [used, limit] = daily ? [s.dailyUsed, s.dailyLimit] : [s.monthlyUsed, s.monthlyLimit];
  const instead =
    caller.billingMode === 'subscription_only'
      ? 'This key is limited to subscription billing: wait, or use a pay-as-you-go key.'
      : 'To pay from your balance instead, send the header X-Billing-Mode: paygo.';
  throw new RequestError(
    429,
    'rate_limit_exceeded',
    `Your subscription's ${daily ? 'daily' : 'monthly'} allowance is used up (${used} of ${limit} operations); ` +
      `it resets at ${new Date(resetAt).toISOString()}. ${instead}`,
    {
      retryAfterSeconds,
      details: { scope: daily ? 'daily' : 'monthly', used, limit, resetAt },
    },
  );
}

/** The start of the next UTC day after `ms`, epoch ms. */
export function nextUtcMidnight(ms: number): number {
  const d = new Date(ms);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1);
}
