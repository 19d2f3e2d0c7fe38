// The Temporal worker: registers every workflow and activity, and makes sure the schedules
// exist. `npm run worker` runs it alone (production); bin/start.ts runs it beside the API.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { DefaultLogger, NativeConnection, Runtime, Worker, type LogLevel } from '@temporalio/worker';
import { Client, Connection, ScheduleOverlapPolicy } from '@temporalio/client';
import * as activities from '../activities/index.js';
import {
  sweepExpiredHolds,
  sweepHostedFiles,
  sweepMemories,
  sweepSignInRecords,
  sweepStoredResponses,
} from '../workflows/index.js';
import { config } from '../activities/config.js';
import { explainTemporalError, temporalConnectionOptions } from '../activities/temporalConnection.js';

export const SEARCH_ATTRIBUTES = { SwitchyardAccountId: 'Keyword' } as const;

let runtimeInstalled = false;

/** `workflowBundle`: the workflows already bundled (bundleWorkflowCode), for a caller that starts many workers. */
export async function createWorker(address: string, workflowBundle?: { code: string }): Promise<Worker> {
  if (!runtimeInstalled) {
    // The SDK logs every bundling step at INFO; operators want warnings and errors.
    // shutdownSignals: [] because the entries (bin/start.ts, `npm run worker`) own SIGINT/SIGTERM and
    // stop the worker in their own order; the SDK's hook would drain it behind their back, and their
    // later shutdown() then failed with "Not running. Current state: DRAINING".
    Runtime.install({
      logger: new DefaultLogger((process.env.TEMPORAL_LOG_LEVEL ?? 'WARN') as LogLevel),
      shutdownSignals: [],
    });
    runtimeInstalled = true;
  }
  const connection = await NativeConnection.connect(temporalConnectionOptions(address)).catch(async (err: unknown) => {
    throw await explainTemporalError(err, address);
  });
  return Worker.create({
    connection,
    namespace: config.temporalNamespace,
    taskQueue: config.taskQueue,
    // the caller's bundle, the one `npm run build` made, or else bundled here from the sources
    ...(workflowBundle ? { workflowBundle } : workflowCode()),
    activities,
    // Sized for the 2-core machines this runs on by default; production tunes it.
    maxConcurrentActivityTaskExecutions: config.workerMaxActivities,
    // A cancel reaches a running activity only in the answer to one of its heartbeats, and the SDK
    // sends those at most every 0.8 × its heartbeat timeout (24 s for a background response): a
    // cancel route (which waits 5-10 s for the job to end) would mostly give up first. At most 2 s
    // costs one call per 2 s per running activity that beats that often.
    maxHeartbeatThrottleInterval: '2 seconds',
  });
}

/**
 * The workflow code: the bundle `npm run build` made ahead of time (dist/workflow-bundle.js, next to
 * the compiled bin/), or else the sources, which the SDK bundles (webpack + swc) at every start-up.
 */
function workflowCode(): { workflowBundle: { codePath: string } } | { workflowsPath: string } {
  const bundle = fileURLToPath(new URL('../workflow-bundle.js', import.meta.url));
  return existsSync(bundle) ? { workflowBundle: { codePath: bundle } } : { workflowsPath: workflowsPath() };
}

/** The workflows' entry: the sources, or the compiled tree when this runs from dist/ (npm run build). */
export function workflowsPath(): string {
  return fileURLToPath(new URL(`../workflows/index.${import.meta.url.endsWith('.ts') ? 'ts' : 'js'}`, import.meta.url));
}

/** Starts the worker's drain unless it is already draining or stopped (a second Ctrl-C is harmless). */
export function stopWorker(worker: Worker): void {
  if (worker.getState() === 'RUNNING') worker.shutdown();
}

/** A recurring job: a Temporal Schedule starting `workflow` (by reference, as jobs are started) every `every`. */
interface RecurringJob {
  scheduleId: string;
  workflow: () => Promise<number>;
  every: string;
}

/** The gateway's recurring jobs, each a Temporal Schedule starting a workflow. */
export const SCHEDULES: readonly RecurringJob[] = [
  // reservations whose request never settled (crashed process, lost connection)
  { scheduleId: 'switchyard-hold-sweeper', workflow: sweepExpiredHolds, every: '1 minute' },
  // hosted audio and video past their retention (24 hours by default)
  { scheduleId: 'switchyard-hosted-file-sweeper', workflow: sweepHostedFiles, every: '10 minutes' },
  // stored Responses API responses past their retention (7 days by default)
  { scheduleId: 'switchyard-stored-response-sweeper', workflow: sweepStoredResponses, every: '1 hour' },
  // ended sessions, used e-mail codes and sign-in rate-limit windows, a day after they stop mattering
  { scheduleId: 'switchyard-sign-in-sweeper', workflow: sweepSignInRecords, every: '1 hour' },
  // memories (POST /api/v1/memory) and seen-message records past their expiration_days
  { scheduleId: 'switchyard-memory-sweeper', workflow: sweepMemories, every: '1 hour' },
];

/** Idempotent: creates the schedules that do not exist yet. */
export async function ensureSchedules(address: string): Promise<void> {
  const connection = await Connection.connect(temporalConnectionOptions(address));
  try {
    const client = new Client({ connection, namespace: config.temporalNamespace });
    for (const { scheduleId, workflow, every } of SCHEDULES) {
      const exists = await client.schedule
        .getHandle(scheduleId)
        .describe()
        .then(
          () => true,
          () => false,
        );
      if (exists) continue;
      await client.schedule
        .create({
          scheduleId,
          spec: { intervals: [{ every }] },
          action: { type: 'startWorkflow', workflowType: workflow, taskQueue: config.taskQueue, args: [] },
          policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: every },
        })
        .catch((err: Error) => {
          if (!/already/i.test(err.message)) throw err;
        });
    }
  } finally {
    await connection.close();
  }
}

// `npm run worker`
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { openDatabase } = await import('./boot.js');
  const { ensureSearchAttributes } = await import('../temporal-dev/index.js');
  if (!config.databaseUrl || !config.temporalAddress) {
    console.error(
      '[worker] DATABASE_URL and TEMPORAL_ADDRESS are required; `npm start` runs everything for local use.',
    );
    process.exit(1);
  }
  const { prepareCatalog } = await import('./boot.js');
  const { startCatalogRefresh } = await import('../activities/catalog/catalog.js');
  const database = await openDatabase({ migrate: true, log: (m) => console.log(`[worker] ${m}`) });
  // activities run inference (background responses), so the worker needs the catalog too
  await prepareCatalog((m) => console.log(`[worker] ${m}`));
  startCatalogRefresh();
  const { address: _, ...secure } = temporalConnectionOptions(config.temporalAddress);
  await ensureSearchAttributes(config.temporalAddress, config.temporalNamespace, SEARCH_ATTRIBUTES, secure);
  const worker = await createWorker(config.temporalAddress);
  await ensureSchedules(config.temporalAddress);
  process.on('SIGINT', () => stopWorker(worker));
  process.on('SIGTERM', () => stopWorker(worker));
  const running = worker.run();
  console.log(
    `[worker] serving task queue ${config.taskQueue} of namespace ${config.temporalNamespace} at ${config.temporalAddress}`,
  );
  await running;
  // batch rows pay from this process's credit leases: write what is pending, give the rest back
  const { flushLeases } = await import('../activities/ledger/leases.js');
  await flushLeases({ close: true });
  await database.stop();
}
