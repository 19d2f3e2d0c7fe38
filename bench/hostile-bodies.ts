// `npm run bench:bodies`: the API process's resident memory while request bodies near the size
// limit arrive several at a time. For each kind of hostile body, a fresh gateway (as `npm run api`
// runs it, in front of the loopback OpenAI-protocol upstream) is warmed up, then takes
// BENCH_BODY_ROUNDS (4) waves of BENCH_BODY_CONCURRENCY (6, then 4× that) bodies of about
// SWITCHYARD_BODY_LIMIT_BYTES (10 MB) each. RSS is read from /proc every 10 ms; each line gives the
// idle RSS, the peak above it (per body in flight: the figure the body limit should bound), where
// RSS stands a second after the waves, and whether the gateway still serves. BENCH_BODY_KINDS
// (comma-separated words) runs only the kinds whose names contain one.
//
// Then the routes whose bodies are large by design (bigBodies.ts): peak RSS while four creates of
// 50 MB arrive at once. BENCH_BODY_SET=hostile or =big runs only one of the two parts.
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { Pool } from 'undici';
import { measureBigBodies } from './bigBodies.js';
import { chatBody, once, pidOf, printTable, rssMb, startProcess, withBenchDatabase } from './harness.js';

const LIMIT = Number(process.env.SWITCHYARD_BODY_LIMIT_BYTES ?? 10 * 1024 * 1024);
const ROUNDS = Number(process.env.BENCH_BODY_ROUNDS ?? 4);
const CONCURRENCY = Number(process.env.BENCH_BODY_CONCURRENCY ?? 6);
const MODEL = 'openai/gpt-4o-mini';

/** `unit` repeated inside `head`…`tail` to just under the limit. */
function fill(head: string, unit: string, tail: string): Buffer {
  const room = LIMIT - 1024 - head.length - tail.length;
  return Buffer.from(head + unit.repeat(Math.floor(room / Buffer.byteLength(unit))) + tail);
}

interface Kind {
  name: string;
  body: Buffer;
  headers?: Record<string, string>;
  /** stream the body in 64 kB pieces without a Content-Length */
  chunked?: boolean;
}

const chat = `{"model":"${MODEL}","max_tokens":1,"messages":[{"role":"user","content":"`;
const kinds: Kind[] = [
  { name: 'one long string (a valid chat)', body: fill(chat, 'x', '"}]}') },
  { name: 'non-ASCII string (2 bytes a char)', body: fill(chat, 'é', '"}]}') },
  { name: 'unknown field, long string', body: fill(`{"model":"${MODEL}","pad":"`, 'x', '"}') },
  { name: 'millions of empty objects', body: fill(`{"model":"${MODEL}","messages":[`, '{},', '{}]}') },
  { name: 'millions of empty arrays', body: fill(`{"model":"${MODEL}","pad":[`, '[],', '[]]}') },
  { name: 'millions of numbers', body: fill(`{"model":"${MODEL}","pad":[`, '0,', '0]}') },
  { name: 'millions of short strings', body: fill(`{"model":"${MODEL}","pad":[`, '"ab",', '"ab"]}') },
  { name: 'millions of distinct keys', body: Buffer.from(distinctKeys()) },
  {
    name: 'gzip bomb (limit after inflating)',
    body: gzipSync(fill(`{"model":"${MODEL}","pad":"`, 'x', '"}')),
    headers: { 'content-encoding': 'gzip' },
  },
  { name: 'chunked, past the limit', body: Buffer.alloc(LIMIT + 1024 * 1024, 'x'), chunked: true },
];

function distinctKeys(): string {
  const parts: string[] = [];
  let size = 20;
  for (let i = 0; size < LIMIT - 1024; i++) {
    const part = `"k${i.toString(36)}":0`;
    parts.push(part);
    size += part.length + 1;
  }
  return `{${parts.join(',')}}`;
}

/** The body as a stream of 64 kB pieces (sent chunked, without a Content-Length). */
function pieces(body: Buffer): Readable {
  return Readable.from(
    (function* () {
      for (let i = 0; i < body.length; i += 65536) yield body.subarray(i, i + 65536);
    })(),
  );
}

const SET = process.env.BENCH_BODY_SET;

await withBenchDatabase(async ({ url, keys }) => {
  const upPort = await startProcess('./upstream.ts', [], {}, /"port":(\d+)/);
  if (SET !== 'big') await hostileBodies(url, keys, upPort);
  if (SET !== 'hostile') await measureBigBodies({ url, keys }, upPort);
});

