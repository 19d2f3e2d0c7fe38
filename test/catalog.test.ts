import assert from 'node:assert/strict';
import { readCatalogFile } from '../activities/catalog/file.js';
import { syncCatalog } from '../activities/catalog/sync.js';
import { loadCatalog } from '../activities/catalog/catalog.js';
import { config } from '../activities/config.js';
import { db } from '../activities/db.js';

// The catalog file synced into the database (the file alone: test/unit/catalog-file.test.ts).
describe('catalog file', () => {
  after(async () => {
    await syncCatalog(await readCatalogFile(config.catalogFile));
    await loadCatalog();
  });

  it('sync hides models and routes that left the file, and brings them back', async () => {
    const full = await readCatalogFile(config.catalogFile);
    const fewer = { ...full, models: full.models.filter((m) => m.id !== 'deepseek/deepseek-v3') };
    await syncCatalog(fewer);
    let c = await loadCatalog();
    assert.equal(c.model('deepseek/deepseek-v3'), undefined);
    assert.ok(await db().prisma.model.findUnique({ where: { id: 'deepseek/deepseek-v3' } }), 'kept in the database');
    await syncCatalog(full);
    c = await loadCatalog();
    assert.equal(c.model('DeepSeek-Chat')?.id, 'deepseek/deepseek-v3');
  });
});
