// The catalog file (activities/catalog/file.ts), alone: prices parsed exactly, mistakes reported
// with where they are, and the shipped file valid. Syncing it into the database: test/catalog.test.ts.
import assert from 'node:assert/strict';
import { CatalogFileError, parseCatalog, readCatalogFile } from '../../activities/catalog/file.js';
import { config } from '../../activities/config.js';

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
});
