// `npm run api`: the API alone, for production (run as many as you like behind a load
// balancer, beside `npm run worker`). Needs DATABASE_URL; migrations are applied by whichever
// process starts first (they take an advisory lock).
import { config } from '../activities/config.js';
import { startCatalogRefresh } from '../activities/catalog/catalog.js';
import { createApp } from '../api/app.js';
import { closeTemporalClient } from '../activities/temporalClient.js';
import { closeLocalModels } from '../activities/providers/local/index.js';
import { flushRequestRecords } from '../activities/inference/records.js';
import { flushLeases } from '../activities/ledger/leases.js';
import { openDatabase, prepareCatalog } from './boot.js';

const log = (m: string) => console.log(`[api] ${m}`);
if (!config.databaseUrl) {
  console.error('[api] DATABASE_URL is required here; `npm start` runs everything with an embedded database for local use.');
  process.exit(1);
}
const database = await openDatabase({ migrate: true, log });
await prepareCatalog(log);
startCatalogRefresh();
const server = createApp().listen(config.port, config.host, () => log(`listening on ${config.host}:${(server.address() as { port: number }).port}`));
const stop = () => server.close(() => void flushLeases({ close: true }).then(() => flushRequestRecords()).then(() => closeLocalModels()).then(() => closeTemporalClient()).then(() => database.stop()).then(() => process.exit(0)));
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
