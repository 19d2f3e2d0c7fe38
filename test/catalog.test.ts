import assert from 'node:assert/strict';
import { CatalogFileError, parseCatalog, readCatalogFile } from '../activities/catalog/file.js';
import { syncCatalog } from '../activities/catalog/sync.js';
import { loadCatalog } from '../activities/catalog/catalog.js';
import { config } from '../activities/config.js';
import { db } from '../activities/db.js';

const base = `
providers:
  p1: { name: P1, protocol: openai, base_url: http://127.0.0.1:1 }
models:
  - id: x/one
    name: One
    owned_by: x
    category: chat
    providers:
      - { provider: p1, upstream_model: one, price: { input: "1.5", output: "2" } }
`;

describe('catalog file', () => {
  after(async () => {
    await syncCatalog(await readCatalogFile(config.catalogFile));
    await loadCatalog();
  });

  it('parses prices exactly and applies the default markup', () => {
    const c = parseCatalog(`defaults: { markup_bps: 250 }\n${base}`);
    assert.equal(c.models[0].routes[0].inputPrice, 1_500_000_000n);
    assert.equal(c.models[0].routes[0].markupBps, 250);
  });

  it('reports mistakes with where they are', () => {
    assert.throws(
      () => parseCatalog(base.replace('"1.5"', '1.5')),
      (e: Error) => e instanceof CatalogFileError && /\/models\/0\/providers\/0\/price\/input/.test(e.message),
    );
    assert.throws(() => parseCatalog(base.replace('provider: p1', 'provider: nope')), /names provider "nope"/);
    assert.throws(
      () =>
        parseCatalog(
          `${base}  - { id: X/ONE, name: dup, owned_by: x, category: chat, providers: [{ provider: p1, upstream_model: a, price: { input: "1", output: "1" } }] }\n`,
        ),
      /already used/,
    );
    assert.throws(() => parseCatalog('models: ['), /not valid YAML/);
  });

  it('the shipped catalog file is valid', async () => {
    const c = await readCatalogFile(config.catalogFile);
    assert.ok(c.models.some((m) => m.id === 'local/stories260k'));
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
