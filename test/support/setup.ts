// Root-level hooks (this file is the first spec Mocha loads, see .mocharc.json; a --require'd
// hook file would get its own copies of the modules under tsx). One migrated database for the whole run (connected as the process-wide
// database), a loaded catalog, and a Temporal dev server started only if a test asks for one.
import { config } from '../../activities/config.js';
import { closeDatabase, connectDatabase } from '../../activities/db.js';
import { readCatalogFile } from '../../activities/catalog/file.js';
import { syncCatalog } from '../../activities/catalog/sync.js';
import { loadCatalog } from '../../activities/catalog/catalog.js';
import { createTestDatabase } from './database.js';
import { stopTemporal } from './temporal.js';
import { flushRequestRecords } from '../../activities/metering/records.js';
import { flushLeases } from '../../activities/ledger/leases.js';

let drop: (() => Promise<void>) | undefined;

before(async function (this: Mocha.Context) {
  this.timeout(120_000);
  const database = await createTestDatabase();
  drop = database.drop;
  config.databaseUrl = database.url;
  process.env.DATABASE_URL = database.url;
  connectDatabase(database.url, 20);
  await syncCatalog(await readCatalogFile(config.catalogFile));
  await loadCatalog();
});

after(async function (this: Mocha.Context) {
  this.timeout(60_000);
  await stopTemporal();
  await flushLeases({ close: true });
  await flushRequestRecords();
  await closeDatabase();
  await drop?.();
});
