// Jobs on a task queue of their own, served only by worker processes the test starts (and may
// kill, freeze or stop): the API started in the test process sends the jobs it starts there
// while `fn` runs. Every process started is killed afterwards.
import { config } from '../../activities/config.js';
import { useTemporal } from './temporal.js';
import { startWorkerProcess, type WorkerProcess } from './workerProcess.js';

/** Starts a worker process on the queue, with `env` added to its environment. */
export type StartWorker = (env?: Record<string, string>) => Promise<WorkerProcess>;

export async function onOwnWorkers(name: string, fn: (startWorker: StartWorker) => Promise<void>): Promise<void> {
  const t = await useTemporal();
  const queue = `${name}-${process.pid}`;
  const env = { TEMPORAL_ADDRESS: t.address, TEMPORAL_TASK_QUEUE: queue, DATABASE_URL: config.databaseUrl! };
  const started: WorkerProcess[] = [];
  const savedQueue = config.taskQueue;
  config.taskQueue = queue;
  try {
    await fn(async (extra = {}) => {
      const w = await startWorkerProcess({ ...env, ...extra });
      started.push(w);
      return w;
    });
  } finally {
    config.taskQueue = savedQueue;
    for (const w of started) {
      w.thaw();
      await w.kill();
    }
  }
}
