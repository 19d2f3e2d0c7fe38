// `npm run bench:compare`: has a change made the gateway cheaper? Two gateways measured side by
// side, CPU time per request and throughput, in alternating one-second windows (noise on a shared
// machine hits both alike; separate runs of `npm run bench` differ by more than most changes do),
// with the bare proxy for scale:
// - A: the gateway of another checkout, BENCH_BASE=<path> (it needs its own `npm install`; e.g.
//   `git worktree add ../base HEAD~1 && (cd ../base && npm install)`), or of this one when unset;
// - B: this checkout's gateway, or another's with BENCH_HEAD=<path> (to compare two past commits
//   with this checkout's harness).
// BENCH_A_ENV / BENCH_B_ENV (JSON objects) add settings to either, to compare settings instead of
// code. BENCH_SECONDS windows each (default 5), BENCH_ONLY and BENCH_CALLERS as for `npm run bench`.
import path from 'node:path';
import {
  CONCURRENCY,
  SECONDS,
  chatBody,
  modes,
  pidOf,
  printTable,
  startProcess,
  stopProcesses,
  throughputs,
  withBenchDatabase,
} from './harness.js';

const env = (name: string): Record<string, string> => JSON.parse(process.env[name] || '{}');
const entry = (checkout: string | undefined) => (checkout ? path.resolve(checkout, 'bin/api.ts') : '../bin/api.ts');
const base = entry(process.env.BENCH_BASE);
const head = entry(process.env.BENCH_HEAD);

await withBenchDatabase(async ({ url, keys }) => {
  const upPort = await startProcess('./upstream.ts', [], {}, /"port":(\d+)/);
  const upstream = `http://127.0.0.1:${upPort}`;
  const proxyPort = await startProcess('./proxy.ts', [`${upstream}/v1`], {}, /"port":(\d+)/);
  const gatewayEnv = {
    DATABASE_URL: url,
    PORT: '0',
    OPENAI_API_KEY: 'sk-bench',
    OPENAI_BASE_URL: `${upstream}/v1`,
    HOST: '127.0.0.1',
  };
  const listening = /listening on 127\.0\.0\.1:(\d+)/;
  // BENCH_PROFILE=1: a CPU profile of each gateway in .data/prof, measured under the same load
  // (bench/profile-summary.ts compares their shares)
  const profile = process.env.BENCH_PROFILE === '1';
  const aPort = await startProcess(base, [], { ...gatewayEnv, ...env('BENCH_A_ENV') }, listening, profile);
  const bPort = await startProcess(head, [], { ...gatewayEnv, ...env('BENCH_B_ENV') }, listening, profile);
  if (profile) console.log(`profiles in .data/prof: A is CPU.*.${pidOf(aPort)}.*, B is CPU.*.${pidOf(bPort)}.*`);

  const rows: string[][] = [];
  for (const stream of modes()) {
    const body = chatBody(stream);
    await throughputs(
      [
        { port: aPort, keys },
        { port: bPort, keys },
      ],
      '/api/v1/chat/completions',
      body,
    ); // warm-up
    const [proxy, a, b] = await throughputs(
      [{ port: proxyPort }, { port: aPort, keys }, { port: bPort, keys }],
      '/api/v1/chat/completions',
      body,
    );
    const label = stream ? 'streaming' : 'non-streaming';
    const share = (t: { rps: number }) => `${t.rps.toFixed(0)} (${((t.rps / proxy.rps) * 100).toFixed(0)}%)`;
    rows.push([label, 'bare proxy', proxy.rps.toFixed(0), proxy.cpuUs.toFixed(0), '']);
    rows.push([label, `A ${process.env.BENCH_BASE ?? 'this checkout'}`, share(a), a.cpuUs.toFixed(0), '']);
    rows.push([
      label,
      `B ${process.env.BENCH_HEAD ?? 'this checkout'}`,
      share(b),
      b.cpuUs.toFixed(0),
      `${(b.cpuUs / a.cpuUs).toFixed(3)}`,
    ]);
  }
  console.log(`\n${CONCURRENCY} concurrent, ${SECONDS} one-second windows each, in turn\n`);
  printTable(['mode', 'gateway', 'req/s', 'CPU µs/req', 'B/A CPU'], rows);
}).catch((err) => {
  console.error(err);
  stopProcesses('SIGTERM');
  process.exit(1);
});
