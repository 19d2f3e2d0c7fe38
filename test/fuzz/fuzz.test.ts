// The fuzz suite (issue 11, "keep it found"): every route the router serves, read off the router
// with its envelope and Ajv schema, gets hand-written hostile requests (encodings, depth, NUL, huge
// numbers, content types, compression bombs, HTTP framing, methods, paths) and requests generated
// from its schema by fast-check, valid and broken in one place, against loopback upstreams that
// speak the real protocols. For every answer: no 5xx, the route's own envelope, no stack trace or
// internal detail; for every refused request: nothing charged, nothing held; afterwards: the
// process still answers, nothing went unhandled, the books balance.
//
// Bounded for CI: a fixed seed (the same cases every run) and a fresh seed per run (new cases each
// time, printed on failure). FUZZ_SEED=<n> replays a run's seed; FUZZ_RUNS=<n> sets how many
// generated cases each route gets per seed. `npm run bench:fuzz` runs it longer (bench/fuzz.ts).
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { createApp } from '../../api/app.js';
import { catalog } from '../../activities/catalog/catalog.js';
import { flushLeases } from '../../activities/ledger/leases.js';
import { useProviderEnv } from '../support/providerEnv.js';
import { useTemporal } from '../support/temporal.js';
import { assertBooksBalance } from '../support/books.js';
import { makeFixtures } from './fixtures.js';
import { hostileCases } from './hostile.js';
import { closeAgent, send } from './http.js';
import { servedRoutes } from './routes.js';
import type { ServedRoute } from './served.js';
import {
  assertAlive,
  failureReport,
  generatedCases,
  newTally,
  runCases,
  summary,
  type Tally,
  type Target,
} from './run.js';
import { startUpstreams, type Upstreams } from './upstreams.js';

const FIXED_SEED = 11;
const RUN_SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : Math.floor(Math.random() * 2 ** 31);
const RUNS = Number(process.env.FUZZ_RUNS ?? 12);
const OPTS = { concurrency: 4, timeoutMs: 15_000 };

function verdict(tally: Tally, started: number, seed?: number): void {
  console.log(`      ${summary(tally, (Date.now() - started) / 1000)}`);
  if (process.env.FUZZ_VERBOSE) {
    for (const s of tally.slowest) console.log(`        ${s.ms} ms ${s.what}`);
    const kinds = Object.entries(tally.byKind)
      .sort((a, b) => b[1] - a[1])
      .slice(0, 15);
    console.log(`        time by kind: ${kinds.map(([k, ms]) => `${k} ${(ms / 1000).toFixed(1)} s`).join(', ')}`);
  }
  if (!tally.failures.length) return;
  const replay = seed === undefined ? '' : `\n  replay: FUZZ_SEED=${seed} npm run test:one -- test/fuzz/fuzz.test.ts`;
  assert.fail(
    `${tally.failures.length} of ${tally.sent} requests failed:\n${failureReport(tally).join('\n')}${replay}`,
  );
}

