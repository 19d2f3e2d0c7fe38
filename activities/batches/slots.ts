// The per-account limit on batch rows running at once (SWITCHYARD_BATCH_ACCOUNT_CONCURRENCY),
// across all of an account's batches and every worker process: each lane of a row activity (one
// row at a time) takes one of the account's slot rows before its first provider call and frees it
// when it has no rows left. Taking is one statement (SKIP LOCKED: concurrent takers never wait on
// each other's row locks). A slot is taken by the lane's name (batch, slice, lane), so a retried
// activity (its worker died) takes its own slots back at once; a slot whose holder died and never
// came back is free again after SLOT_TTL.
import { db } from '../db.js';
import { batchInProgress } from './store.js';

/** A dead holder's slot comes back after this; a live one renews its slots every minute (renewSlots). */
const SLOT_TTL = '15 minutes';
const WAIT_MS = 200;

// Only for a batch still running: a row of a batch being cancelled never takes a slot (nor starts).
const TAKE = `UPDATE batch_slots s SET holder = $3, expires_at = now() + interval '${SLOT_TTL}'
  FROM (SELECT slot FROM batch_slots
        WHERE account_id = $1 AND slot < $2 AND (holder = $3 OR holder IS NULL OR expires_at < now())
          AND EXISTS (SELECT 1 FROM batches WHERE id = $4 AND status = 'in_progress')
        ORDER BY holder = $3 DESC NULLS LAST, slot LIMIT 1 FOR UPDATE SKIP LOCKED) free
  WHERE s.account_id = $1 AND s.slot = free.slot RETURNING s.slot`;

async function tryTake(accountId: string, limit: number, holder: string, batchId: string): Promise<boolean> {
  const { rowCount } = await db().requestPool.query({
    name: 'batch_slot_take',
    text: TAKE,
    values: [accountId, limit, holder, batchId],
  });
  return (rowCount ?? 0) > 0;
}

/**
 * Wait for one of the account's `limit` slots for rows of `batchId`; true once `holder` has it,
 * false if the batch is no longer running. `alive` is called while waiting and may throw to stop
 * (a cancelled activity).
 */
export async function takeSlot(
  accountId: string,
  limit: number,
  holder: string,
  batchId: string,
  alive: () => void,
): Promise<boolean> {
  if (await tryTake(accountId, limit, holder, batchId)) return true;
  if (!(await batchInProgress(batchId))) return false;
  // the account's first rows, or a raised limit: make its slot rows, then try again
  await db().requestPool.query(
    `INSERT INTO batch_slots (account_id, slot) SELECT $1, g FROM generate_series(0, $2 - 1) g ON CONFLICT DO NOTHING`,
    [accountId, limit],
  );
  while (!(await tryTake(accountId, limit, holder, batchId))) {
    if (!(await batchInProgress(batchId))) return false;
    alive();
    await new Promise((r) => setTimeout(r, WAIT_MS));
  }
  return true;
}

export async function freeSlot(accountId: string, holder: string): Promise<void> {
  await db().requestPool.query({
    name: 'batch_slot_free',
    text: 'UPDATE batch_slots SET holder = NULL WHERE account_id = $1 AND holder = $2',
    values: [accountId, holder],
  });
}

/** Keeps the slots of holders named `<prefix>…` taken (a long-running activity's lanes). */
export async function renewSlots(accountId: string, prefix: string): Promise<void> {
  await db().requestPool.query(
    `UPDATE batch_slots SET expires_at = now() + interval '${SLOT_TTL}' WHERE account_id = $1 AND starts_with(holder, $2)`,
    [accountId, prefix],
  );
}
