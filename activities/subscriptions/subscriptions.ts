// The API's side of subscriptions: the plans on offer, subscribing (a row and its workflow, through
// the job helper), cancelling (through the workflow), and the spec's Subscription usage record.
// The workflow (workflows/subscription.ts) owns the periods and every payment; subscribing waits
// for its first payment, so the caller learns at once whether the balance paid it.
import { randomBytes } from 'node:crypto';
import { catalog, type PlanInfo } from '../catalog/catalog.js';
import { RequestError } from '../core/errors.js';
import { toDisplayNumber } from '../core/money.js';
import { db, isUniqueViolation } from '../db.js';
import { startJob } from '../jobs/jobs.js';
import { temporal } from '../temporalClient.js';
import {
  cancelSubscriptionUpdate,
  firstPaymentUpdate,
  payNowUpdate,
  subscription,
} from '../../workflows/subscription.js';
import { nextUtcMidnight } from '../ledger/allowance.js';
import type { PeriodOutcome } from './periods.js';

/** A plan as `GET /api/subscription/v1/plans` shows it. */
export function planView(p: PlanInfo) {
  return {
    id: p.id,
    name: p.name,
    description: p.description,
    price: toDisplayNumber(p.price, 'USD'),
    currency: 'USD',
    periodSeconds: p.periodSeconds,
    limits: { daily: p.dailyLimit, monthly: p.monthlyLimit },
    models: p.models,
  };
}

interface Row {
  id: string;
  accountId: string;
  planId: string;
  state: 'active' | 'grace' | 'inactive';
  periodNo: number;
  periodStart: Date;
  periodEnd: Date;
  graceUntil: Date | null;
  cancelAtPeriodEnd: boolean;
  dailyLimit: number;
  monthlyLimit: number;
  dailyUsed: number;
  monthlyUsed: number;
  endReason: string | null;
}

// The account's subscription: the live one, else the one that ended last. `dailyUsed` is today's.
const CURRENT_SQL = `SELECT id, account_id AS "accountId", plan_id AS "planId", status AS state,
    period_no AS "periodNo", period_start AS "periodStart", period_end AS "periodEnd",
    grace_until AS "graceUntil", cancel_at_period_end AS "cancelAtPeriodEnd",
    daily_limit AS "dailyLimit", monthly_limit AS "monthlyLimit",
    CASE WHEN daily_day = (now() AT TIME ZONE 'UTC')::date THEN daily_used ELSE 0 END AS "dailyUsed",
    monthly_used AS "monthlyUsed", end_reason AS "endReason"
  FROM subscriptions WHERE account_id = $1 AND period_no > 0
  ORDER BY (status <> 'inactive') DESC, created_at DESC LIMIT 1`;

async function current(accountId: string): Promise<Row | undefined> {
  const { rows } = await db().pool.query<Row>(CURRENT_SQL, [accountId]);
  return rows[0];
}

const usageWindow = (used: number, limit: number, resetAt: number) => ({
  used,
  remaining: Math.max(0, limit - used),
  percentUsed: limit > 0 ? Math.min(1, used / limit) : 0,
  resetAt,
});

/**
 * The spec's Subscription usage record. Without a live subscription: `active: false`, state
 * `inactive`, the last subscription's limits (zeros if there never was one) and nothing used.
 */
export async function subscriptionUsage(accountId: string) {
  const s = await current(accountId);
  const now = Date.now();
  const live = s !== undefined && s.state !== 'inactive';
  const limits = { daily: s?.dailyLimit ?? 0, monthly: s?.monthlyLimit ?? 0 };
  return {
    active: live,
    limits,
    enforceDailyLimit: true,
    daily: usageWindow(live ? s.dailyUsed : 0, limits.daily, nextUtcMidnight(now)),
    monthly: usageWindow(live ? s.monthlyUsed : 0, limits.monthly, live ? s.periodEnd.getTime() : now),
    period: { currentPeriodEnd: live ? s.periodEnd.toISOString() : null },
    state: s?.state ?? 'inactive',
    graceUntil: s?.graceUntil?.toISOString() ?? null,
  };
}

/** What subscribe and cancel answer: the subscription in a few words. */
function subscriptionView(s: Row) {
  return {
    id: s.id,
    plan: s.planId,
    state: s.state,
    currentPeriodStart: s.periodStart.toISOString(),
    currentPeriodEnd: s.periodEnd.toISOString(),
    cancelAtPeriodEnd: s.cancelAtPeriodEnd,
    graceUntil: s.graceUntil?.toISOString() ?? null,
  };
}

/** How long subscribing waits for the workflow's payment before answering 503. */
const PAYMENT_WAIT_MS = 30_000;

const newSubscriptionId = () => `sub_${randomBytes(12).toString('hex')}`;

/**
 * Subscribe the account to `planId`, paying the first period from the balance (402 when it does
 * not cover the price, and nothing is left behind). One live subscription per account (409).
 */