async function hostileBodies(url: string, keys: string[], upPort: string) {
  console.log(
    `hostile bodies: ${(LIMIT / 1048576).toFixed(0)} MB limit, ${ROUNDS} waves per kind, ` +
      'each kind against a fresh gateway process',
  );

  /** A gateway of its own, warmed up: its port, pid and idle RSS. */
  async function startGateway() {
    const port = await startProcess(
      '../bin/api.ts',
      [],
      {
        DATABASE_URL: url,
        PORT: '0',
        HOST: '127.0.0.1',
        OPENAI_API_KEY: 'sk-bench',
        OPENAI_BASE_URL: `http://127.0.0.1:${upPort}/v1`,
      },
      /listening on 127\.0\.0\.1:(\d+)/,
    );
    const pool = new Pool(`http://127.0.0.1:${port}`, { connections: 4 * CONCURRENCY });
    for (let i = 0; i < 50; i++) await once(pool, '/api/v1/chat/completions', chatBody(i % 2 === 1), keys[0]);
    await new Promise((r) => setTimeout(r, 1000));
    const pid = pidOf(port);
    return { pool, pid, idle: rssMb(pid) };
  }

  /** RSS of a process, or NaN once it has died (out of memory, as unlimited bodies made it). */
  const rss = (pid: number) => {
    try {
      return rssMb(pid);
    } catch {
      return Number.NaN;
    }
  };

  const send = async (pool: Pool, kind: Kind) => {
    const res = await pool.request({
      method: 'POST',
      path: '/api/v1/chat/completions',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${keys[0]}`, ...kind.headers },
      body: kind.chunked ? pieces(kind.body) : kind.body,
    });
    await res.body.text();
    return res.statusCode;
  };

  /** Waves of `concurrency` bodies of one kind: peak RSS during them, RSS a second after, the answers. */
  async function measure(kind: Kind, concurrency: number) {
    const { pool, pid, idle } = await startGateway();
    let peak = idle;
    const sampler = setInterval(() => {
      const now = rss(pid);
      if (now > peak) peak = now; // NaN (dead) keeps the last peak
    }, 10);
    const statuses = new Map<number, number>();
    for (let round = 0; round < ROUNDS; round++) {
      const codes = await Promise.all(Array.from({ length: concurrency }, () => send(pool, kind).catch(() => 0)));
      for (const c of codes) statuses.set(c, (statuses.get(c) ?? 0) + 1);
    }
    clearInterval(sampler);
    await new Promise((r) => setTimeout(r, 1000));
    const after = rss(pid);
    // still serving ordinary requests?
    const alive =
      !Number.isNaN(after) &&
      (await once(pool, '/api/v1/chat/completions', chatBody(false), keys[0]).then(
        () => true,
        () => false,
      ));
    await pool.close();
    if (!Number.isNaN(after)) process.kill(pid, 'SIGINT');
    const answers = [...statuses].map(([c, n]) => `${n}×${c || 'failed'}`).join(' ');
    return { idle, peak, after, answers: alive ? answers : `${answers}; the gateway died` };
  }

  const rows: string[][] = [];
  // BENCH_BODY_KINDS=objects,gzip runs only the kinds whose names contain one of the words
  const only = process.env.BENCH_BODY_KINDS?.split(',').filter(Boolean);
  for (const concurrency of [CONCURRENCY, 4 * CONCURRENCY]) {
    for (const kind of kinds.filter((k) => !only || only.some((w) => k.name.includes(w)))) {
      const m = await measure(kind, concurrency);
      rows.push([
        kind.name,
        String(concurrency),
        `${(kind.body.length / 1048576).toFixed(1)}`,
        String(m.idle),
        String(m.peak),
        `${m.peak - m.idle}`,
        ((m.peak - m.idle) / concurrency).toFixed(0),
        Number.isNaN(m.after) ? '-' : String(m.after),
        m.answers,
      ]);
      console.log(`  ${rows.at(-1)!.join(' | ')}`);
    }
  }
  console.log();
  printTable(
    ['body', 'at once', 'MB sent', 'idle RSS MB', 'peak', 'above idle', 'per body', 'RSS after', 'answers'],
    rows,
  );
  const above = rows.map((r) => Number(r[5]));
  console.log(
    `\nhostile bodies summary: peak above idle ${Math.min(...above)}-${Math.max(...above)} MB ` +
      `(${Math.min(...rows.map((r) => Number(r[6])))}-${Math.max(...rows.map((r) => Number(r[6])))} MB per body in flight)`,
  );
}
