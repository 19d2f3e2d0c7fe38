// Subscription plans with periods of seconds, for the tests that watch periods end: the catalog
// file's plans plus these, synced as an operator's file would be, and the file alone put back after.
import { config } from '../../activities/config.js';
import { loadCatalog } from '../../activities/catalog/catalog.js';
import { type CatalogFilePlan, readCatalogFile } from '../../activities/catalog/file.js';
import { syncCatalog } from '../../activities/catalog/sync.js';
import { parseAmount } from '../../activities/core/money.js';

const LOCAL = 'local/stories260k';

/** A plan on the built-in local model. */
export function testPlan(id: string, p: { price: string; periodSeconds: number; daily: number; monthly: number }) {
  return {
    id,
    name: `Test ${id}`,
    description: '',
    price: parseAmount(p.price, 'USD'),
    periodSeconds: p.periodSeconds,
    dailyLimit: p.daily,
    monthlyLimit: p.monthly,
    models: [LOCAL],
  } satisfies CatalogFilePlan;
}

/** Sync the catalog file's plans plus `plans` for this suite; the file alone again after it. */
export function usePlans(plans: CatalogFilePlan[]): void {
  before(async () => {
    const file = await readCatalogFile(config.catalogFile);
    await syncCatalog({ ...file, plans: [...file.plans, ...plans] });
    await loadCatalog();
  });
  after(async () => {
    await syncCatalog(await readCatalogFile(config.catalogFile));
    await loadCatalog();
  });
}
