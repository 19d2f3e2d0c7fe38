// Deletes hosted outputs (audio, video) past their retention. Started every 10 minutes by the
// Temporal Schedule `switchyard-hosted-file-sweeper` (bin/worker.ts), so deletion is the
// workflow engine's job, visible in the Web UI, whatever number of API processes run.
import { proxyActivities } from '@temporalio/workflow';
import type * as activities from '../activities/index.js';
import { deleteInBatches } from './sweep.js';

const { deleteExpiredHostedFiles } = proxyActivities<typeof activities>({
  startToCloseTimeout: '2 minutes',
  retry: { maximumAttempts: 5 },
});

export async function sweepHostedFiles(): Promise<number> {
  return deleteInBatches(deleteExpiredHostedFiles);
}