export async function subscribe(accountId: string, planId: string) {
  const plan = catalog().plans.find((p) => p.id === planId);
  if (!plan) {
    const known = catalog()
      .plans.map((p) => p.id)
      .join(', ');
    throw new RequestError(
      400,
      'invalid_parameter_value',
      `There is no plan '${planId}'. GET /api/subscription/v1/plans lists them${known ? ` (${known})` : ''}.`,
      { param: 'plan' },
    );
  }
  const id = newSubscriptionId();
  const now = new Date();
  try {
    await startJob({
      id,
      accountId,
      workflow: subscription,
      args: [{ subscriptionId: id }],
      // period 0: nothing paid yet, nothing covered; the workflow's first payment makes it period 1
      // and copies the plan's terms (its covered models among them) into the row
      row: {
        table: 'subscriptions',
        columns: {
          id,
          status: 'active',
          account_id: accountId,
          plan_id: plan.id,
          period_no: 0,
          period_start: now,
          period_end: now,
          price: plan.price.toString(),
          daily_limit: plan.dailyLimit,
          monthly_limit: plan.monthlyLimit,
        },
      },
      unavailable: {
        code: 'subscription_unavailable',
        message:
          'The subscription could not be started (the workflow engine is unavailable). Nothing was charged; retry.',
      },
    });
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
    const live = await current(accountId);
    // the same plan again while in grace: pay the overdue period now
    if (live?.state === 'grace' && live.planId === plan.id) return payOverdue(live, plan);
    throw new RequestError(
      409,
      'subscription_exists',
      `This account already has a subscription${live ? ` to '${live.planId}' (${live.state})` : ''}. ` +
        'Cancel it and subscribe again when it has ended.',
    );
  }
  const paid = await hear(id, firstPaymentUpdate);
  if ('ended' in paid && paid.ended !== 'unpaid')
    throw new RequestError(409, 'plan_unavailable', `The plan '${plan.id}' is no longer offered.`, { param: 'plan' });
  if (!('paid' in paid && paid.paid)) throw unpaid(plan, paid);
  const row = await current(accountId);
  return { subscription: row ? subscriptionView(row) : undefined, plan: planView(plan) };
}

/** In grace: ask the workflow to pay the overdue period now (the balance may have been topped up). */
async function payOverdue(live: Row, plan: PlanInfo) {
  const paid = await hear(live.id, payNowUpdate);
  if (!('paid' in paid && paid.paid)) throw unpaid(plan, paid);
  const row = await current(live.accountId);
  return { subscription: row ? subscriptionView(row) : undefined, plan: planView(plan) };
}

/** What a payment update came to; a worker that is down would keep it (and the request) waiting. */
async function hear(id: string, update: typeof firstPaymentUpdate): Promise<PeriodOutcome> {
  const handle = (await temporal()).workflow.getHandle(id);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${PAYMENT_WAIT_MS} ms`)), PAYMENT_WAIT_MS);
  });
  try {
    return await Promise.race([handle.executeUpdate(update), late]);
  } catch (err) {
    // the workflow pays or ends it all the same; the caller reads which from the usage route
    console.error(`[subscriptions] could not hear ${id}'s payment:`, err);
    throw new RequestError(
      503,
      'subscription_unavailable',
      'The subscription payment could not be confirmed just now. GET /api/subscription/v1/usage shows ' +
        'whether it is active; do not subscribe again before checking.',
      { retryAfterSeconds: 5 },
    );
  } finally {
    clearTimeout(timer);
  }
}

/** The balance did not cover the period: 402, saying what was needed. */
function unpaid(plan: PlanInfo, paid: PeriodOutcome): RequestError {
  const { requiredUsd, availableUsd } = paid as { requiredUsd?: string; availableUsd?: string };
  return new RequestError(
    402,
    'insufficient_balance',
    `Insufficient balance: the plan '${plan.id}' costs $${requiredUsd} per period and ` +
      `$${availableUsd} is available. Add funds and subscribe again.`,
    { details: { requiredBalance: Number(requiredUsd), availableBalance: Number(availableUsd) } },
  );
}

/** Cancel the account's subscription at the end of its period (in grace: at once). */
export async function cancelSubscription(accountId: string) {
  const live = await current(accountId);
  if (!live || live.state === 'inactive')
    throw new RequestError(404, 'not_found', 'This account has no subscription to cancel.');
  try {
    await (await temporal()).workflow.getHandle(live.id).executeUpdate(cancelSubscriptionUpdate);
  } catch (err) {
    const e = err as Error;
    if (!(e.name === 'WorkflowNotFoundError' || /not found|completed/i.test(e.message ?? ''))) {
      console.error(`[subscriptions] the workflow engine did not take the cancel of ${live.id}:`, err);
      throw new RequestError(
        503,
        'subscription_unavailable',
        'The subscription could not be reached just now (the workflow engine is unavailable). Nothing changed; retry.',
        { retryAfterSeconds: 5 },
      );
    }
  }
  const row = await current(accountId);
  return { subscription: row ? subscriptionView(row) : undefined };
}
