// One crypto deposit, durably: workflow id = the deposit's txId (`tx_...`), searchable by the
// depositing account (SwitchyardAccountId). Reads like the process it runs:
//   look at the invoice (an activity asking BTCPay: the processor's word is the truth) → decided?
//   credit it once, or close it uncredited → done. Otherwise wait for BTCPay's next webhook (a
//   signal, which only says "look now") or, failing one, the next poll, and look again.
// Duplicate and out-of-order webhooks are harmless: each makes the workflow look at the invoice,
// never act on what the webhook claims. A worker that dies mid-deposit loses nothing: signals wait
// in the history, and another worker picks the workflow up where it was.
import {
  condition,
  continueAsNew,
  defineSignal,
  proxyActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type * as activities from '../activities/index.js';

export interface CryptoDepositInput {
  txId: string;
  /** how often to look when no webhook comes, seconds (SWITCHYARD_DEPOSIT_POLL_SECONDS at creation) */
  pollSeconds: number;
}

/** BTCPay posted a webhook about the deposit's invoice (its event type and delivery id, for the history). */
export const invoiceEventSignal = defineSignal<[{ type: string; deliveryId: string }]>('invoiceEvent');

// Reading BTCPay and writing the row: retried for as long as it takes (BTCPay down for a day must
// not lose a deposit), backing off to a try every 10 minutes. Two Greenfield calls of at most 15 s
// each: an attempt still running after 40 s is given up (its worker may have died) and tried again.
const { observeDeposit } = proxyActivities<typeof activities>({
  startToCloseTimeout: '40 seconds',
  retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumInterval: '10 minutes' },
});
// The credit and the close: short database statements, idempotent, retried until they succeed.
const { completeDeposit, closeDeposit } = proxyActivities<typeof activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '5 minutes' },
});

/** While nothing is happening (unpaid and expired, waiting out BTCPay's watch), look this many times less often. */
const QUIET_FACTOR = 10;

export async function cryptoDeposit(input: CryptoDepositInput): Promise<string> {
  let events = 0;
  setHandler(invoiceEventSignal, () => {
    events++;
  });
  for (;;) {
    const seen = events;
    const now = await observeDeposit(input.txId);
    if (now.final) {
      return now.final.creditUsd !== '0'
        ? await completeDeposit(input.txId, now.final.creditUsd)
        : await closeDeposit(input.txId, now.final.closeAs);
    }
    // a long watch (a day, by BTCPay's default) starts afresh before the history grows large
    if (workflowInfo().continueAsNewSuggested && events === seen) await continueAsNew<typeof cryptoDeposit>(input);
    const quiet = now.status === 'Expired' || (now.status === 'New' && Date.now() >= now.expiresAtMs);
    let waitMs = input.pollSeconds * 1000 * (quiet ? QUIET_FACTOR : 1);
    // and never sleep past the moment BTCPay stops watching: that is when an expired deposit is decided
    if (Date.now() < now.monitoringUntilMs) waitMs = Math.min(waitMs, now.monitoringUntilMs - Date.now() + 1000);
    await condition(() => events !== seen, Math.max(1000, waitMs));
  }
}
