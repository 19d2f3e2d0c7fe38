// `npm run bench:jobs`: how fast a job is accepted. A gateway (as `npm run api` runs it: compiled,
// its Node flags, authentication, billing), a worker (`npm run worker`), a Temporal dev server and
// the loopback fal queue server (bench/fal-upstream.ts, whose jobs never finish). First
// BENCH_JOBS_IN_FLIGHT (300) video jobs are submitted and left running, each workflow polling the
// upstream every SWITCHYARD_VIDEO_POLL_MS (5000, the default); then
// BENCH_JOBS_SAMPLES (300) rounds of, in turn: POST /api/generate-video to its 202 (the workflow
// started), GET /api/v1/models on the same gateway for scale, and a bare workflow start from this
// process's own warm Temporal client (the engine's share of a job's acceptance). Prints
// p50/p95/p99/max, and what each workflow started cost the engine, the worker and the gateway.
//
// The rounds are sequential (one request at a time) and arrive at each rate BENCH_JOBS_RATES
// lists, one phase after the other: rounds a second (`10,max` by default), `max` = back to
// back. A job costs the engine and the worker far more after its 202 than before it (its first
// workflow tasks and activities), so back to back on a small machine measures the engine's
// capacity, where every start queues behind the previous jobs' work, more than its latency.
//
// BENCH_TEMPORAL_DB picks the dev server's persistence, a comma-separated list measured one after
// the other in one run: `file` (default: a SQLite file, as `npm start` runs it), `file-cli-defaults`
// (the same file with the CLI's own SQLite settings, as before they were tuned), `memory`.
// BENCH_BASE=<checkout> adds that checkout's gateway (e.g. the code before a change), measured in
// turn with this one against the same server, worker and jobs.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Pool } from 'undici';
import { Client, Connection } from '@temporalio/client';
import { findTemporalCli, startDevServer } from '../temporal-dev/index.js';
import { config } from '../activities/config.js';
import { SEARCH_ATTRIBUTES } from '../bin/worker.js';
import {
  cpuMs,
  pidOf,
  printTable,
  processCpuMs,
  rssMb,
  startProcess,
  stopProcesses,
  withBenchDatabase,
} from './harness.js';

const IN_FLIGHT = Number(process.env.BENCH_JOBS_IN_FLIGHT ?? 300);
const SAMPLES = Number(process.env.BENCH_JOBS_SAMPLES ?? 300);
const POLL_MS = process.env.SWITCHYARD_VIDEO_POLL_MS ?? '5000';
const RATES = (process.env.BENCH_JOBS_RATES ?? '10,max').split(',').map((s) => {
  const rate = s.trim();
  if (rate === 'max') return rate;
  if (!(Number(rate) > 0))
    throw new Error(`BENCH_JOBS_RATES: "${rate}" is neither a number of rounds a second nor "max"`);
  return Number(rate);
});
const PERSISTENCE = (process.env.BENCH_TEMPORAL_DB ?? 'file').split(',').map((s) => s.trim());
const BASE = process.env.BENCH_BASE ? path.resolve(process.env.BENCH_BASE, 'bin/api.ts') : undefined;
const MODEL = 'kling/v2.1-master-text-to-video';
const videoBody = JSON.stringify({ model: MODEL, prompt: 'A lighthouse at dusk, waves rolling in.', duration: 5 });
const LISTENING = /listening on 127\.0\.0\.1:(\d+)/;

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** One request's time to its answer, ms; fails unless the status is `expected`. */
async function timed(pool: Pool, method: 'GET' | 'POST', path: string, key: string, expected: number) {
  const t0 = process.hrtime.bigint();
  const res = await pool.request({
    method,
    path,
    body: method === 'POST' ? videoBody : undefined,
    headers: { authorization: `Bearer ${key}`, ...(method === 'POST' ? { 'content-type': 'application/json' } : {}) },
  });
  const text = await res.body.text();
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (res.statusCode !== expected)
    throw new Error(`${method} ${path} answered ${res.statusCode}: ${text.slice(0, 300)}`);
  return ms;
}

