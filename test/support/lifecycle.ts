// What every test process has before its first test and gives back after its last: its own migrated
// database (the process-wide one, with the catalog loaded) and, started only if a test asks for one,
// its own Temporal dev server (./temporal.ts). Serial runs have one such process; `npm test` runs
// files in parallel worker processes (see .mocharc.cjs), each of which opens its own on first use.
import { config } from '../../activities/config.js';
import { closeDatabase, connectDatabase } from '../../activities/db.js';
import { readCatalogFile } from '../../activities/catalog/file.js';
import { syncCatalog } from '../../activities/catalog/sync.js';
import { loadCatalog } from '../../activities/catalog/catalog.js';
import { copyTestDatabase, createTestDatabase, type TestDatabase } from './database.js';
import { stopTemporal } from './temporal.js';
import { flushRequestRecords } from '../../activities/metering/records.js';
import { flushLeases } from '../../activities/ledger/leases.js';

/** Set by the run's global setup (./hooks.ts) for the processes it starts: the migrated template's name. */
export const TEMPLATE_ENV = 'SWITCHYARD_TEST_TEMPLATE_DATABASE';
/** Set likewise: the tag every database of this run is named with, so the run's end drops them all. */
export const RUN_TAG_ENV = 'SWITCHYARD_TEST_RUN_TAG';

/**
 * Connections per pool (a process opens two pools of this size, see activities/db.ts). PostgreSQL
 * allows 100 in all: a lone process may take 2 x 20; parallel workers take 2 x 8 each, which leaves
 * room for the processes the multi-process tests start (2 x 5 or 2 x 8 each).
 */
function poolSize(): number {
  const set = Number(process.env.SWITCHYARD_TEST_POOL);
  if (set > 0) return set;
  return process.env.MOCHA_WORKER_ID === undefined ? 20 : 8;
}

let opened: Promise<TestDatabase> | undefined;

/** This process's database, made (or copied from the run's template) and connected on the first call. */
export function openTestDatabase(): Promise<TestDatabase> {
  opened ??= (async () => {
    const template = process.env[TEMPLATE_ENV];
    const tag = process.env[RUN_TAG_ENV] ?? String(process.pid);
    const database = template
      ? await copyTestDatabase(template, `${tag}_w${process.env.MOCHA_WORKER_ID ?? 0}`)
      : await createTestDatabase(tag);
    config.databaseUrl = database.url;
    process.env.DATABASE_URL = database.url;
    connectDatabase(database.url, poolSize());
    if (!template) await syncCatalog(await readCatalogFile(config.catalogFile));
    await loadCatalog();
    return database;
  })();
  return opened;
}

/** Stops this process's Temporal server, settles what is buffered, closes and drops its database. */
export async function closeTestDatabase(): Promise<void> {
  const database = await opened;
  opened = undefined;
  await stopTemporal();
  await flushLeases({ close: true });
  await flushRequestRecords();
  await closeDatabase();
  await database?.drop();
}

/** The template a run's workers copy: migrated, catalog synced, and nobody connected to it afterwards. */
export async function createTemplateDatabase(tag: string): Promise<TestDatabase> {
  const database = await createTestDatabase(`${tag}_template`);
  connectDatabase(database.url, 2);
  try {
    await syncCatalog(await readCatalogFile(config.catalogFile));
  } finally {
    await closeDatabase();
  }
  return database;
}
