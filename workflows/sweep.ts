// How the retention sweepers delete: a batch at a time (one short activity each, so a large
// backlog never holds one long transaction), until a batch comes back short.
const SWEEP_BATCH = 200;

/** Calls `deleteBatch(SWEEP_BATCH)` until it deletes fewer; returns how many it deleted in all. */
export async function deleteInBatches(deleteBatch: (limit: number) => Promise<number>): Promise<number> {
  let total = 0;
  for (;;) {
    const deleted = await deleteBatch(SWEEP_BATCH);
    total += deleted;
    if (deleted < SWEEP_BATCH) return total;
  }
}
