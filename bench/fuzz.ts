// `npm run bench:fuzz`: the fuzz suite (test/fuzz/) for longer, against the gateway as `npm run api`
// runs it (its own process, compiled, its Node flags), with the worker in a process of its own, a
// Temporal dev server, the bench database and the loopback upstreams. First the hand-written hostile
// requests, then rounds of requests generated from every route's schema (a new seed each round),
// every fifth round with the upstreams failing (down, refusing credentials, cutting streams).
// Everything the CI suite checks is checked for every request; the API process's RSS is sampled
// throughout. Settings: FUZZ_COUNT (requests, default 20000), FUZZ_SECONDS (time limit, 600),
// FUZZ_SEED (the first round's seed; random by default, printed), FUZZ_CONCURRENCY (8), FUZZ_RUNS
// (generated requests per route per round, 20). Exits 1 if any request failed.
import { startDevServer, findTemporalCli } from '../temporal-dev/index.js';
import { SEARCH_ATTRIBUTES } from '../bin/worker.js';
import { config } from '../activities/config.js';
import { loadCatalog } from '../activities/catalog/catalog.js';
import { createApp } from '../api/app.js';
import { startWorkerProcess } from '../test/support/workerProcess.js';
import { makeFixtures } from '../test/fuzz/fixtures.js';
import { hostileCases } from '../test/fuzz/hostile.js';
import { closeAgent } from '../test/fuzz/http.js';
import { servedRoutes } from '../test/fuzz/routes.js';
import {
  assertAlive,
  failureReport,
  generatedCases,
  newTally,
  runCases,
  summary,
  type Tally,
} from '../test/fuzz/run.js';
import { startUpstreams } from '../test/fuzz/upstreams.js';
import { pidOf, rssMb, startProcess, withBenchDatabase } from './harness.js';

const COUNT = Number(process.env.FUZZ_COUNT ?? 20_000);
const SECONDS = Number(process.env.FUZZ_SECONDS ?? 600);
const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : Math.floor(Math.random() * 2 ** 31);
const CONCURRENCY = Number(process.env.FUZZ_CONCURRENCY ?? 8);
const RUNS = Number(process.env.FUZZ_RUNS ?? 20);
const FAILING = ['down', 'credentials', 'cut'] as const;

await withBenchDatabase(async ({ url }) => {
  const upstreams = await startUpstreams();
  const temporal = await startDevServer({
    cli: await findTemporalCli(),
    namespace: config.temporalNamespace,
    searchAttributes: SEARCH_ATTRIBUTES,
    uiPort: null,
  });
  const env = { DATABASE_URL: url, TEMPORAL_ADDRESS: temporal.address, ...upstreams.env };
  Object.assign(process.env, env);
  // the API first: it migrates and syncs the catalog, which the worker then loads
  const port = await startProcess(
    '../bin/api.ts',
    [],
    { ...env, PORT: '0', HOST: '127.0.0.1' },
    /listening on 127\.0\.0\.1:(\d+)/,
  );
  const worker = await startWorkerProcess(env);
  const pid = pidOf(port);
  const origin = new URL(`http://127.0.0.1:${port}`);
  await loadCatalog(); // the API process synced it; the cases' hints read it
  const routes = servedRoutes(createApp());
  const rssStart = rssMb(pid);
  const { values } = await makeFixtures(origin, upstreams.fal);
  // the API process writes credit-lease charges every 20 ms: wait for them before reading the ledger
  const target = {
    origin,
    fixtures: values,
    secrets: upstreams.secrets,
    settle: () => new Promise<void>((r) => setTimeout(r, 100)),
  };
  const rssIdle = rssMb(pid);
  console.log(
    `bench:fuzz: ${routes.length} routes, seed ${SEED}, up to ${COUNT} requests or ${SECONDS} s, ` +
      `${CONCURRENCY} at a time; API process RSS ${rssStart} MB after start, ${rssIdle} MB after the fixtures`,
  );

  const started = Date.now();
  const deadline = started + SECONDS * 1000;
  const tally: Tally = newTally();
  const peaks: Record<string, number> = {};
  let phase = 'hostile';
  const sampler = setInterval(() => {
    peaks[phase] = Math.max(peaks[phase] ?? 0, rssMb(pid));
  }, 250);
  const progress = setInterval(() => {
    const s = Math.round((Date.now() - started) / 1000);
    console.log(
      `  ${String(s).padStart(5)} s  ${String(tally.sent).padStart(7)} requests  RSS ${rssMb(pid)} MB  (${phase})`,
    );
  }, 10_000);
  // generous: the built-in engines queue on a busy CPU; a hang is still found, slowness is reported below
  const opts = { concurrency: CONCURRENCY, timeoutMs: 60_000, deadline };
  let dead: string | undefined;

  await runCases(target, hostileCases(routes), tally, opts);
  for (let round = 0; tally.sent < COUNT && Date.now() < deadline && !dead; round++) {
    const failing = round % 5 === 4 ? FAILING[Math.floor(round / 5) % FAILING.length] : undefined;
    phase = failing ? `generated, upstreams ${failing}` : 'generated';
    let cases = generatedCases(failing ? routes.filter((r) => r.body) : routes, SEED + round, RUNS, !!failing);
    if (failing) cases = cases.map((c) => ({ ...c, kind: `upstreams ${failing}: ${c.kind}` }));
    cases = cases.slice(0, COUNT - tally.sent);
    if (failing) upstreams.fail(failing);
    try {
      await runCases(target, cases, tally, { ...opts, upstreamsFailing: !!failing });
    } finally {
      upstreams.heal();
    }
    upstreams.forget();
    dead = await assertAlive(target);
  }
  clearInterval(progress);
  phase = 'after';
  await new Promise((r) => setTimeout(r, 5000));
  clearInterval(sampler);
  const rssAfter = rssMb(pid);
  const seconds = (Date.now() - started) / 1000;

  console.log(`\nbench:fuzz summary: ${summary(tally, seconds)} (${Math.round(tally.sent / seconds)} req/s)`);
  const generatedPeak = Math.max(
    0,
    ...Object.entries(peaks).flatMap(([p, v]) => (p.startsWith('generated') ? [v] : [])),
  );
  console.log(
    `  API process RSS: ${rssStart} MB after start, ${rssIdle} MB idle, ` +
      `peak ${peaks.hostile ?? '?'} MB during the hostile requests (bombs, 11 MB bodies), ` +
      `peak ${generatedPeak} MB during the generated ones, ${rssAfter} MB 5 s after the last`,
  );
  console.log(`  the API process ${dead ? `stopped answering: ${dead}` : 'answered /health to the end'}`);
  console.log('  slowest answers:');
  for (const s of tally.slowest.slice(0, 5)) console.log(`    ${s.ms} ms ${s.what.slice(0, 200)}`);
  for (const line of failureReport(tally)) console.log(line);
  closeAgent();
  await worker.kill();
  await upstreams.close();
  await temporal.stop();
  if (dead || tally.failures.length) process.exitCode = 1;
});
