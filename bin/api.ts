// `npm run api`: the API alone, for production (run as many as you like behind a load
// balancer, beside `npm run worker`). Needs DATABASE_URL; migrations are applied by whichever
// process starts first (they take an advisory lock).
//
// One Node process serves on one core. SWITCHYARD_API_PROCESSES=N (or `auto`, one per core)
// makes this a supervisor of N API processes sharing the port (node:cluster): it migrates and
// syncs the catalog once, starts them, replaces one that dies, and stops them all on
// SIGINT/SIGTERM. Each process is an ordinary API process (its own credit leases, key cache and
// rate-limit counters, as with several `npm run api`).
import { spawn } from 'node:child_process';
import cluster from 'node:cluster';
import { fileURLToPath } from 'node:url';
import { availableParallelism } from 'node:os';
import v8 from 'node:v8';
import { config } from '../activities/config.js';
import { loadCatalog, startCatalogRefresh } from '../activities/catalog/catalog.js';
import { createApp } from '../api/app.js';
import { closeTemporalClient, warmTemporalClient } from '../activities/temporalClient.js';
import { closeLocalModels } from '../activities/providers/local/index.js';
import { flushRequestRecords } from '../activities/metering/records.js';
import { flushLeases } from '../activities/ledger/leases.js';
import { forgetKeys } from '../activities/accounts/keys.js';
import { KEY_CHANGES, TEAM_BILLING_CHANGES, listenForChanges } from '../activities/accounts/cacheChanges.js';
import { forgetTeamBilling } from '../activities/ledger/teamBudget.js';
import { forgetCoverage, SUBSCRIPTION_CHANGES } from '../activities/ledger/allowance.js';
import { openDatabase, type Log } from './boot.js';

const log: Log = (m) => console.log(`[api${cluster.isWorker ? ` ${process.pid}` : ''}] ${m}`);
if (!config.databaseUrl) {
  console.error(
    '[api] DATABASE_URL is required here; `npm start` runs everything with an embedded database for local use.',
  );
  process.exit(1);
}

/** SWITCHYARD_API_PROCESSES: a count, or `auto` for one per core. */
function processCount(): number {
  const raw = (process.env.SWITCHYARD_API_PROCESSES ?? '1').trim().toLowerCase();
  if (raw === 'auto') return availableParallelism();
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) {
    console.error(`[api] SWITCHYARD_API_PROCESSES must be a whole number of at least 1, or "auto"; got "${raw}"`);
    process.exit(1);
  }
  return n;
}

// Under load an API process keeps little (about 45 MB live) but allocates fast, and V8 then lets
// the old generation grow to up to four times what a full collection kept before collecting it
// again: 300+ MB resident at 64 concurrent requests, almost all of it garbage. A full collection
// of so small a heap takes about 10 ms, so letting the heap grow by half instead costs well under
// 1% of CPU and keeps the process near 200 MB (README, Memory of one API process).
if (config.apiHeapGrowthPercent > 0) v8.setFlagsFromString(`--heap-growing-percent=${config.apiHeapGrowthPercent}`);

const processes = cluster.isPrimary ? processCount() : 1;
if (cluster.isPrimary && processes > 1) await supervise(processes);
else await serve();

/**
 * Migrate and sync the catalog in a short-lived process of its own (bin/prepare.ts), run the way
 * this one runs (compiled, or through tsx), so what that work loads does not stay in this
 * process's memory.
 */
async function prepare(): Promise<void> {
  const script = fileURLToPath(new URL(`./prepare.${import.meta.url.endsWith('.ts') ? 'ts' : 'js'}`, import.meta.url));
  const child = spawn(process.execPath, [...process.execArgv, script], { stdio: 'inherit' });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) {
    console.error('[api] the database could not be prepared; not starting');
    process.exit(1);
  }
}

/** Prepare the database once, then run `count` API processes until told to stop. */
async function supervise(count: number): Promise<void> {
  await prepare();

  let stopping = false;
  /** restarts in the last minute: a process that dies at once, every time, is not restarted forever */
  const restarts: number[] = [];
  const fork = () => cluster.fork({ SWITCHYARD_API_PREPARED: '1' });
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(0);
      return;
    }
    const now = Date.now();
    while (restarts.length && now - restarts[0] > 60_000) restarts.shift();
    if (restarts.length >= count * 3) {
      console.error(
        `[api] API processes keep dying (last: ${worker.process.pid}, ${signal ?? `exit ${code}`}); giving up`,
      );
      stopAll();
      return;
    }
    restarts.push(now);
    console.error(`[api] API process ${worker.process.pid} ended (${signal ?? `exit ${code}`}); starting another`);
    fork();
  });
  const stopAll = () => {
    if (stopping) return;
    stopping = true;
    const workers = Object.values(cluster.workers ?? {});
    if (workers.length === 0) process.exit(0);
    for (const w of workers) w?.process.kill('SIGTERM');
  };
  process.on('SIGINT', stopAll);
  process.on('SIGTERM', stopAll);
  log(`starting ${count} API processes`);
  for (let i = 0; i < count; i++) fork();
}

/** One API process: this one alone, or one of a supervisor's. */
async function serve(): Promise<void> {
  // A supervisor has migrated and synced the catalog already; its processes only read.
  if (!(cluster.isWorker && process.env.SWITCHYARD_API_PREPARED === '1')) await prepare();
  const database = await openDatabase({ migrate: false, log });
  const catalog = await loadCatalog();
  log(
    `catalog loaded; usable now: ${
      catalog
        .usable()
        .map((m) => m.id)
        .join(', ') || 'none'
    }`,
  );
  startCatalogRefresh();
  // keys revoked and team billing changed elsewhere (the CLI, other API processes, the worker) are
  // forgotten here at once
  const cacheChanges = listenForChanges(database.url, {
    [KEY_CHANGES]: forgetKeys,
    [TEAM_BILLING_CHANGES]: forgetTeamBilling,
    [SUBSCRIPTION_CHANGES]: forgetCoverage,
  });
  const server = createApp().listen(config.port, config.host, () => {
    log(`listening on ${config.host}:${(server.address() as { port: number }).port}`);
    warmTemporalClient(log);
  });
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    server.close(
      () =>
        void cacheChanges
          .stop()
          .then(() => flushLeases({ close: true }))
          .then(() => flushRequestRecords())
          .then(() => closeLocalModels())
          .then(() => closeTemporalClient())
          .then(() => database.stop())
          .then(() => process.exit(0)),
    );
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}
