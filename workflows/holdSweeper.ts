// Releases reservations whose request never settled (a crashed API process, a lost
// connection). Started every minute by a Temporal Schedule (see bin/worker.ts), so it runs
// once per minute across any number of workers, and every run shows in the Web UI.
import { proxyActivities } from '@temporalio/workflow';
import type * as activities from '../activities/index.js';

const { releaseExpiredHolds } = proxyActivities<typeof activities>({
  startToCloseTimeout: '1 minute',
  retry: { maximumAttempts: 5 },
});

const BATCH = 500;

export async function sweepExpiredHolds(): Promise<number> {
  let total = 0;
  for (;;) {
    const released = await releaseExpiredHolds(BATCH);
    total += released;
    if (released < BATCH) return total;
  }
}
