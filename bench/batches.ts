// `npm run bench:batches`: how fast a batch runs, next to the same requests sent one by one. A
// gateway (as `npm run api` runs it), a worker (`npm run worker`), a Temporal dev server with a
// data file (as `npm start` runs it) and the loopback OpenAI upstream (bench/upstream.ts, which
// answers at once). The same BENCH_BATCH_ROWS (10,000) chat requests are sent first to the
// synchronous route, BENCH_BATCH_SYNC_CONCURRENCY (16) at a time, then as one inline batch
// (POST /api/beta/batches, the batch's own concurrency SWITCHYARD_BATCH_CONCURRENCY, default 32),
// timed from the POST to the batch's `completed`. Prints rows per second of both and their ratio,
// then the books check: every row charged exactly once, at the cost its result line shows, the
// batch's cost their sum, no reservation left, and every balance equal to the sum of its entries.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Pool } from 'undici';
import { db } from '../activities/db.js';
import { config } from '../activities/config.js';
import { findTemporalCli, startDevServer } from '../temporal-dev/index.js';
import { SEARCH_ATTRIBUTES } from '../bin/worker.js';
import {
  cpuMs,
  ownCpuMs,
  printTable,
  processCpuMs,
  startProcess,
  stopProcesses,
  withBenchDatabase,
} from './harness.js';

const ROWS = Number(process.env.BENCH_BATCH_ROWS ?? 10_000);
const SYNC_CONCURRENCY = Number(process.env.BENCH_BATCH_SYNC_CONCURRENCY ?? 16);
const LISTENING = /listening on 127\.0\.0\.1:(\d+)/;

const rowBody = (i: number) => ({
  model: 'openai/gpt-4o-mini',
  messages: [{ role: 'user', content: `Row ${i}: say something about gateways.` }],
  max_tokens: 16,
});

async function send(pool: Pool, method: 'GET' | 'POST', path: string, key: string, body?: unknown) {
  const res = await pool.request({
    method,
    path,
    body: body === undefined ? undefined : JSON.stringify(body),
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
  });
  const text = await res.body.text();
  if (res.statusCode >= 300) throw new Error(`${method} ${path} answered ${res.statusCode}: ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

/** The books after the batch, checked in the database; returns lines to print (throws if they do not balance). */
async function books(batchId: string): Promise<string[]> {
  const { pool } = db();
  const charges = await pool.query(
    `SELECT count(*)::int AS n, count(DISTINCT e.request_id)::int AS distinct_rows,
            COALESCE(-SUM(e.amount), 0)::text AS total,
            count(*) FILTER (WHERE -e.amount <> r.cost)::int AS off
     FROM ledger_entries e JOIN batch_rows r ON r.batch_id = $1 AND e.request_id = r.batch_id || ':' || r.idx
     WHERE e.kind = 'charge'`,
    [batchId],
  );
  const batch = await pool.query(`SELECT total, completed, failed, cost::text FROM batches WHERE id = $1`, [batchId]);
  const balance = await pool.query(
    `SELECT b.account_id, b.amount::text, b.held::text,
            (SELECT COALESCE(SUM(e.amount), 0) FROM ledger_entries e WHERE e.account_id = b.account_id AND e.currency = b.currency)::text AS entries
     FROM balances b`,
  );
  const c = charges.rows[0];
  const b = batch.rows[0];
  const lines = [
    `rows ${b.total}, completed ${b.completed}, failed ${b.failed}`,
    `charges for the batch's rows: ${c.n} (${c.distinct_rows} distinct rows), ${c.off} differing from their row's cost`,
    `sum of the charges ${c.total} nano-USD; the batch's cost ${b.cost} nano-USD`,
    ...balance.rows.map(
      (r) => `balance ${r.account_id}: amount ${r.amount} = entries ${r.entries}; held ${r.held} (the gateway's lease)`,
    ),
  ];
  const ok =
    c.n === ROWS &&
    c.distinct_rows === ROWS &&
    c.off === 0 &&
    c.total === b.cost &&
    b.completed === ROWS &&
    balance.rows.every((r) => r.amount === r.entries);
  if (!ok) throw new Error(`the books do not balance:\n  ${lines.join('\n  ')}`);
  return lines;
}

/**
 * CPU time of every PostgreSQL process on the machine (the server the bench database lives on;
 * its connections stay open through a measurement, so none of their time is lost with them).
 */
function postgresCpuMs(): number {
  let sum = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'postgres') sum += ownCpuMs(Number(pid));
    } catch {
      // it exited while being read
    }
  }
  return sum;
}

