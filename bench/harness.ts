// What the benchmark scripts share: child processes (started as in production, their CPU time
// read from /proc), the bench database with funded accounts, and the two measurements (latency at
// concurrency 1 and throughput under load), each taking its targets in turn so noise on a shared
// machine hits all of them alike.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import pg from 'pg';
import { applyMigrations } from '../prisma/applyMigrations.js';
import { connectDatabase, closeDatabase } from '../activities/db.js';
import { createAccount } from '../activities/accounts/accounts.js';
import { createKey } from '../activities/accounts/keys.js';
import { createUser } from '../activities/accounts/users.js';
import { credit } from '../activities/ledger/ledger.js';
import { parseAmount } from '../activities/core/money.js';

const ADMIN = process.env.TEST_DATABASE_ADMIN_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
export const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 2000);
export const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
export const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 64);
const children: ChildProcess[] = [];
const pidOfPort = new Map<string, number>();

/**
 * CPU time (user + system, ms) a child process has used: the cost per request that neighbours on
 * a shared machine disturb far less than they disturb wall-clock throughput.
 */
/** The process that listens on `port` (started by startProcess). */
export function pidOf(port: string): number {
  return pidOfPort.get(port)!;
}

export function cpuMs(port: string): number {
  return processCpuMs(pidOfPort.get(port)!);
}

/** The child processes of a process. */
function childrenOf(pid: number): number[] {
  return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
}

/** A process's own CPU time (utime + stime, in 1/100 s ticks), ms. */
export function ownCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

/** A process's CPU time and its children's (an API supervisor's processes). */
export function processCpuMs(pid: number): number {
  return childrenOf(pid).reduce((sum, child) => sum + processCpuMs(child), ownCpuMs(pid));
}

/** Resident memory of a process and its children, MB (VmRSS in /proc/<pid>/status). */
export function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  const own = m ? Number(m[1]) / 1024 : Number.NaN;
  return Math.round(childrenOf(pid).reduce((sum, child) => sum + rssMb(child), own));
}

/**
 * The Node flags `npm run api` runs the gateway with (package.json), so the bench runs it the same
 * way; BENCH_API_NODE_FLAGS (space-separated) replaces them, to measure a flag's effect.
 */
const apiNodeFlags =
  process.env.BENCH_API_NODE_FLAGS !== undefined
    ? process.env.BENCH_API_NODE_FLAGS.split(/\s+/).filter(Boolean)
    : (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).scripts.api as string)
        .split(/\s+/)
        .filter((t) => t.startsWith('--'));

/**
 * How a checkout's `npm run api` runs its gateway: compiled (`npm run build`, then plain Node on
 * dist/bin/api.js) where the checkout has the build, else its sources through tsx.
 */
function gatewayCommand(apiTs: string): string[] {
  const root = path.resolve(path.dirname(apiTs), '..');
  const builder = path.join(root, 'bin', 'build.mjs');
  // BENCH_RUN_TS=1 runs every gateway through tsx, to compare with a checkout from before the build step
  if (!existsSync(builder) || process.env.BENCH_RUN_TS === '1') return ['--import', 'tsx/esm', apiTs];
  execFileSync(process.execPath, [builder], { cwd: root, stdio: 'inherit' });
  return [path.join(root, 'dist', 'bin', 'api.js')];
}

/**
 * Start a script (relative to bench/, or an absolute path) and resolve with the port it prints
 * (the first group of `ready`). The gateway's entry (`bin/api.ts`, of this checkout or another)
 * runs as `npm run api` runs it: compiled, with its Node flags.
 */
export function startProcess(
  script: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  ready: RegExp,
  profile = false,
): Promise<string> {
  // BENCH_PROFILE=1 (bench/profile-gateway.sh) writes a CPU profile of the gateway to .data/prof
  const prof = profile ? ['--cpu-prof', '--cpu-prof-dir=.data/prof'] : [];
  const file = script.startsWith('/') ? script : fileURLToPath(new URL(script, import.meta.url));
  const gateway = script.endsWith('bin/api.ts');
  const command = gateway ? gatewayCommand(file) : ['--import', 'tsx/esm', file];
  const child = spawn(process.execPath, [...(gateway ? apiNodeFlags : []), ...prof, ...command, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
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

/** A free loopback port, for a server that must be told its port. */
export function freePort(): Promise<string> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(String(port)));
    });
  });
}

/**
 * Start a program that is not one of ours (another gateway) on a port chosen for it, its output
 * going to `log`, and resolve once the port accepts connections; reject if it exits first or is
 * not listening within `timeoutMs`. Its CPU time and RSS are read as for startProcess's.
 */
