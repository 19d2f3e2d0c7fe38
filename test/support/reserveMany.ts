// Run as a separate process by the ledger race test: its own connection pool, like another
// API instance, firing reservations at one account. Prints how many succeeded.
import { connectDatabase, closeDatabase } from '../../activities/db.js';
import { InsufficientFunds } from '../../activities/ledger/ledger.js';
import { reserve } from '../../activities/ledger/holds.js';

const [url, accountId, count, usd, tag] = process.argv.slice(2);
connectDatabase(url, 8);
const results = await Promise.allSettled(
  Array.from({ length: Number(count) }, (_, i) =>
    reserve({ accountId, usd: BigInt(usd), idempotencyKey: `${tag}:${i}` }),
  ),
);
const unexpected = results.find((r) => r.status === 'rejected' && !(r.reason instanceof InsufficientFunds));
if (unexpected) {
  console.error((unexpected as PromiseRejectedResult).reason);
  process.exit(1);
}
console.log(JSON.stringify({ ok: results.filter((r) => r.status === 'fulfilled').length }));
await closeDatabase();
