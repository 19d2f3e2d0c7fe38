// One subscription, durably: workflow id = the subscription id (`sub_...`), searchable by its
// account (SwitchyardAccountId). It owns the subscription's periods and reads like them:
//   pay the first period (the API waits for the outcome through the `firstPayment` update) →
//   sleep until the period ends → cancelled meanwhile? end it. Otherwise pay the next period:
//   paid, loop; unpaid, `grace` until `graceUntil`, trying again every retry interval (a cancel
//   ends it at once) → still unpaid at `graceUntil`: end it (`inactive`).
// Every payment is an activity charging the balance with the idempotency key of its period, so
// a retried activity, a replayed history or a worker restart never charges a period twice.
// After many periods the workflow continues as new, carrying where it is, to keep its history short.
import {
  allHandlersFinished,
  condition,
  continueAsNew,
  defineUpdate,
  proxyActivities,
  setHandler,
  sleep,
} from '@temporalio/workflow';
import type * as activities from '../activities/index.js';
import type { EndReason, PeriodOutcome } from '../activities/subscriptions/periods.js';

export interface SubscriptionInput {
  subscriptionId: string;
  /** when continued as new: the period paid last and when it ends */
  resume?: { periodNo: number; periodEndMs: number };
}

/** The API's wait for the first period's payment: what it came to. */
export const firstPaymentUpdate = defineUpdate<PeriodOutcome>('firstPayment');
/** In grace: try to pay the period now (the balance was topped up); answers what it came to. */
export const payNowUpdate = defineUpdate<PeriodOutcome>('payNow');
/** Cancel at the period's end (at once while in grace). */
export const cancelSubscriptionUpdate = defineUpdate<void>('cancel');

/** Periods one run covers before it continues as new. */
const PERIODS_PER_RUN = 100;

// Short database transactions, retried while the database is away.
const { paySubscriptionPeriod, endSubscription, cancelSubscriptionAtPeriodEnd } = proxyActivities<typeof activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

export async function subscription(input: SubscriptionInput): Promise<EndReason> {
  const id = input.subscriptionId;
  let first: PeriodOutcome | undefined;
  /** what the last payment came to */
  let outcome: PeriodOutcome | undefined;
  let cancelling = false;
  let payNow = false;
  setHandler(firstPaymentUpdate, async () => {
    await condition(() => first !== undefined);
    return first!;
  });
  setHandler(payNowUpdate, async (): Promise<PeriodOutcome> => {
    // only in grace; otherwise what the last payment came to (before the first: wait for it)
    await condition(() => outcome !== undefined);
    if (!('paid' in outcome!) || outcome!.paid || cancelling) return outcome!;
    payNow = true;
    await condition(() => !payNow || cancelling);
    return outcome!;
  });
  setHandler(cancelSubscriptionUpdate, async () => {
    await cancelSubscriptionAtPeriodEnd(id);
    cancelling = true;
  });

  const reason = await run();
  await condition(allHandlersFinished);
  return reason;

  async function run(): Promise<EndReason> {
    /** the period being paid for */
    let due = input.resume ? input.resume.periodNo : 1;
    outcome = input.resume ? { paid: true, ...input.resume } : await paySubscriptionPeriod(id, due);
    first = outcome;
    const firstDue = due;
    for (;;) {
      if ('ended' in outcome) return outcome.ended;
      if (outcome.paid) {
        const { periodNo, periodEndMs } = outcome;
        if (periodNo - firstDue >= PERIODS_PER_RUN && !cancelling)
          await continueAsNew<typeof subscription>({ subscriptionId: id, resume: { periodNo, periodEndMs } });
        await sleep(Math.max(1, periodEndMs - Date.now()));
        if (cancelling) return end('cancelled');
        due = periodNo + 1;
        outcome = await paySubscriptionPeriod(id, due);
        continue;
      }
      // in grace: try again until graceUntil, or when asked to; a cancel ends it now
      const { graceUntilMs, retryMs } = outcome;
      const left = graceUntilMs - Date.now();
      if (left <= 0) return end('lapsed');
      await condition(() => cancelling || payNow, Math.min(retryMs, left));
      if (cancelling) return end('cancelled');
      outcome = await paySubscriptionPeriod(id, due);
      payNow = false;
    }
  }

  async function end(reason: EndReason): Promise<EndReason> {
    await endSubscription(id, reason);
    return reason;
  }
}
