// Deletes hosted outputs (audio, video) past their retention. Started every 10 minutes by the
// Temporal Schedule `switchyard-hosted-file-sweeper` (bin/worker.ts), so deletion is the
// workflow engine's job, visible in the Web UI, whatever number of API processes run.
import { proxyActivities } from '@temporalio/workflow';
import type * as activities from '../activities/index.js';

const { deleteExpiredHostedFiles } = proxyActivities<typeof activities>({
  startToCloseTimeout: '2 minutes',
  retry: { maximumAttempts: 5 },
});

const BATCH = 200;

export async function sweepHostedFiles(): Promise<number> {
  let total = 0;
  for (;;) {
    const deleted = await deleteExpiredHostedFiles(BATCH);
    total += deleted;
    if (deleted < BATCH) return total;
  }
}
