// Deletes stored Responses API responses past their retention (SWITCHYARD_RESPONSE_RETENTION_DAYS).
// Started every hour by the Temporal Schedule `switchyard-stored-response-sweeper`
// (bin/worker.ts). Reads already treat an expired response as missing; this frees the rows of
// accounts that never come back.
import { proxyActivities } from '@temporalio/workflow';
import type * as activities from '../activities/index.js';
import { deleteInBatches } from './sweep.js';

const { deleteExpiredResponses } = proxyActivities<typeof activities>({
  startToCloseTimeout: '2 minutes',
  retry: { maximumAttempts: 5 },
});

export async function sweepStoredResponses(): Promise<number> {
  return deleteInBatches(deleteExpiredResponses);
}
