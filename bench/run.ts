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
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import pg from 'pg';
import { applyMigrations } from '../prisma/migrate.js';
import { connectDatabase, closeDatabase } from '../activities/db.js';
import { createAccount } from '../activities/accounts/accounts.js';
import { createKey } from '../activities/accounts/keys.js';
import { credit } from '../activities/ledger/ledger.js';
import { parseAmount } from '../activities/ledger/money.js';

const ADMIN = process.env.TEST_DATABASE_ADMIN_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 2000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 64);
const children: ChildProcess[] = [];
const pidOfPort = new Map<string, number>();

/**
 * CPU time (user + system, ms) a child process has used: the cost per request that neighbours on
 * a shared machine disturb far less than they disturb wall-clock throughput.
 */
function cpuMs(port: string): number {
  return processCpuMs(pidOfPort.get(port)!);
}

/** A process's CPU time and its children's (an API supervisor's processes). */
function processCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const own = ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime + stime, in 1/100 s ticks
  const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  return children.reduce((sum, child) => sum + processCpuMs(child), own);
}

/** The Node flags `npm run api` runs the gateway with (package.json), so the bench runs it the same way. */
const apiNodeFlags = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).scripts.api as string)
  .split(/\s+/).filter((t) => t.startsWith('--'));

function startProcess(script: string, args: string[], env: NodeJS.ProcessEnv, ready: RegExp, profile = false): Promise<string> {
  // BENCH_PROFILE=1 (bench/profile-gateway.sh) writes a CPU profile of the gateway to .data/prof
  const prof = profile ? ['--cpu-prof', '--cpu-prof-dir=.data/prof'] : [];
  const nodeFlags = script.endsWith('bin/api.ts') ? apiNodeFlags : [];
  const child = spawn(process.execPath, [...nodeFlags, ...prof, '--import', 'tsx/esm', fileURLToPath(new URL(script, import.meta.url)), ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
      const m = ready.exec(out);
      if (m) {
        pidOfPort.set(m[1], child.pid!);
        resolve(m[1]);
      }
    });
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code}: ${out}`)));
  });
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function once(pool: Pool, path: string, body: string, key?: string): Promise<void> {
  const res = await pool.request({ method: 'POST', path, body, headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) } });
  const text = await res.body.text();
  if (res.statusCode !== 200) throw new Error(`${path} answered ${res.statusCode}: ${text.slice(0, 300)}`);
}

/**
 * Latency at concurrency 1 of several targets, request by request in turn (direct, proxy,
 * gateway, ...), so drift and noise on the machine hit all of them alike and the differences
 * ("added" latency) compare like with like.
 */
async function latencies(targets: Array<{ origin: string; path: string; key?: string }>, body: string) {
  const pools = targets.map((t) => new Pool(t.origin, { connections: 1 }));
  const round = async (times?: number[][]) => {
    for (const [k, t] of targets.entries()) {
      const t0 = process.hrtime.bigint();
      await once(pools[k], t.path, body, t.key);
      times?.[k].push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
  };
  for (let i = 0; i < 200; i++) await round(); // warm-up
  const times: number[][] = targets.map(() => []);
  for (let i = 0; i < SAMPLES; i++) await round(times);
  await Promise.all(pools.map((p) => p.close()));
  return times.map((t) => {
    t.sort((x, y) => x - y);
    return { p50: percentile(t, 50), p99: percentile(t, 99) };
  });
}

/**
 * Requests per second at CONCURRENCY, and CPU µs per request, of several targets measured in
 * alternating one-second windows (SECONDS windows each), so load from elsewhere on the machine
 * hits all of them alike. A target's CPU is counted only during its own windows.
 */
async function throughputs(targets: Array<{ port: string; keys?: string[] }>, path: string, body: string) {
  const pools = targets.map((t) => new Pool(`http://127.0.0.1:${t.port}`, { connections: CONCURRENCY }));
  const done = targets.map(() => 0);
  const cpu = targets.map(() => 0);
  for (let w = 0; w < SECONDS * targets.length; w++) {
    const k = w % targets.length;
    const keys = targets[k].keys;
    const cpu0 = cpuMs(targets[k].port);
    const until = Date.now() + 1000;
    await Promise.all(Array.from({ length: CONCURRENCY }, async (_, i) => {
      while (Date.now() < until) {
        await once(pools[k], path, body, keys?.[i % keys.length]);
        done[k]++;
      }
    }));
    cpu[k] += cpuMs(targets[k].port) - cpu0;
  }
  await Promise.all(pools.map((p) => p.close()));
  return targets.map((_, k) => ({ rps: done[k] / SECONDS, cpuUs: (cpu[k] * 1000) / done[k] }));
}

