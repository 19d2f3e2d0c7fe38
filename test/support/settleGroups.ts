// Run as a separate process by the hold-groups race test: its own connection pool, like another
// worker, settling the given holds (`<hold id>=<nano-USD>,...`) of one account, all at once,
// through the grouped path. Prints what each settlement says was charged.
import { connectDatabase, closeDatabase } from '../../activities/db.js';
import { groupedHolds } from '../../activities/ledger/holdGroups.js';

const [url, accountId, spec] = process.argv.slice(2);
connectDatabase(url, 4);
const holds = spec.split(',').map((s) => s.split('='));
const out = await Promise.all(
  holds.map(([holdId, usd]) => groupedHolds.settle({ accountId, holdId, usd: BigInt(usd) })),
);
console.log(JSON.stringify(out.map((s) => s.charged.toString())));
await closeDatabase();
