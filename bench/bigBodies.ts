// Part of `npm run bench:bodies`: the API process's peak RSS while BENCH_BIG_CONCURRENCY (4) creates
// of BENCH_BIG_MB (50) MB each arrive at once on each route whose bodies are large by design: a
// message batch (200 MiB limit), an inline batch (32 MiB: 50 MB is refused at the door, so it is
// also sent at 30 MB, just under), and a file upload (multipart, 200 MiB). Each route is measured
// against a fresh gateway with a Temporal dev server behind it (no worker: a batch is accepted and
// waits), BENCH_BIG_ROUNDS (2) waves each. BENCH_BIG_BEFORE=<path of another checkout's
// bin/api.ts> measures that checkout's gateway too, line by line beside this one's.
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Pool } from 'undici';
import { config } from '../activities/config.js';
import { SEARCH_ATTRIBUTES } from '../bin/worker.js';
import { findTemporalCli, startDevServer } from '../temporal-dev/index.js';
import { printTable, rssMb, startProcess, pidOf } from './harness.js';

const MB = 1024 * 1024;
const CONCURRENCY = Number(process.env.BENCH_BIG_CONCURRENCY ?? 4);
const ROUNDS = Number(process.env.BENCH_BIG_ROUNDS ?? 2);
const SIZE = Number(process.env.BENCH_BIG_MB ?? 50) * MB;
const MODEL = 'openai/gpt-4o-mini';

/** Distinct requests (by custom_id) of about 50 kB each, `size` bytes of them in all. */
function requests(size: number, row: (id: string, text: string) => object): string[] {
  const text = 'Tell me about gateways. '.repeat(2000);
  const out: string[] = [];
  for (let n = 0, bytes = 0; bytes < size - 60_000; n++) {
    const line = JSON.stringify(row(`r${n}`, text));
    out.push(line);
    bytes += line.length + 1;
  }
  return out;
}

interface Route {
  name: string;
  path: string;
  body: Buffer;
  contentType: string;
}

function routes(): Route[] {
  const message = (custom_id: string, text: string) => ({
    custom_id,
    params: { model: MODEL, max_tokens: 16, messages: [{ role: 'user', content: text }] },
  });
  const chat = (custom_id: string, text: string) => ({
    custom_id,
    body: { max_tokens: 16, messages: [{ role: 'user', content: text }] },
  });
  const inline = (size: number) =>
    Buffer.from(
      `{"endpoint":"/v1/chat/completions","model":"${MODEL}","requests":[${requests(size, chat).join(',')}]}`,
    );
  const boundary = 'bench-boundary-7d1c';
  const lines = requests(SIZE, (custom_id, text) => ({
    custom_id,
    method: 'POST',
    url: '/v1/chat/completions',
    body: { model: MODEL, max_tokens: 16, messages: [{ role: 'user', content: text }] },
  }));
  const upload = Buffer.concat([
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="requests.jsonl"\r\n` +
        'Content-Type: application/jsonl\r\n\r\n',
    ),
    Buffer.from(`${lines.join('\n')}\n`),
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  return [
    {
      name: 'POST /v1/messages/batches',
      path: '/v1/messages/batches',
      body: Buffer.from(`{"requests":[${requests(SIZE, message).join(',')}]}`),
      contentType: 'application/json',
    },
    {
      name: 'POST /api/beta/batches (inline)',
      path: '/api/beta/batches',
      body: inline(SIZE),
      contentType: 'application/json',
    },
    {
      name: 'POST /api/beta/batches (inline, under its limit)',
      path: '/api/beta/batches',
      body: inline(30 * MB),
      contentType: 'application/json',
    },
    {
      name: 'POST /v1/files (upload)',
      path: '/v1/files',
      body: upload,
      contentType: `multipart/form-data; boundary=${boundary}`,
    },
  ];
}

/** Peak RSS of a fresh gateway (`api`: its bin/api.ts) while the route takes waves of big bodies. */
async function measure(api: string, env: NodeJS.ProcessEnv, key: string, route: Route) {
  const port = await startProcess(api, [], { ...env, PORT: '0', HOST: '127.0.0.1' }, /listening on 127\.0\.0\.1:(\d+)/);
  const pid = pidOf(port);
  const pool = new Pool(`http://127.0.0.1:${port}`, { connections: CONCURRENCY, bodyTimeout: 0, headersTimeout: 0 });
  await new Promise((r) => setTimeout(r, 1000));
  const idle = rssMb(pid);
  let peak = idle;
  const sampler = setInterval(() => {
    try {
      peak = Math.max(peak, rssMb(pid));
    } catch {
      // died: the last peak stands
    }
  }, 10);
  const statuses = new Map<string, number>();
  for (let round = 0; round < ROUNDS; round++) {
    const answers = await Promise.all(
      Array.from({ length: CONCURRENCY }, () =>
        pool
          .request({
            method: 'POST',
            path: route.path,
            headers: { 'content-type': route.contentType, authorization: `Bearer ${key}` },
            body: route.body,
          })
          .then(async (res) => {
            await res.body.text();
            return String(res.statusCode);
          })
          .catch(() => 'failed'),
      ),
    );
    for (const a of answers) statuses.set(a, (statuses.get(a) ?? 0) + 1);
  }
  clearInterval(sampler);
  await pool.close();
  process.kill(pid, 'SIGINT');
  return { idle, peak, answers: [...statuses].map(([s, n]) => `${n}×${s}`).join(' ') };
}

export async function measureBigBodies(db: { url: string; keys: string[] }, upstreamPort: string): Promise<void> {
  const temporal = await startDevServer({
    cli: await findTemporalCli(),
    dataFile: path.join(mkdtempSync(path.join(os.tmpdir(), 'switchyard-bench-bodies-')), 'temporal.db'),
    namespace: config.temporalNamespace,
    searchAttributes: SEARCH_ATTRIBUTES,
    uiPort: null,
    log: (m) => /level=(ERROR|FATAL)/.test(m) && console.error(m),
  });
  try {
    const env = {
      DATABASE_URL: db.url,
      TEMPORAL_ADDRESS: temporal.address,
      OPENAI_API_KEY: 'sk-bench',
      OPENAI_BASE_URL: `http://127.0.0.1:${upstreamPort}/v1`,
    };
    const before = process.env.BENCH_BIG_BEFORE;
    const gateways: Array<[string, string]> = [
      ...(before ? ([['before', before]] as Array<[string, string]>) : []),
      ['this checkout', '../bin/api.ts'],
    ];
    console.log(`big bodies: ${CONCURRENCY} at once, ${ROUNDS} waves per route, a fresh gateway per route`);
    const rows: string[][] = [];
    for (const route of routes()) {
      for (const [label, api] of gateways) {
        const m = await measure(api, env, db.keys[0]!, route);
        rows.push([
          route.name,
          label,
          (route.body.length / MB).toFixed(0),
          String(m.idle),
          String(m.peak),
          String(m.peak - m.idle),
          m.answers,
        ]);
        console.log(`  ${rows.at(-1)!.join(' | ')}`);
      }
    }
    console.log();
    printTable(['route', 'gateway', 'MB each', 'idle RSS MB', 'peak RSS MB', 'above idle', 'answers'], rows);
  } finally {
    await temporal.stop();
  }
}
