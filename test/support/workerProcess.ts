// The project's worker in a process of its own, so a test can kill it mid-job (SIGKILL: no
// graceful shutdown, no chance to report), freeze it (SIGSTOP: alive, connections open, but no
// heartbeat leaves it, as with a hung event loop), thaw it, stop it as an operator does (SIGTERM:
// the worker drains), and start another. It serves the task queue in TEMPORAL_TASK_QUEUE on
// TEMPORAL_ADDRESS, against DATABASE_URL, with the provider settings in its environment; it
// prints "ready" once it polls.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { connectDatabase } = await import('../../activities/db.js');
  const { loadCatalog } = await import('../../activities/catalog/catalog.js');
  const { createWorker, stopWorker } = await import('../../bin/worker.js');
  const { workflowBundle } = await import('./workflowBundle.js');
  connectDatabase(process.env.DATABASE_URL!, 5);
  await loadCatalog();
  const worker = await createWorker(process.env.TEMPORAL_ADDRESS!, workflowBundle());
  process.on('SIGTERM', () => stopWorker(worker));
  const running = worker.run();
  console.log('ready');
  await running;
  process.exit(0);
}

export interface WorkerProcess {
  child: ChildProcess;
  /** SIGKILL, resolved once the process is gone */
  kill(): Promise<void>;
  /** SIGTERM (the worker drains: its running activities are cancelled), resolved once it exits */
  stop(): Promise<void>;
  /** SIGSTOP: the process stays, does nothing, sends nothing (no heartbeats) */
  freeze(): void;
  /** SIGCONT */
  thaw(): void;
}

/** Starts a worker process and waits until it polls. */
export async function startWorkerProcess(env: Record<string, string>): Promise<WorkerProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx/esm', fileURLToPath(import.meta.url)], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  child.stderr!.on('data', (d) => (log += d));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`worker process did not start in time:\n${log}`)), 90_000);
    child.stdout!.on('data', (d) => {
      if (String(d).includes('ready')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`worker process exited with ${code}:\n${log}`));
    });
  });
  const ended = () => child.exitCode !== null || child.signalCode !== null;
  const signal = (sig: NodeJS.Signals) =>
    new Promise<void>((resolve) => {
      if (ended()) return resolve();
      child.once('exit', () => resolve());
      child.kill(sig);
    });
  return {
    child,
    kill: () => signal('SIGKILL'),
    stop: () => signal('SIGTERM'),
    freeze: () => void (ended() || child.kill('SIGSTOP')),
    thaw: () => void (ended() || child.kill('SIGCONT')),
  };
}
