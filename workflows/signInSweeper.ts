// Deletes stale sign-in records (ended sessions, old e-mail codes, old rate-limit windows: see
// activities/accounts/signInRecords.ts). Started every hour by the Temporal Schedule
// `switchyard-sign-in-sweeper` (bin/worker.ts). Nothing reads those rows as valid anyway; this
// keeps the tables from growing.
import { proxyActivities } from '@temporalio/workflow';
import type * as activities from '../activities/index.js';
import { deleteInBatches } from './sweep.js';

const { deleteStaleSignInRecords } = proxyActivities<typeof activities>({
  startToCloseTimeout: '2 minutes',
  retry: { maximumAttempts: 5 },
});

export async function sweepSignInRecords(): Promise<number> {
  return deleteInBatches(deleteStaleSignInRecords);
}