async function main() {
  const name = `switchyard_bench_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: ADMIN });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(ADMIN);
  url.pathname = `/${name}`;
  const databaseUrl = url.toString();
  try {
    await applyMigrations(databaseUrl);
    connectDatabase(databaseUrl, 2);
    // One account by default (its balance row is the hot spot); BENCH_ACCOUNTS=64 spreads the
    // load over many accounts, as real traffic is.
    const keys: string[] = [];
    for (let i = 0; i < Number(process.env.BENCH_ACCOUNTS ?? 1); i++) {
      const account = await createAccount(`bench-${i}`);
      await credit({ accountId: account.id, currency: 'USD', amount: parseAmount('100000', 'USD'), reason: 'bench', idempotencyKey: `bench:${account.id}` });
      keys.push((await createKey(account.id)).key);
    }
    const key = keys[0];

    const upPort = await startProcess('./upstream.ts', [], {}, /"port":(\d+)/);
    const upstream = `http://127.0.0.1:${upPort}`;
    const proxyPort = await startProcess('./proxy.ts', [`${upstream}/v1`], {}, /"port":(\d+)/);
    const floorPort = await startProcess('./koa-floor.ts', [`${upstream}/v1`], {}, /"port":(\d+)/);
    const gatewayEnv = { DATABASE_URL: databaseUrl, PORT: '0', OPENAI_API_KEY: 'sk-bench', OPENAI_BASE_URL: `${upstream}/v1`, HOST: '127.0.0.1' };
    const gatewayPort = await startProcess('../bin/api.ts', [], gatewayEnv, /listening on 127\.0\.0\.1:(\d+)/, process.env.BENCH_PROFILE === '1');
    const translatedPort = await startProcess('../bin/api.ts', [], { ...gatewayEnv, SWITCHYARD_PASS_THROUGH: '0' }, /listening on 127\.0\.0\.1:(\d+)/);
    // The same gateway as `npm run api` with SWITCHYARD_API_PROCESSES: one process per core.
    // Not an equal-resources comparison with the one-process proxy; it shows what a box gets.
    const processes = Number(process.env.BENCH_API_PROCESSES ?? availableParallelism());
    const clusterPort = processes > 1
      ? await startProcess('../bin/api.ts', [], { ...gatewayEnv, SWITCHYARD_API_PROCESSES: String(processes) }, /listening on 127\.0\.0\.1:(\d+)/)
      : undefined;

    const rows: string[][] = [];
    // BENCH_ONLY=non-streaming|streaming runs one mode (handy with bench/profile-gateway.sh)
    for (const stream of [false, true].filter((s) => !process.env.BENCH_ONLY || process.env.BENCH_ONLY === (s ? 'streaming' : 'non-streaming'))) {
      const body = JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'Say something about gateways.' }], stream, max_tokens: 64 });
      const label = stream ? 'streaming' : 'non-streaming';
      const [direct, proxy, floor, gateway, translated] = await latencies([
        { origin: upstream, path: '/v1/chat/completions' },
        { origin: `http://127.0.0.1:${proxyPort}`, path: '/api/v1/chat/completions' },
        { origin: `http://127.0.0.1:${floorPort}`, path: '/api/v1/chat/completions' },
        { origin: `http://127.0.0.1:${gatewayPort}`, path: '/api/v1/chat/completions', key },
        { origin: `http://127.0.0.1:${translatedPort}`, path: '/api/v1/chat/completions', key },
      ], body);
      if (clusterPort) {
        // its second process may still be starting: warm both before measuring
        const warm = new Pool(`http://127.0.0.1:${clusterPort}`, { connections: CONCURRENCY });
        await Promise.all(Array.from({ length: 500 }, () => once(warm, '/api/v1/chat/completions', body, key)));
        await warm.close();
      }
      const [proxyT, floorT, gatewayT, translatedT, clusterT] = await throughputs([
        { port: proxyPort },
        { port: floorPort },
        { port: gatewayPort, keys },
        { port: translatedPort, keys },
        ...(clusterPort ? [{ port: clusterPort, keys }] : []),
      ], '/api/v1/chat/completions', body);
      const us = (n: number) => n.toFixed(0);
      const share = (t: { rps: number }) => `${t.rps.toFixed(0)} (${((t.rps / proxyT.rps) * 100).toFixed(0)}%)`;
      const f = (n: number) => n.toFixed(2);
      rows.push([label, 'upstream direct', f(direct.p50), f(direct.p99), '', '', '', '']);
      rows.push([label, 'bare proxy', f(proxy.p50), f(proxy.p99), f(proxy.p50 - direct.p50), f(proxy.p99 - direct.p99), proxyT.rps.toFixed(0), us(proxyT.cpuUs)]);
      rows.push([label, 'Koa floor', f(floor.p50), f(floor.p99), f(floor.p50 - direct.p50), f(floor.p99 - direct.p99), share(floorT), us(floorT.cpuUs)]);
      rows.push([label, 'gateway (pass-through)', f(gateway.p50), f(gateway.p99), f(gateway.p50 - direct.p50), f(gateway.p99 - direct.p99), share(gatewayT), us(gatewayT.cpuUs)]);
      rows.push([label, 'gateway (translated)', f(translated.p50), f(translated.p99), f(translated.p50 - direct.p50), f(translated.p99 - direct.p99), share(translatedT), us(translatedT.cpuUs)]);
      if (clusterT) rows.push([label, `gateway, ${processes} processes`, '', '', '', '', share(clusterT), us(clusterT.cpuUs)]);
      rows.push([label, 'gateway vs proxy', '', '', f(gateway.p50 - proxy.p50), f(gateway.p99 - proxy.p99), `${((gatewayT.rps / proxyT.rps) * 100).toFixed(0)}%`, `${(gatewayT.cpuUs / proxyT.cpuUs).toFixed(1)}x`]);
    }
    const header = ['mode', 'path', 'p50 ms', 'p99 ms', 'added p50', 'added p99', `req/s @${CONCURRENCY}`, 'CPU µs/req'];
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
    const line = (r: string[]) => r.map((c, i) => c.padEnd(widths[i])).join('  ');
    console.log(`\nconcurrency 1: ${SAMPLES} requests each; throughput: ${CONCURRENCY} concurrent for ${SECONDS}s, over ${keys.length} account(s)\n`);
    console.log(line(header));
    for (const r of rows) console.log(line(r));
  } finally {
    for (const c of children) c.kill('SIGINT');
    await closeDatabase();
    await new Promise((r) => setTimeout(r, 300));
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}

main().catch((err) => {
  console.error(err);
  for (const c of children) c.kill('SIGTERM');
  process.exit(1);
});