describe('fuzz: every served route, hostile and generated requests', function () {
  this.timeout(180_000);
  let server: ReturnType<ReturnType<typeof createApp>['listen']>;
  let upstreams: Upstreams;
  let restoreEnv: () => Promise<void>;
  let target: Target;
  let routes: ServedRoute[];
  const jobs = new Set<string>();
  const unhandled: unknown[] = [];
  const onUnhandled = (e: unknown) => unhandled.push(e);

  before(async () => {
    process.on('uncaughtException', onUnhandled);
    process.on('unhandledRejection', onUnhandled);
    await useTemporal();
    upstreams = await startUpstreams();
    restoreEnv = await useProviderEnv(upstreams.env);
    const app = createApp();
    routes = servedRoutes(app);
    server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    const origin = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    const { values } = await makeFixtures(origin, upstreams.fal);
    target = { origin, fixtures: values, secrets: upstreams.secrets, settle: () => flushLeases() };
    console.log(`      fuzz seeds: fixed ${FIXED_SEED}, this run ${RUN_SEED} (FUZZ_SEED=${RUN_SEED} replays it)`);
  });

  after(async () => {
    // what the fuzz started stops now: cancelled through the API, which releases its money
    const key = target?.fixtures.get('key:rich');
    await Promise.all(
      [...jobs].map((id) =>
        send(
          target.origin,
          {
            method: 'POST',
            path: id.startsWith('resp_') ? `/v1/responses/${id}/cancel` : '/api/generate-video/cancel',
            headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
            body: id.startsWith('resp_') ? undefined : Buffer.from(JSON.stringify({ runId: id })),
          },
          15_000,
        ),
      ),
    );
    closeAgent();
    await new Promise((r) => server?.close(r));
    await upstreams?.close();
    await restoreEnv?.();
    process.off('uncaughtException', onUnhandled);
    process.off('unhandledRejection', onUnhandled);
  });

  it('reads every served route off the router, with its envelope and schema', () => {
    assert.ok(routes.length >= 35, `only ${routes.length} routes`);
    const paths = routes.map((r) => r.path);
    for (const p of ['/api/v1/chat/completions', '/v1/messages', '/api/tts', '/api/media/:id', '/api/v1/responses/:id'])
      assert.ok(paths.includes(p), `${p} not found on the router`);
    const byPath = new Map(routes.map((r) => [r.path, r]));
    assert.equal(byPath.get('/v1/messages')?.envelope, 'message');
    assert.equal(byPath.get('/api/tts')?.envelope, 'legacy');
    assert.ok(byPath.get('/api/v1/chat/completions')?.body?.properties?.messages, 'chat body schema');
    assert.ok(byPath.get('/api/tts/status')?.query?.properties?.runId, 'tts status query schema');
    // every endpoint the catalog claims for a model (test/catalog-claims.test.ts) is among them
    const claimed = new Set(catalog().models.flatMap((m) => m.supportedEndpoints));
    const unfuzzed = [...claimed].filter((e) => !paths.includes(e.startsWith('/v1/') ? `/api${e}` : e));
    assert.deepEqual(unfuzzed, []);
    // every route that takes a JSON body validates it with a schema the fuzzer can read (an x402
    // completion takes none: it runs the quoted request's stored body through that route's schema)
    const unchecked = routes.filter(
      (r) =>
        r.methods.includes('POST') &&
        !r.body &&
        !r.multipart &&
        !/cancel|check-balance|check-nano-balance|x402\/complete/.test(r.path),
    );
    assert.deepEqual(
      unchecked.map((r) => r.path),
      [],
    );
  });

  it('hand-written hostile requests: encodings, depth, NUL, numbers, bombs, framing, methods', async () => {
    const tally = newTally();
    const started = Date.now();
    await runCases(target, hostileCases(routes), tally, OPTS);
    for (const j of tally.jobs) jobs.add(j);
    assert.equal(await assertAlive(target), undefined);
    verdict(tally, started);
  });

  it(`requests generated from each route's schema, fixed seed ${FIXED_SEED}`, async () => {
    const tally = newTally();
    const started = Date.now();
    await runCases(target, generatedCases(routes, FIXED_SEED, RUNS), tally, OPTS);
    for (const j of tally.jobs) jobs.add(j);
    assert.equal(await assertAlive(target), undefined);
    verdict(tally, started, FIXED_SEED);
  });

  it("requests generated from each route's schema, this run's seed", async () => {
    const tally = newTally();
    const started = Date.now();
    await runCases(target, generatedCases(routes, RUN_SEED, RUNS), tally, OPTS);
    for (const j of tally.jobs) jobs.add(j);
    assert.equal(await assertAlive(target), undefined);
    verdict(tally, started, RUN_SEED);
  });

  it('valid advisor requests answer through the loopbacks, each pair of protocols, each mode', async () => {
    // the generated chat cases carry `advisor` too (hints.ts); these are valid ones, made sure of
    const key = target.fixtures.get('key:rich');
    const pairs = [
      ['openai/gpt-4o-mini', 'anthropic/claude-3-5-haiku', 'required'],
      ['anthropic/claude-3-5-haiku', 'google/gemini-2.0-flash', 'required'],
      ['google/gemini-2.0-flash', 'openai/gpt-4o-mini', 'required'],
      ['openai/gpt-4o-mini', 'google/gemini-2.0-flash', 'auto'],
      ['anthropic/claude-3-5-haiku', 'openai/gpt-4o-mini', 'auto'],
      ['google/gemini-2.0-flash', 'anthropic/claude-3-5-haiku', 'auto'],
    ];
    for (const [model, advisor, mode] of pairs) {
      const body = {
        model,
        messages: [{ role: 'user', content: 'Which is larger, 9.11 or 9.9?' }],
        max_tokens: 32,
        advisor: { model: advisor, mode },
      };
      const o = await send(
        target.origin,
        {
          method: 'POST',
          path: '/api/v1/chat/completions',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: Buffer.from(JSON.stringify(body)),
        },
        15_000,
      );
      const a = o.answers[0];
      const text = a?.body.toString('utf8') ?? String(o.error);
      assert.equal(a?.status, 200, `${model} advised by ${advisor} (${mode}): ${text.slice(0, 300)}`);
      const json = JSON.parse(text);
      assert.equal(json.object, 'chat.completion');
      assert.equal(json.advisor.model, advisor);
      assert.ok(json.advisor.phases.length >= 1 && json.choices[0].message.content);
      if (mode === 'required')
        assert.deepEqual(
          json.advisor.phases.map((p: { phase: string }) => p.phase),
          ['advisor', 'executor'],
        );
    }
  });

  it('requests generated while the upstreams fail: down, refusing their credentials, cutting streams', async () => {
    const tally = newTally();
    const started = Date.now();
    // the routes that reach an upstream: whatever they answer, it is in their envelope, leaks
    // nothing of the upstream's, and a refused request is charged nothing
    const upstreamRoutes = routes.filter((r) => r.body && !/count_tokens|video/.test(r.path));
    try {
      for (const how of ['down', 'credentials', 'cut'] as const) {
        upstreams.fail(how);
        const cases = generatedCases(upstreamRoutes, FIXED_SEED, Math.ceil(RUNS / 3), true).map((c) => ({
          ...c,
          kind: `upstreams ${how}: ${c.kind}`,
        }));
        await runCases(target, cases, tally, { ...OPTS, upstreamsFailing: true });
      }
    } finally {
      upstreams.heal();
    }
    for (const j of tally.jobs) jobs.add(j);
    assert.equal(await assertAlive(target), undefined);
    verdict(tally, started, FIXED_SEED);
  });

  it('the process is up, nothing went unhandled, and the books balance', async () => {
    assert.equal(await assertAlive(target), undefined);
    assert.deepEqual(unhandled.map(String), []);
    await assertBooksBalance();
  });
});