export async function startExternal(
  command: string,
  args: string[],
  opts: { port: string; env: NodeJS.ProcessEnv; cwd: string; log: string; timeoutMs: number },
): Promise<void> {
  const out = openSync(opts.log, 'w');
  const child = spawn(command, args, { env: opts.env, cwd: opts.cwd, stdio: ['ignore', out, out] });
  closeSync(out);
  children.push(child);
  let exited: string | undefined;
  child.once('exit', (code, signal) => (exited = `exited with ${code ?? signal}`));
  child.once('error', (err) => (exited = err.message));
  const listening = () => {
    const socket = net.connect(Number(opts.port), '127.0.0.1');
    socket.setTimeout(1000);
    return new Promise<boolean>((resolve) => {
      socket.once('connect', () => resolve(true));
      socket.once('error', () => resolve(false));
      socket.once('timeout', () => resolve(false));
    }).finally(() => socket.destroy());
  };
  const until = Date.now() + opts.timeoutMs;
  while (!exited && Date.now() < until) {
    if ((await listening()) && child.pid) {
      pidOfPort.set(opts.port, child.pid);
      return;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  child.kill('SIGTERM');
  throw new Error(`${command} ${exited ?? `was not listening on ${opts.port} after ${opts.timeoutMs / 1000} s`}`);
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

export async function once(
  pool: Pool,
  path: string,
  body: string,
  key?: string,
  headers?: Record<string, string>,
): Promise<void> {
  const res = await pool.request({
    method: 'POST',
    path,
    body,
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers },
  });
  const text = await res.body.text();
  if (res.statusCode !== 200) throw new Error(`${path} answered ${res.statusCode}: ${text.slice(0, 300)}`);
}

/**
 * Latency at concurrency 1 of several targets, request by request in turn (direct, proxy,
 * gateway, ...), so drift and noise on the machine hit all of them alike and the differences
 * ("added" latency) compare like with like.
 */
export async function latencies(targets: Array<{ origin: string; path: string; key?: string }>, body: string) {
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
 * alternating windows of about a second (`seconds` windows each, SECONDS by default), so load from
 * elsewhere on the machine hits all of them alike. A target's CPU is counted only during its own
 * windows. A target may have its own path and headers (another gateway's).
 */
export async function throughputs(
  targets: Array<{ port: string; keys?: string[]; path?: string; headers?: Record<string, string> }>,
  path: string,
  body: string,
  seconds = SECONDS,
) {
  const pools = targets.map((t) => new Pool(`http://127.0.0.1:${t.port}`, { connections: CONCURRENCY }));
  const done = targets.map(() => 0);
  const cpu = targets.map(() => 0);
  // a window lasts until its last request is answered: longer than a second for a slow target
  const elapsed = targets.map(() => 0);
  for (let w = 0; w < seconds * targets.length; w++) {
    const k = w % targets.length;
    const { keys, headers } = targets[k];
    const cpu0 = cpuMs(targets[k].port);
    const started = performance.now();
    const until = Date.now() + 1000;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async (_, i) => {
        while (Date.now() < until) {
          await once(pools[k], targets[k].path ?? path, body, keys?.[i % keys.length], headers);
          done[k]++;
        }
      }),
    );
    cpu[k] += cpuMs(targets[k].port) - cpu0;
    elapsed[k] += performance.now() - started;
  }
  await Promise.all(pools.map((p) => p.close()));
  return targets.map((_, k) => ({ rps: (done[k] * 1000) / elapsed[k], cpuUs: (cpu[k] * 1000) / done[k] }));
}

/** Stop every process started here. */
export function stopProcesses(signal: NodeJS.Signals = 'SIGINT'): void {
  for (const c of children) c.kill(signal);
}

/**
 * A fresh database on the machine's PostgreSQL, migrated, with BENCH_ACCOUNTS (default 1) funded
 * accounts and a key each, for the duration of `run`; dropped afterwards. One account by default
 * (its balance row is the hot spot); BENCH_ACCOUNTS=64 spreads the load as real traffic is.
 */
export async function withBenchDatabase(run: (db: { url: string; keys: string[] }) => Promise<void>): Promise<void> {
  const name = `switchyard_bench_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: ADMIN });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(ADMIN);
  url.pathname = `/${name}`;
  try {
    await applyMigrations(url.toString());
    connectDatabase(url.toString(), 2);
    const keys: string[] = [];
    // BENCH_CALLERS=users: each account belongs to a person (signed up, no team), as the keys of
    // people are; their requests also ask whom the person bills to (teamBudget.ts)
    const users = process.env.BENCH_CALLERS === 'users';
    for (let i = 0; i < Number(process.env.BENCH_ACCOUNTS ?? 1); i++) {
      const account = users
        ? { id: (await createUser({ email: `bench-${i}@bench.test`, name: `Bench ${i}` })).accountId }
        : await createAccount(`bench-${i}`);
      await credit({
        accountId: account.id,
        currency: 'USD',
        amount: parseAmount('100000', 'USD'),
        reason: 'bench',
        idempotencyKey: `bench:${account.id}`,
      });
      keys.push((await createKey(account.id)).key);
    }
    await run({ url: url.toString(), keys });
  } finally {
    stopProcesses();
    await closeDatabase();
    await new Promise((r) => setTimeout(r, 300));
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}

/** A chat request body for the bench's model. */
export const chatBody = (stream: boolean) =>
  JSON.stringify({
    model: 'openai/gpt-4o-mini',
    messages: [{ role: 'user', content: 'Say something about gateways.' }],
    stream,
    max_tokens: 64,
  });

/** The modes to run: BENCH_ONLY=non-streaming|streaming picks one. */
export const modes = () =>
  [false, true].filter(
    (s) => !process.env.BENCH_ONLY || process.env.BENCH_ONLY === (s ? 'streaming' : 'non-streaming'),
  );

/** Columns padded to their widest cell. */
export function printTable(header: string[], rows: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (r: string[]) => r.map((c, i) => c.padEnd(widths[i])).join('  ');
  console.log(line(header));
  for (const r of rows) console.log(line(r));
}
