// A real Temporal dev server (in memory, free ports) for the tests that need one, started on
// first use and shared by the whole run; plus a worker running the project's workflows.
import type { Worker } from '@temporalio/worker';
import { Client, Connection } from '@temporalio/client';
import { config } from '../../activities/config.js';
import { findTemporalCli, startDevServer } from '../../temporal-dev/index.js';
import { createWorker, SEARCH_ATTRIBUTES } from '../../bin/worker.js';
import { closeTemporalClient } from '../../activities/temporalClient.js';
import { workflowBundle } from './workflowBundle.js';

interface TestTemporal {
  address: string;
  client: Client;
  worker: Worker;
}

let started: Promise<TestTemporal> | undefined;
let cleanup: Array<() => Promise<unknown>> = [];

export async function useTemporal(): Promise<TestTemporal> {
  started ??= (async () => {
    const server = await startDevServer({
      cli: await findTemporalCli(),
      namespace: config.temporalNamespace,
      searchAttributes: SEARCH_ATTRIBUTES,
      uiPort: null,
    });
    cleanup.unshift(() => server.stop());
    config.temporalAddress = server.address;
    const connection = await Connection.connect({ address: server.address });
    cleanup.unshift(() => connection.close());
    const worker = await createWorker(server.address, workflowBundle());
    const running = worker.run();
    cleanup.unshift(async () => {
      worker.shutdown();
      await running;
    });
    return { address: server.address, client: new Client({ connection, namespace: config.temporalNamespace }), worker };
  })();
  const temporal = await started;
  // Said again on every use: a suite that put its settings back (keepConfig) may have put back the
  // address from before this process's server started, and the next suite would find none.
  config.temporalAddress = temporal.address;
  return temporal;
}

export async function stopTemporal(): Promise<void> {
  await closeTemporalClient();
  for (const fn of cleanup) await fn().catch(() => undefined);
  cleanup = [];
  started = undefined;
}
