// The indexed route matching (api/routeIndex.ts) must find exactly the layers @koa/router's own
// match() finds, for the app's real routes and for any path: the same params, methods, 405s and
// 404s follow from that. Checked against @koa/router's match() on the same router.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import Router, { type Layer, type MatchResult } from '@koa/router';
import { createApp } from '../../api/app.js';
import { indexRoutes } from '../../api/routeIndex.js';

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'PROPFIND', 'get'];

/** The app's one router (the middleware @koa/router's routes() returns carries it). */
function appRouter(): Router {
  const app = createApp();
  const found = app.middleware.map((m) => (m as { router?: Router }).router).find(Boolean);
  assert.ok(found, 'the app mounts a router');
  return found;
}

/** What a match found, by layer position, so two results compare as plain data. */
function shape(router: Router, m: MatchResult) {
  const at = (l: Layer) => router.stack.indexOf(l);
  return { path: m.path.map(at), pathAndMethod: m.pathAndMethod.map(at), route: m.route };
}

/** @koa/router's own match(), on the same layers. */
const reference = (router: Router, path: string, method: string) =>
  shape(router, Router.prototype.match.call(router, path, method));

/** A path each layer matches (parameters and wildcards filled in), and variants around it. */
function pathsNear(layer: Layer): string[] {
  const path = String(layer.path).replace(/:\w+/g, 'tm_42').replace(/\*\w+/g, 'open/ai/gpt-4o');
  const upper = path.toUpperCase();
  const parts = path.split('/');
  return [
    path,
    `${path}/`,
    upper,
    path.replace(/^\/api/, '/API'),
    `${path}/extra`,
    `${path}x`,
    parts.slice(0, -1).join('/') || '/',
    path.replace(/\/[^/]*$/, '/other'),
    path.replace('tm_42', 'tm%2F42'),
    `//${path}`,
  ];
}

describe('route matching by path segments', () => {
  const router = appRouter();

  it('finds the same layers as @koa/router for every route, its variants and stray paths', () => {
    assert.ok(router.stack.length > 100, 'the real route table');
    const paths = [
      ...router.stack.flatMap(pathsNear),
      '/',
      '',
      '*',
      '/nope',
      '/api',
      '/api/v1',
      '/api/v1/',
      '/v1/chat',
      '/api/models//providers',
      '/api/models/a/b/c/providers/',
      '/api/v1/chat/completions?x=1',
    ];
    let routed = 0;
    for (const path of paths) {
      for (const method of METHODS) {
        const expected = reference(router, path, method);
        assert.deepEqual(shape(router, router.match(path, method)), expected, `${method} ${path}`);
        if (expected.route) routed++;
      }
    }
    assert.ok(routed > 200, `routes were actually found (${routed})`);
  });

  it('agrees with @koa/router on random paths made of the routes’ own segments', () => {
    const segments = [...new Set(router.stack.flatMap((l) => String(l.path).split('/')))];
    const segment = fc.oneof(
      fc.constantFrom(...segments),
      fc.constantFrom(...segments).map((s) => s.toUpperCase()),
      fc.string({ maxLength: 4 }),
    );
    fc.assert(
      fc.property(fc.array(segment, { maxLength: 7 }), fc.boolean(), fc.constantFrom(...METHODS), (parts, slash, m) => {
        const path = `/${parts.join('/')}${slash ? '/' : ''}`;
        assert.deepEqual(shape(router, router.match(path, m)), reference(router, path, m), `${m} ${path}`);
      }),
      { numRuns: 5000 },
    );
  });

  it('sees layers added after its first match, in their place, and layers it cannot file', () => {
    const r = indexRoutes(new Router());
    r.get('/a/:id', () => undefined);
    assert.equal(r.match('/a/1', 'GET').route, true);
    r.post('/a/:id', () => undefined);
    r.get(/^\/re(gex)?$/i, () => undefined);
    r.get('/Case', () => undefined);
    const sensitive = new Router({ sensitive: true });
    sensitive.get('/Only/This', () => undefined);
    r.use(sensitive.routes());
    for (const [path, method] of [
      ['/a/1', 'POST'],
      ['/regex', 'GET'],
      ['/case', 'GET'],
      ['/Only/This', 'GET'],
      ['/only/this', 'GET'],
    ]) {
      const m = r.match(path, method);
      assert.deepEqual(shape(r, m), reference(r, path, method), `${method} ${path}`);
    }
    assert.equal(r.match('/a/1', 'POST').route, true);
    assert.equal(r.match('/regex', 'GET').route, true);
    assert.equal(r.match('/CASE', 'GET').route, true);
    assert.equal(r.match('/Only/This', 'GET').route, true);
    assert.equal(r.match('/only/this', 'GET').route, false);
  });
});