/** The dev server with one of the persistence settings BENCH_TEMPORAL_DB names. */
async function devServer(persistence: string, dataDir: string) {
  const known = ['file', 'file-cli-defaults', 'memory'];
  if (!known.includes(persistence))
    throw new Error(`BENCH_TEMPORAL_DB: "${persistence}" is not one of ${known.join(', ')}`);
  return startDevServer({
    cli: await findTemporalCli(),
    dataFile: persistence === 'memory' ? undefined : path.join(dataDir, 'temporal.db'),
    sqlitePragmas: persistence === 'file-cli-defaults' ? {} : undefined,
    namespace: config.temporalNamespace,
    searchAttributes: SEARCH_ATTRIBUTES,
    uiPort: null,
    log: (m) => /level=(ERROR|FATAL)/.test(m) && console.error(m),
  });
}

/** One measurement against a fresh dev server, database, worker, upstream and gateway(s). */
async function measure(persistence: string): Promise<string[][]> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'switchyard-bench-jobs-'));
  const temporal = await devServer(persistence, dataDir);
  const rows: string[][] = [];
  const notes: string[] = [];
  try {
    await withBenchDatabase(async ({ url, keys }) => {
      const key = keys[0];
      const falPort = await startProcess('./fal-upstream.ts', [], {}, /"port":(\d+)/);
      const env = {
        DATABASE_URL: url,
        TEMPORAL_ADDRESS: temporal.address,
        FAL_API_KEY: 'fal-loopback-key',
        FAL_BASE_URL: `http://127.0.0.1:${falPort}`,
        SWITCHYARD_VIDEO_POLL_MS: POLL_MS,
        // the machine's PostgreSQL allows 100 connections, shared with whatever else runs
        DATABASE_MAX_CONNECTIONS: process.env.DATABASE_MAX_CONNECTIONS ?? '5',
      };
      const worker = await startProcess('../bin/worker.ts', [], env, /serving task queue (\S+)/);
      const gatewayEnv = { ...env, PORT: '0', HOST: '127.0.0.1' };
      const gateways = [
        { name: 'this checkout', port: await startProcess('../bin/api.ts', [], gatewayEnv, LISTENING) },
      ];
      if (BASE)
        gateways.push({ name: process.env.BENCH_BASE!, port: await startProcess(BASE, [], gatewayEnv, LISTENING) });
      const pools = gateways.map((g) => new Pool(`http://127.0.0.1:${g.port}`, { connections: 8 }));

      // each gateway's first job (after a moment: a gateway may warm its Temporal client at
      // start-up), and what it costs the API process in memory
      await new Promise((r) => setTimeout(r, 3000));
      const first = [];
      for (const [i, g] of gateways.entries()) {
        const before = rssMb(pidOf(g.port));
        const ms = await timed(pools[i], 'POST', '/api/generate-video', key, 202);
        first.push(`${g.name}: ${ms.toFixed(0)} ms, RSS ${before} → ${rssMb(pidOf(g.port))} MB`);
      }

      // the jobs in flight: submitted a few at a time, then given a poll interval to reach the upstream
      let submitted = gateways.length;
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          while (submitted < IN_FLIGHT) {
            submitted++;
            await timed(pools[0], 'POST', '/api/generate-video', key, 202);
          }
        }),
      );
      await new Promise((r) => setTimeout(r, Number(POLL_MS) + 2000));

      // what the jobs in flight cost while nothing else happens: CPU, share of one core
      const cpu = () => [processCpuMs(temporal.pid), cpuMs(worker), cpuMs(gateways[0].port)];
      const idle0 = cpu();
      await new Promise((r) => setTimeout(r, 2 * Number(POLL_MS)));
      const idle = cpu().map((ms, i) => `${(((ms - idle0[i]) / (2 * Number(POLL_MS))) * 100).toFixed(0)}%`);

      // a bare workflow start from a warm client: a workflow type on a task queue no worker polls,
      // so it costs the engine only its start
      const connection = await Connection.connect({ address: temporal.address });
      const client = new Client({ connection, namespace: config.temporalNamespace });
      let bare = 0;
      const bareStart = async () => {
        const t0 = process.hrtime.bigint();
        await client.workflow.start('benchIdle', { workflowId: `bench-idle-${bare++}`, taskQueue: 'bench-idle' });
        return Number(process.hrtime.bigint() - t0) / 1e6;
      };

      const round = async (times?: number[][]) => {
        const t = [await timed(pools[0], 'GET', '/api/v1/models', key, 200)];
        for (const pool of pools) t.push(await timed(pool, 'POST', '/api/generate-video', key, 202));
        t.push(await bareStart());
        if (times) for (const [k, ms] of t.entries()) times[k].push(ms);
      };
      for (let i = 0; i < 10; i++) await round(); // warm-up

      // video jobs running when a phase begins (the bench's own, which never finish)
      let running = submitted + 10 * gateways.length;
      for (const rate of RATES) {
        // Rounds start on a fixed schedule (rate per second), not a fixed pause after each: a
        // round that runs late delays the next one only until it is done, as arrivals would.
        const interval = rate === 'max' ? 0 : 1000 / rate;
        const times: number[][] = [[], ...gateways.map(() => []), []];
        const busy0 = cpu();
        const t0 = performance.now();
        for (let i = 0; i < SAMPLES; i++) {
          const wait = t0 + i * interval - performance.now();
          if (wait > 0) await new Promise((r) => setTimeout(r, wait));
          await round(times);
        }
        const seconds = (performance.now() - t0) / 1000;
        // what each job accepted cost the engine, the worker and the gateway (bare starts count as jobs)
        const jobs = SAMPLES * (gateways.length + 1);
        const perJob = cpu().map((ms, i) => ((ms - busy0[i]) / jobs).toFixed(1));
        const label = rate === 'max' ? 'back to back' : `${rate}/s`;
        notes.push(
          `  ${label}: ${(SAMPLES / seconds).toFixed(1)} rounds/s from ${running} video jobs in flight; CPU ms per workflow started: Temporal server ` +
            `${perJob[0]}, worker ${perJob[1]}, gateway ${perJob[2]}`,
        );
        const row = (name: string, t: number[]) => {
          t.sort((a, b) => a - b);
          const cells = [50, 95, 99].map((p) => percentile(t, p).toFixed(2));
          return [persistence, label, name, ...cells, t[t.length - 1].toFixed(2)];
        };
        rows.push(row('GET /api/v1/models', times[0]));
        for (const [i, g] of gateways.entries())
          rows.push(row(`POST /api/generate-video → 202${BASE ? ` (${g.name})` : ''}`, times[1 + i]));
        rows.push(row('bare workflow start (warm client)', times[1 + gateways.length]));
        running += SAMPLES * gateways.length;
      }

      const runningAtEnd = await client.workflow
        .count(`WorkflowType = 'videoJob' AND ExecutionStatus = 'Running'`)
        .then((c) => String(c.count))
        .catch(() => '?');
      await connection.close();
      await Promise.all(pools.map((p) => p.close()));

      console.log(
        `[${persistence}] ${runningAtEnd} video jobs running at the end; first job after start-up: ${first.join('; ')}\n` +
          `  CPU with ${IN_FLIGHT} jobs in flight and none arriving (share of one core): Temporal server ` +
          `${idle[0]}, worker ${idle[1]}, gateway ${idle[2]}\n${notes.join('\n')}`,
      );
    });
  } finally {
    await temporal.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
  return rows;
}

try {
  const rows: string[][] = [];
  for (const persistence of PERSISTENCE) rows.push(...(await measure(persistence)));
  console.log(
    `\njob acceptance: ${IN_FLIGHT} video jobs in flight before the measurement, each polling the fal loopback ` +
      `every ${POLL_MS} ms; ${SAMPLES} rounds at each arrival rate, each round one of each in turn\n`,
  );
  printTable(['Temporal dev server', 'arrivals', '', 'p50 ms', 'p95 ms', 'p99 ms', 'max ms'], rows);
} catch (err) {
  console.error(err);
  stopProcesses('SIGTERM');
  process.exit(1);
}
