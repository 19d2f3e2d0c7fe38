// The activities of a subscription's workflow (workflows/subscription.ts): pay a period, end the
// subscription, mark it to end at its period's end. Each is one short transaction on the
// subscription's row, safe to retry: a period is paid through the ledger with the idempotency key
// `subscription:<id>:<period>`, so however often the engine retries, or a renewal races the
// requests spending the allowance, a period is charged at most once. Every change is announced so
// API processes forget the account's cached coverage (ledger/allowance.ts).
import { config } from '../config.js';
import { formatAmount } from '../core/money.js';
import { db } from '../db.js';
import { debit, InsufficientFunds, LedgerError } from '../ledger/ledger.js';
import { forgetCoverage, SUBSCRIPTION_CHANGES } from '../ledger/allowance.js';

/** Why a subscription ended. */
export type EndReason = 'cancelled' | 'lapsed' | 'plan_withdrawn' | 'unpaid';

/** What paying a period came to (plain JSON: it is a workflow's activity result). */
export type PeriodOutcome =
  | { paid: true; periodNo: number; periodEndMs: number }
  /** the balance did not cover the price: in grace until `graceUntilMs`, tried again every `retryMs` */
  | { paid: false; graceUntilMs: number; retryMs: number; requiredUsd: string; availableUsd: string }
  /** the subscription is over (the first period unpaid, its plan withdrawn, or ended elsewhere) */
  | { ended: EndReason; requiredUsd?: string; availableUsd?: string };

interface Due {
  accountId: string;
  state: string;
  periodNo: number;
  periodEnd: Date;
  graceUntil: Date | null;
  endReason: EndReason | null;
  planId: string;
  planName: string;
  planActive: boolean;
  price: string;
}

const DUE_SQL = `SELECT s.account_id AS "accountId", s.status AS state, s.period_no AS "periodNo",
    s.period_end AS "periodEnd",
    s.grace_until AS "graceUntil", s.end_reason AS "endReason", p.id AS "planId", p.name AS "planName",
    p.active AS "planActive", p.price::text AS price
  FROM subscriptions s JOIN subscription_plans p ON p.id = s.plan_id WHERE s.id = $1`;

// A paid period starts where the last one ended (the first: now), on the plan's current terms.
// The daily counter keeps counting today's operations (capped to a lower new limit).
const PAID_SQL = `UPDATE subscriptions s SET
    status = 'active', grace_until = NULL, period_no = $2,
    period_start = CASE WHEN s.period_no = 0 THEN now() ELSE s.period_end END,
    period_end = CASE WHEN s.period_no = 0 THEN now() ELSE s.period_end END + make_interval(secs => p.period_seconds),
    price = p.price, daily_limit = p.daily_limit, monthly_limit = p.monthly_limit, models = p.models,
    daily_used = LEAST(s.daily_used, p.daily_limit), monthly_used = 0
  FROM subscription_plans p
  WHERE s.id = $1 AND p.id = s.plan_id AND s.period_no = $2 - 1 AND s.status <> 'inactive'
  RETURNING s.period_end AS "periodEnd"`;

const GRACE_SQL = `UPDATE subscriptions SET status = 'grace',
    grace_until = COALESCE(grace_until, period_end + make_interval(secs => $2))
  WHERE id = $1 AND status <> 'inactive' RETURNING grace_until AS "graceUntil"`;

const END_SQL = `UPDATE subscriptions SET status = 'inactive', end_reason = $2, ended_at = now(), grace_until = NULL
  WHERE id = $1 AND status <> 'inactive' RETURNING account_id AS "accountId"`;

/**
 * Tell every API process (this one at once) that the account's subscription changed
 * (accounts/cacheChanges.ts). The change is stored already: if the announcement fails, other
 * processes see it when their cache entry expires.
 */
