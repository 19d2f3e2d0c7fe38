// The API's start-up preparation, run by `npm run api` as a short-lived process of its own
// (bin/api.ts): apply the migrations (under their advisory lock) and copy the catalog file into
// the database. What it needs — the catalog file's parser and schema, Prisma's query engine for
// the sync — is then gone with its process instead of staying in the memory of every API
// process for its whole life (about 120 MB). Exits 0 when the database is ready.
import { fileURLToPath } from 'node:url';
import { openDatabase, prepareCatalog, type Log } from './boot.js';

const log: Log = (m) => console.log(`[api] ${m}`);

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  try {
    const database = await openDatabase({ migrate: true, log });
    await prepareCatalog(log);
    await database.stop();
    process.exit(0);
  } catch (err) {
    console.error(`[api] start-up preparation failed: ${(err as Error).message}`);
    process.exit(1);
  }
}
