// `npm start`: the whole gateway in one process tree for local use. Database (embedded unless
// DATABASE_URL), migrations, catalog, Temporal dev server (unless TEMPORAL_ADDRESS), worker and
// API. Ctrl-C stops everything in reverse order. Production runs `npm run api` and
// `npm run worker` as separate processes instead.
import path from 'node:path';
import type { Server } from 'node:http';
import { config } from '../activities/config.js';
import { startCatalogRefresh, stopCatalogRefresh } from '../activities/catalog/catalog.js';
import { createApp } from '../api/app.js';
import { closeTemporalClient, warmTemporalClient } from '../activities/temporalClient.js';
import { temporalConnectionOptions } from '../activities/temporalConnection.js';
import { closeLocalModels } from '../activities/providers/local/index.js';
import { flushRequestRecords } from '../activities/metering/records.js';
import { flushLeases } from '../activities/ledger/leases.js';
import { forgetKeys } from '../activities/accounts/keys.js';
import { KEY_CHANGES, TEAM_BILLING_CHANGES, listenForChanges } from '../activities/accounts/cacheChanges.js';
import { forgetTeamBilling } from '../activities/ledger/teamBudget.js';
import { forgetCoverage, SUBSCRIPTION_CHANGES } from '../activities/ledger/allowance.js';
import { findTemporalCli, startDevServer, ensureSearchAttributes } from '../temporal-dev/index.js';
import { createWorker, ensureSchedules, SEARCH_ATTRIBUTES, stopWorker } from './worker.js';
import { ensureBootstrap, openDatabase, prepareCatalog, type Log } from './boot.js';

const log: Log = (m) => console.log(`[switchyard] ${m}`);
const stops: Array<[string, () => Promise<unknown>]> = [];

async function main() {
  const database = await openDatabase({ migrate: true, log });
  stops.unshift(['database', () => database.stop()]);
  stops.unshift(['request records', () => flushRequestRecords()]);
  stops.unshift(['credit leases', () => flushLeases({ close: true })]);
  stops.unshift(['local models', () => closeLocalModels()]);

  await prepareCatalog(log);
  startCatalogRefresh();
  stops.unshift(['catalog refresh', async () => stopCatalogRefresh()]);
  // With DATABASE_URL, keys revoked and team billing changed elsewhere (the CLI) are forgotten at once. The embedded
  // database serves one connection, and the CLI cannot reach it while this runs.
  if (!database.embedded) {
    const cacheChanges = listenForChanges(database.url, {
      [KEY_CHANGES]: forgetKeys,
      [TEAM_BILLING_CHANGES]: forgetTeamBilling,
      [SUBSCRIPTION_CHANGES]: forgetCoverage,
    });
    stops.unshift(['cache-change listener', () => cacheChanges.stop()]);
  }
  const local = await ensureBootstrap(log);

  let address = config.temporalAddress;
  let uiUrl: string | null = null;
  if (address) {
    const { address: _, ...secure } = temporalConnectionOptions(address);
    await ensureSearchAttributes(address, config.temporalNamespace, SEARCH_ATTRIBUTES, secure);
  } else {
    const s = config.temporalSecurity;
    if (s.tls || s.apiKey) {
      throw new Error('TEMPORAL_TLS_* and TEMPORAL_API_KEY are for a cluster at TEMPORAL_ADDRESS, not the dev server');
    }
    const cli = await findTemporalCli({ log });
    const server = await startDevServer({
      cli,
      dataFile: path.join(config.dataDir, 'temporal.db'),
      namespace: config.temporalNamespace,
      searchAttributes: SEARCH_ATTRIBUTES,
      port: Number(process.env.TEMPORAL_DEV_PORT ?? 7233),
      uiPort: Number(process.env.TEMPORAL_DEV_UI_PORT ?? 8233),
      // While stopping, the server cancels the tasks it was processing and warns about each
      // ("context canceled"): that is the stop itself, not a problem worth printing.
      log: (m) => {
        if (!(stopping && m.includes('context canceled'))) log(`temporal: ${m}`);
      },
      // Ctrl-C reaches only this process, which stops the worker before the server (see shutdown()).
      ownProcessGroup: true,
    });
    stops.unshift(['temporal dev server', () => server.stop()]);
    address = server.address;
    uiUrl = server.uiUrl;
    config.temporalAddress = address; // the API's Temporal client starts workflows here
  }
  stops.unshift(['temporal client', () => closeTemporalClient()]);

  const worker = await createWorker(address);
  const running = worker.run();
  stops.unshift([
    'worker',
    async () => {
      stopWorker(worker);
      await running;
    },
  ]);
  await ensureSchedules(address);

  const server: Server = createApp().listen(config.port, config.host);
  await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject));
  stops.unshift(['api', () => new Promise((r) => server.close(r))]);
  warmTemporalClient(log);

  const api = `http://${config.host === '0.0.0.0' ? '127.0.0.1' : config.host}:${config.port}`;
  console.log(
    [
      '',
      'Switchyard is running.',
      `  API            ${api}/api/v1   (also ${api}/v1)`,
      `  Temporal       ${address}   namespace ${config.temporalNamespace}`,
      `  Temporal UI    ${uiUrl ?? "(your Temporal server's own UI)"}`,
      `  Database       ${database.embedded ? `embedded PostgreSQL in ${path.join(config.dataDir, 'postgres')}` : 'DATABASE_URL'}`,
      `  Local API key  ${local.key ?? '(not shown)'}   ${local.note}`,
      ...(local.login ? [`  Sign in        ${api}/api/auth/login   as ${local.login}`] : []),
      '',
      `  Try:  curl ${api}/api/v1/models`,
      '  Ctrl-C stops everything.',
      '',
    ].join('\n'),
  );
}

let stopping = false;
async function shutdown(code: number) {
  if (stopping) return;
  stopping = true;
  log('stopping…');
  let failed = false;
  for (const [name, stop] of stops) {
    await stop().catch((err: Error) => {
      failed = true;
      log(`stopping ${name} failed: ${err.message}`);
    });
  }
  log(failed ? 'stopped, with the errors above' : 'stopped');
  process.exit(code);
}

process.on('SIGINT', () => void shutdown(0));
process.on('SIGTERM', () => void shutdown(0));
main().catch((err: Error) => {
  console.error(`[switchyard] start-up failed: ${err.message}`);
  void shutdown(1);
});
