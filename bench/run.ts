// `npm run bench`: the gateway's added latency and its throughput, side by side with a bare
// pass-through proxy in front of the same loopback upstream, for non-streaming and streaming chat.
// Targets:
// - the bare proxy (bench/proxy.ts): the baseline;
// - the Koa floor (bench/koa-floor.ts): the gateway's framework with a route that only forwards,
//   which splits the distance between proxy and gateway into framework and gateway work;
// - the gateway as configured (chat to an OpenAI-compatible upstream is passed through) and with
//   SWITCHYARD_PASS_THROUGH=0 (the same request translated both ways);
// - the gateway as `npm run api` with one process per core (SWITCHYARD_API_PROCESSES;
//   BENCH_API_PROCESSES overrides the count), for throughput only.
// The gateways run as in production (`bin/api.ts`, their own processes, the Node flags of
// `npm run api`) with authentication, the ledger and request records on, against the machine's
// PostgreSQL. Every measurement takes the targets in turn (request by request at concurrency 1,
// one-second windows under load), so noise on a shared machine hits all of them alike. Prints a
// table; the README records a run.
import { availableParallelism } from 'node:os';
import { Pool } from 'undici';
import {
  CONCURRENCY,
  SAMPLES,
  SECONDS,
  chatBody,
  latencies,
  modes,
  once,
  printTable,
  startProcess,
  stopProcesses,
  throughputs,
  withBenchDatabase,
} from './harness.js';

await withBenchDatabase(async ({ url: databaseUrl, keys }) => {
  const key = keys[0];
  const upPort = await startProcess('./upstream.ts', [], {}, /"port":(\d+)/);
  const upstream = `http://127.0.0.1:${upPort}`;
  const proxyPort = await startProcess('./proxy.ts', [`${upstream}/v1`], {}, /"port":(\d+)/);
  const floorPort = await startProcess('./koa-floor.ts', [`${upstream}/v1`], {}, /"port":(\d+)/);
  const gatewayEnv = {
    DATABASE_URL: databaseUrl,
    PORT: '0',
    OPENAI_API_KEY: 'sk-bench',
    OPENAI_BASE_URL: `${upstream}/v1`,
    HOST: '127.0.0.1',
  };
  // BENCH_PROFILE=1 (bench/profile-gateway.sh) writes a CPU profile of the gateway to .data/prof
  const gatewayPort = await startProcess(
    '../bin/api.ts',
    [],
    gatewayEnv,
    /listening on 127\.0\.0\.1:(\d+)/,
    process.env.BENCH_PROFILE === '1',
  );
  const translatedPort = await startProcess(
    '../bin/api.ts',
    [],
    { ...gatewayEnv, SWITCHYARD_PASS_THROUGH: '0' },
    /listening on 127\.0\.0\.1:(\d+)/,
  );
  // The same gateway as `npm run api` with SWITCHYARD_API_PROCESSES: one process per core.
  // Not an equal-resources comparison with the one-process proxy; it shows what a box gets.
  const processes = Number(process.env.BENCH_API_PROCESSES ?? availableParallelism());
  const clusterPort =
    processes > 1
      ? await startProcess(
          '../bin/api.ts',
          [],
          { ...gatewayEnv, SWITCHYARD_API_PROCESSES: String(processes) },
          /listening on 127\.0\.0\.1:(\d+)/,
        )
      : undefined;

  const rows: string[][] = [];
  for (const stream of modes()) {
    const body = chatBody(stream);
    const label = stream ? 'streaming' : 'non-streaming';
    const [direct, proxy, floor, gateway, translated] = await latencies(
      [
        { origin: upstream, path: '/v1/chat/completions' },
        { origin: `http://127.0.0.1:${proxyPort}`, path: '/api/v1/chat/completions' },
        { origin: `http://127.0.0.1:${floorPort}`, path: '/api/v1/chat/completions' },
        { origin: `http://127.0.0.1:${gatewayPort}`, path: '/api/v1/chat/completions', key },
        { origin: `http://127.0.0.1:${translatedPort}`, path: '/api/v1/chat/completions', key },
      ],
      body,
    );
    if (clusterPort) {
      // its second process may still be starting: warm both before measuring
      const warm = new Pool(`http://127.0.0.1:${clusterPort}`, { connections: CONCURRENCY });
      await Promise.all(Array.from({ length: 500 }, () => once(warm, '/api/v1/chat/completions', body, key)));
      await warm.close();
    }
    const [proxyT, floorT, gatewayT, translatedT, clusterT] = await throughputs(
      [
        { port: proxyPort },
        { port: floorPort },
        { port: gatewayPort, keys },
        { port: translatedPort, keys },
        ...(clusterPort ? [{ port: clusterPort, keys }] : []),
      ],
      '/api/v1/chat/completions',
      body,
    );
    const us = (n: number) => n.toFixed(0);
    const share = (t: { rps: number }) => `${t.rps.toFixed(0)} (${((t.rps / proxyT.rps) * 100).toFixed(0)}%)`;
    const f = (n: number) => n.toFixed(2);
    rows.push([label, 'upstream direct', f(direct.p50), f(direct.p99), '', '', '', '']);
    rows.push([
      label,
      'bare proxy',
      f(proxy.p50),
      f(proxy.p99),
      f(proxy.p50 - direct.p50),
      f(proxy.p99 - direct.p99),
      proxyT.rps.toFixed(0),
      us(proxyT.cpuUs),
    ]);
    rows.push([
      label,
      'Koa floor',
      f(floor.p50),
      f(floor.p99),
      f(floor.p50 - direct.p50),
      f(floor.p99 - direct.p99),
      share(floorT),
      us(floorT.cpuUs),
    ]);
    rows.push([
      label,
      'gateway (pass-through)',
      f(gateway.p50),
      f(gateway.p99),
      f(gateway.p50 - direct.p50),
      f(gateway.p99 - direct.p99),
      share(gatewayT),
      us(gatewayT.cpuUs),
    ]);
    rows.push([
      label,
      'gateway (translated)',
      f(translated.p50),
      f(translated.p99),
      f(translated.p50 - direct.p50),
      f(translated.p99 - direct.p99),
      share(translatedT),
      us(translatedT.cpuUs),
    ]);
    if (clusterT)
      rows.push([label, `gateway, ${processes} processes`, '', '', '', '', share(clusterT), us(clusterT.cpuUs)]);
    rows.push([
      label,
      'gateway vs proxy',
      '',
      '',
      f(gateway.p50 - proxy.p50),
      f(gateway.p99 - proxy.p99),
      `${((gatewayT.rps / proxyT.rps) * 100).toFixed(0)}%`,
      `${(gatewayT.cpuUs / proxyT.cpuUs).toFixed(1)}x`,
    ]);
  }
  console.log(
    `\nconcurrency 1: ${SAMPLES} requests each; throughput: ${CONCURRENCY} concurrent for ${SECONDS}s, over ${keys.length} account(s)\n`,
  );
  printTable(
    ['mode', 'path', 'p50 ms', 'p99 ms', 'added p50', 'added p99', `req/s @${CONCURRENCY}`, 'CPU µs/req'],
    rows,
  );
}).catch((err) => {
  console.error(err);
  stopProcesses('SIGTERM');
  process.exit(1);
});
