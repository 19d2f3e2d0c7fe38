// Run as a separate process by the credit-lease race test: its own pool and its own leases,
// like another API instance, spending `count` requests of `usd` the way InferenceCall does (a
// lease share when the account affords one, else an exact hold). Prints what it served.
import { randomUUID } from 'node:crypto';
import { connectDatabase, closeDatabase } from '../../activities/db.js';
import { InsufficientFunds } from '../../activities/ledger/ledger.js';
import { reserve, settle } from '../../activities/ledger/holds.js';
import { flushLeases, reserveFromLease, settleLeased } from '../../activities/ledger/leases.js';

const [url, accountId, count, usd] = process.argv.slice(2);
connectDatabase(url, 8);
const cost = BigInt(usd);
let leased = 0;
let exact = 0;
await Promise.all(
  Array.from({ length: Number(count) }, async () => {
    const requestId = `req_${randomUUID().replace(/-/g, '')}`;
    const share = await reserveFromLease(accountId, cost);
    if (share) {
      settleLeased(share, { usd: cost, requestId, apiKeyId: null, reason: 'race' });
      leased++;
      return;
    }
    try {
      const hold = await reserve({ accountId, usd: cost, idempotencyKey: `hold:${requestId}`, requestId });
      await settle({ holdId: hold.id, usd: cost });
      exact++;
    } catch (err) {
      if (!(err instanceof InsufficientFunds)) throw err;
    }
  }),
);
await flushLeases({ close: true });
console.log(JSON.stringify({ leased, exact }));
await closeDatabase();