async function announce(accountId: string): Promise<void> {
  forgetCoverage([accountId]);
  try {
    await db().pool.query('SELECT pg_notify($1, $2)', [SUBSCRIPTION_CHANGES, accountId]);
  } catch (err) {
    console.error(`[subscriptions] could not announce a change of ${accountId}: ${(err as Error).message}`);
  }
}

/**
 * Pay period `periodNo` from the balance. Paid: the period begins (or has already: a retry finds
 * it paid and answers the same). Unpaid: the first period ends the subscription; a later one puts
 * it in grace.
 */
export async function paySubscriptionPeriod(subscriptionId: string, periodNo: number): Promise<PeriodOutcome> {
  const { rows } = await db().pool.query<Due>(DUE_SQL, [subscriptionId]);
  const s = rows[0];
  if (!s) throw new Error(`subscription ${subscriptionId} not found`);
  if (s.state === 'inactive') return { ended: s.endReason ?? 'cancelled' };
  if (s.periodNo >= periodNo) return { paid: true, periodNo: s.periodNo, periodEndMs: s.periodEnd.getTime() };
  if (!s.planActive) {
    await endSubscription(subscriptionId, 'plan_withdrawn');
    return { ended: 'plan_withdrawn' };
  }
  const price = BigInt(s.price);
  try {
    if (price > 0n) {
      await debit({
        accountId: s.accountId,
        currency: 'USD',
        amount: price,
        reason: `subscription ${s.planId} (${s.planName}), period ${periodNo}`,
        idempotencyKey: `subscription:${subscriptionId}:${periodNo}`,
      });
    }
  } catch (err) {
    // a retry after the plan's price changed: the period's entry stands under its key, so it is paid
    if (err instanceof LedgerError && /idempotency key/.test(err.message))
      return periodPaid(s.accountId, subscriptionId, periodNo);
    if (!(err instanceof InsufficientFunds)) throw err;
    const shortfall = {
      requiredUsd: formatAmount(err.requiredUsd, 'USD'),
      availableUsd: formatAmount(err.availableUsd, 'USD'),
    };
    if (periodNo === 1) {
      await endSubscription(subscriptionId, 'unpaid');
      return { ended: 'unpaid', ...shortfall };
    }
    const grace = await db().pool.query<{ graceUntil: Date }>(GRACE_SQL, [
      subscriptionId,
      config.subscriptionGraceSeconds,
    ]);
    await announce(s.accountId);
    return {
      paid: false,
      graceUntilMs: grace.rows[0]?.graceUntil.getTime() ?? Date.now(),
      retryMs: config.subscriptionRetrySeconds * 1000,
      ...shortfall,
    };
  }
  return periodPaid(s.accountId, subscriptionId, periodNo);
}

/** The period's money is in: begin it (a retry finds it begun and reads it again). */
async function periodPaid(accountId: string, subscriptionId: string, periodNo: number): Promise<PeriodOutcome> {
  const paid = await db().pool.query<{ periodEnd: Date }>(PAID_SQL, [subscriptionId, periodNo]);
  await announce(accountId);
  const end = paid.rows[0]?.periodEnd;
  if (!end) return paySubscriptionPeriod(subscriptionId, periodNo); // changed meanwhile: read it again
  return { paid: true, periodNo, periodEndMs: end.getTime() };
}

/** The subscription is over: it covers nothing from now on. Returns whether this call ended it. */
export async function endSubscription(subscriptionId: string, reason: EndReason): Promise<boolean> {
  const { rows } = await db().pool.query<{ accountId: string }>(END_SQL, [subscriptionId, reason]);
  if (rows[0]) await announce(rows[0].accountId);
  return rows.length > 0;
}

/** Cancel at the period's end: the workflow ends it then (at once when in grace). */
export async function cancelSubscriptionAtPeriodEnd(subscriptionId: string): Promise<void> {
  await db().pool.query(`UPDATE subscriptions SET cancel_at_period_end = true WHERE id = $1 AND status <> 'inactive'`, [
    subscriptionId,
  ]);
}