async function main() {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'switchyard-bench-batches-'));
  const temporal = await startDevServer({
    cli: await findTemporalCli(),
    dataFile: path.join(dataDir, 'temporal.db'),
    namespace: config.temporalNamespace,
    searchAttributes: SEARCH_ATTRIBUTES,
    uiPort: null,
    log: (m) => /level=(ERROR|FATAL)/.test(m) && console.error(m),
  });
  try {
    await withBenchDatabase(async ({ url, keys }) => {
      const key = keys[0];
      const upstream = await startProcess('./upstream.ts', [], {}, /"port":(\d+)/);
      const env = {
        DATABASE_URL: url,
        TEMPORAL_ADDRESS: temporal.address,
        OPENAI_API_KEY: 'sk-bench',
        OPENAI_BASE_URL: `http://127.0.0.1:${upstream}/v1`,
        DATABASE_MAX_CONNECTIONS: process.env.DATABASE_MAX_CONNECTIONS ?? '10',
      };
      // BENCH_PROFILE=1 writes a CPU profile of the worker (where a batch's rows spend it) to .data/prof
      const worker = await startProcess(
        '../bin/worker.ts',
        [],
        env,
        /serving task queue (\S+)/,
        process.env.BENCH_PROFILE === '1',
      );
      const gateway = await startProcess('../bin/api.ts', [], { ...env, PORT: '0', HOST: '127.0.0.1' }, LISTENING);
      const pool = new Pool(`http://127.0.0.1:${gateway}`, { connections: SYNC_CONCURRENCY + 2 });
      const cpu = () => [cpuMs(gateway), cpuMs(worker), processCpuMs(temporal.pid), postgresCpuMs(), cpuMs(upstream)];
      const share = (a: number[], b: number[], ms: number) =>
        a.map((x, i) => `${(((b[i] - x) / ms) * 100).toFixed(0)}%`);

      // warm-up: a few requests each way
      for (let i = 0; i < 50; i++) await send(pool, 'POST', '/v1/chat/completions', key, rowBody(i));

      // the synchronous route, SYNC_CONCURRENCY at a time
      let next = 0;
      const c0 = cpu();
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: SYNC_CONCURRENCY }, async () => {
          while (next < ROWS) await send(pool, 'POST', '/v1/chat/completions', key, rowBody(next++));
        }),
      );
      const syncMs = performance.now() - t0;
      const syncCpu = share(c0, cpu(), syncMs);

      // the same requests as one inline batch
      const requests = Array.from({ length: ROWS }, (_, i) => ({ custom_id: `row-${i}`, body: rowBody(i) }));
      const c1 = cpu();
      const t1 = performance.now();
      const made = await send(pool, 'POST', '/api/beta/batches', key, {
        endpoint: '/v1/chat/completions',
        model: 'openai/gpt-4o-mini',
        requests,
      });
      const acceptedMs = performance.now() - t1;
      let last: { status: string; request_counts: { completed: number } } = made;
      while (!['completed', 'failed', 'cancelled', 'expired'].includes(last.status)) {
        await new Promise((r) => setTimeout(r, 250));
        // the list shows the batch without its results (10,000 lines once it has ended)
        const page = await send(pool, 'GET', '/api/beta/batches?limit=1', key);
        last = page.data[0];
      }
      const batchMs = performance.now() - t1;
      const batchCpu = share(c1, cpu(), batchMs);
      await pool.close();
      if (process.env.BENCH_BATCH_DEBUG) {
        const { Client, Connection } = await import('@temporalio/client');
        const connection = await Connection.connect({ address: temporal.address });
        const client = new Client({ connection, namespace: config.temporalNamespace });
        const h = await client.workflow.getHandle(`${made.id}:rows:0`).fetchHistory();
        const t = (e: any) => Number(e.eventTime.seconds) * 1000 + e.eventTime.nanos / 1e6;
        const sched = new Map<string, number>();
        const start = new Map<string, number>();
        const waits: number[] = [];
        const runs: number[] = [];
        let wfts = 0;
        for (const e of h.events ?? []) {
          if (e.activityTaskScheduledEventAttributes) sched.set(String(e.eventId), t(e));
          if (e.activityTaskStartedEventAttributes) {
            const s0 = String(e.activityTaskStartedEventAttributes.scheduledEventId);
            waits.push(t(e) - sched.get(s0)!);
            start.set(s0, t(e));
          }
          if (e.activityTaskCompletedEventAttributes) {
            const s0 = String(e.activityTaskCompletedEventAttributes.scheduledEventId);
            runs.push(t(e) - start.get(s0)!);
          }
          if (e.workflowTaskCompletedEventAttributes) wfts++;
        }
        const avg = (a: number[]) => (a.reduce((x, y) => x + y, 0) / a.length).toFixed(1);
        console.log(
          `chunk 0: ${h.events?.length} events, ${wfts} workflow tasks; scheduled→started ${avg(waits)} ms, started→completed ${avg(runs)} ms`,
        );
        await connection.close();
      }
      if (last.status !== 'completed') throw new Error(`the batch ended ${last.status}`);

      const syncRate = (ROWS * 1000) / syncMs;
      const batchRate = (ROWS * 1000) / batchMs;
      console.log(`\n${ROWS} chat requests against the loopback upstream (bench/upstream.ts)\n`);
      printTable(
        ['', 'rows/s', 'seconds', 'CPU: gateway', 'worker', 'Temporal', 'PostgreSQL', 'upstream'],
        [
          [
            `synchronous route, ${SYNC_CONCURRENCY} at a time`,
            syncRate.toFixed(0),
            (syncMs / 1000).toFixed(1),
            ...syncCpu,
          ],
          [
            `inline batch (202 in ${acceptedMs.toFixed(0)} ms)`,
            batchRate.toFixed(0),
            (batchMs / 1000).toFixed(1),
            ...batchCpu,
          ],
        ],
      );
      console.log(`\nbatch / synchronous: ${((batchRate / syncRate) * 100).toFixed(0)}%\n\nbooks:`);
      for (const l of await books(made.id)) console.log(`  ${l}`);
    });
  } finally {
    await temporal.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

try {
  await main();
} catch (err) {
  console.error(err);
  stopProcesses('SIGTERM');
  process.exit(1);
}
