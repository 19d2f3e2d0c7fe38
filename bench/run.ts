// `npm run bench`: the gateway's added latency and its throughput, side by side with a bare
// pass-through proxy in front of the same loopback upstream, for non-streaming and streaming chat.
// The gateway runs twice: as configured (chat to an OpenAI-compatible upstream is passed through)
// and with SWITCHYARD_PASS_THROUGH=0 (the same request translated both ways), to show what the
// pass-through saves.
// bench/koa-floor.ts (the gateway's framework with a route that only forwards) is measured for
// throughput too: it splits the distance between proxy and gateway into framework and gateway work.
// A third gateway runs as `npm run api` with one process per core (SWITCHYARD_API_PROCESSES;
// BENCH_API_PROCESSES overrides the count), measured for throughput only.
// The gateway runs as in production (`bin/api.ts`, its own process) with authentication, the
// ledger (reserve + settle per request) and request records on, against the machine's
// PostgreSQL. Prints a table; the README records a run.
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

async function latency(origin: string, path: string, body: string, key?: string) {
  const pool = new Pool(origin, { connections: 1 });
  for (let i = 0; i < 200; i++) await once(pool, path, body, key); // warm-up
  const times: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const t0 = process.hrtime.bigint();
    await once(pool, path, body, key);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  await pool.close();
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 50), p99: percentile(times, 99) };
}

/** Two gateways' latency, request by request in turn, so drift and noise on the machine hit both alike. */
async function latencyPair(a: string, b: string, path: string, body: string, key: string) {
  const pools = [new Pool(a, { connections: 1 }), new Pool(b, { connections: 1 })];
  for (let i = 0; i < 200; i++) for (const pool of pools) await once(pool, path, body, key); // warm-up
  const times: number[][] = [[], []];
  for (let i = 0; i < SAMPLES; i++) {
    for (const [k, pool] of pools.entries()) {
      const t0 = process.hrtime.bigint();
      await once(pool, path, body, key);
      times[k].push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
  }
  await Promise.all(pools.map((p) => p.close()));
  return times.map((t) => {
    t.sort((x, y) => x - y);
    return { p50: percentile(t, 50), p99: percentile(t, 99) };
  });
}

async function throughput(origin: string, path: string, body: string, keys?: string[]) {
  const pool = new Pool(origin, { connections: CONCURRENCY });
  const until = Date.now() + SECONDS * 1000;
  let done = 0;
  await Promise.all(Array.from({ length: CONCURRENCY }, async (_, i) => {
    const key = keys?.[i % keys.length];
    while (Date.now() < until) {
      await once(pool, path, body, key);
      done++;
    }
  }));
  await pool.close();
  return done / SECONDS;
}

/** Two gateways' throughput in alternating one-second windows, so load from elsewhere on the machine hits both alike. */
async function throughputPair(a: string, b: string, path: string, body: string, keys: string[]) {
  const pools = [new Pool(a, { connections: CONCURRENCY }), new Pool(b, { connections: CONCURRENCY })];
  const done = [0, 0];
  for (let w = 0; w < SECONDS * 2; w++) {
    const k = w % 2;
    const until = Date.now() + 1000;
    await Promise.all(Array.from({ length: CONCURRENCY }, async (_, i) => {
      while (Date.now() < until) {
        await once(pools[k], path, body, keys[i % keys.length]);
        done[k]++;
      }
    }));
  }
  await Promise.all(pools.map((p) => p.close()));
  return done.map((n) => n / SECONDS);
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
      const direct = await latency(upstream, '/v1/chat/completions', body);
      const proxy = await latency(`http://127.0.0.1:${proxyPort}`, '/api/v1/chat/completions', body);
      const [gateway, translated] = await latencyPair(`http://127.0.0.1:${gatewayPort}`, `http://127.0.0.1:${translatedPort}`, '/api/v1/chat/completions', body, key);
      let cpu0 = cpuMs(proxyPort);
      const proxyRps = await throughput(`http://127.0.0.1:${proxyPort}`, '/api/v1/chat/completions', body);
      const proxyCpu = (cpuMs(proxyPort) - cpu0) / (proxyRps * SECONDS);
      cpu0 = cpuMs(floorPort);
      const floorRps = await throughput(`http://127.0.0.1:${floorPort}`, '/api/v1/chat/completions', body);
      const floorCpu = (cpuMs(floorPort) - cpu0) / (floorRps * SECONDS);
      cpu0 = cpuMs(gatewayPort);
      const cpu1 = cpuMs(translatedPort);
      const [gatewayRps, translatedRps] = await throughputPair(`http://127.0.0.1:${gatewayPort}`, `http://127.0.0.1:${translatedPort}`, '/api/v1/chat/completions', body, keys);
      const gatewayCpu = (cpuMs(gatewayPort) - cpu0) / (gatewayRps * SECONDS);
      const translatedCpu = (cpuMs(translatedPort) - cpu1) / (translatedRps * SECONDS);
      const us = (ms: number) => (ms * 1000).toFixed(0);
      const f = (n: number) => n.toFixed(2);
      rows.push([label, 'upstream direct', f(direct.p50), f(direct.p99), '', '', '', '']);
      rows.push([label, 'bare proxy', f(proxy.p50), f(proxy.p99), f(proxy.p50 - direct.p50), f(proxy.p99 - direct.p99), proxyRps.toFixed(0), us(proxyCpu)]);
      rows.push([label, 'Koa floor', '', '', '', '', `${floorRps.toFixed(0)} (${((floorRps / proxyRps) * 100).toFixed(0)}%)`, us(floorCpu)]);
      rows.push([label, 'gateway (pass-through)', f(gateway.p50), f(gateway.p99), f(gateway.p50 - direct.p50), f(gateway.p99 - direct.p99), gatewayRps.toFixed(0), us(gatewayCpu)]);
      rows.push([label, 'gateway (translated)', f(translated.p50), f(translated.p99), f(translated.p50 - direct.p50), f(translated.p99 - direct.p99), translatedRps.toFixed(0), us(translatedCpu)]);
      if (clusterPort) {
        const warm = new Pool(`http://127.0.0.1:${clusterPort}`, { connections: CONCURRENCY });
        await Promise.all(Array.from({ length: 500 }, () => once(warm, '/api/v1/chat/completions', body, key)));
        await warm.close();
        cpu0 = cpuMs(clusterPort);
        const clusterRps = await throughput(`http://127.0.0.1:${clusterPort}`, '/api/v1/chat/completions', body, keys);
        const clusterCpu = (cpuMs(clusterPort) - cpu0) / (clusterRps * SECONDS);
        rows.push([label, `gateway, ${processes} processes`, '', '', '', '', `${clusterRps.toFixed(0)} (${((clusterRps / proxyRps) * 100).toFixed(0)}%)`, us(clusterCpu)]);
      }
      rows.push([label, 'gateway vs proxy', '', '', f(gateway.p50 - proxy.p50), f(gateway.p99 - proxy.p99), `${((gatewayRps / proxyRps) * 100).toFixed(0)}%`, `${(gatewayCpu / proxyCpu).toFixed(1)}x`]);
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
