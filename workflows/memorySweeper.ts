// Deletes stored memories (POST /api/v1/memory) and seen-message records past their
// `expiration_days`. Started every hour by the Temporal Schedule `switchyard-memory-sweeper`
// (bin/worker.ts).
import { proxyActivities } from '@temporalio/workflow';
import type * as activities from '../activities/index.js';
import { deleteInBatches } from './sweep.js';

const { deleteExpiredMemories } = proxyActivities<typeof activities>({
  startToCloseTimeout: '2 minutes',
  retry: { maximumAttempts: 5 },
});

export async function sweepMemories(): Promise<number> {
  return deleteInBatches(deleteExpiredMemories);
}
