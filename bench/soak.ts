// `npm run bench:soak`: the API process's resident memory under steady load. One gateway (as
// `npm run api` runs it: its Node flags, authentication, billing, records), in front of the
// loopback OpenAI-protocol upstream, takes BENCH_CONCURRENCY (64) concurrent chat requests, half
// streamed, for BENCH_SOAK_SECONDS (600). Its RSS is read from /proc every BENCH_SOAK_SAMPLE_SECONDS
// (10) and printed as it goes; the summary gives idle, peak and final RSS and the trend over the
// second half (MB per minute), which is what "stays flat" means: a leak grows it steadily.
import { Pool } from 'undici';
import { CONCURRENCY, chatBody, once, pidOf, rssMb, startProcess, withBenchDatabase } from './harness.js';

const SOAK_SECONDS = Number(process.env.BENCH_SOAK_SECONDS ?? 600);
const SAMPLE_SECONDS = Number(process.env.BENCH_SOAK_SAMPLE_SECONDS ?? 10);

/** Least-squares slope of y over x. */
function slope(points: Array<[number, number]>): number {
  const n = points.length;
  const mx = points.reduce((s, [x]) => s + x, 0) / n;
  const my = points.reduce((s, [, y]) => s + y, 0) / n;
  const num = points.reduce((s, [x, y]) => s + (x - mx) * (y - my), 0);
  const den = points.reduce((s, [x]) => s + (x - mx) ** 2, 0);
  return den === 0 ? 0 : num / den;
}

await withBenchDatabase(async ({ url, keys }) => {
  const upPort = await startProcess('./upstream.ts', [], {}, /"port":(\d+)/);
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
  const pid = pidOf(port);
  const started0 = rssMb(pid);
  const pool = new Pool(`http://127.0.0.1:${port}`, { connections: CONCURRENCY });
  const bodies = [chatBody(false), chatBody(true)];
  // a few requests so everything a request touches is loaded, then the idle figure
  for (let i = 0; i < 20; i++) await once(pool, '/api/v1/chat/completions', bodies[i % 2], keys[0]);
  await new Promise((r) => setTimeout(r, 2000));
  const idle = rssMb(pid);
  console.log(
    `soak: ${SOAK_SECONDS} s at ${CONCURRENCY} concurrent, RSS every ${SAMPLE_SECONDS} s; ` +
      `RSS after start ${started0} MB, idle after a few requests ${idle} MB`,
  );
  console.log('  t s   RSS MB   req/s');

  const started = Date.now();
  const until = started + SOAK_SECONDS * 1000;
  let done = 0;
  let lastDone = 0;
  const samples: Array<[number, number]> = [];
  const sampler = setInterval(() => {
    const t = Math.round((Date.now() - started) / 1000);
    const rss = rssMb(pid);
    samples.push([t, rss]);
    console.log(
      `${String(t).padStart(5)} ${String(rss).padStart(8)} ${String(Math.round((done - lastDone) / SAMPLE_SECONDS)).padStart(7)}`,
    );
    lastDone = done;
  }, SAMPLE_SECONDS * 1000);
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async (_, i) => {
      while (Date.now() < until) {
        await once(pool, '/api/v1/chat/completions', bodies[i % 2], keys[i % keys.length]);
        done++;
      }
    }),
  );
  clearInterval(sampler);
  await pool.close();
  const peak = Math.max(...samples.map(([, r]) => r));
  const secondHalf = samples.filter(([t]) => t >= SOAK_SECONDS / 2);
  const trend = secondHalf.length > 2 ? slope(secondHalf) * 60 : Number.NaN;
  console.log(
    `\nsoak summary: ${done} requests (${Math.round(done / SOAK_SECONDS)} req/s); RSS idle ${idle} MB, ` +
      `peak ${peak} MB, final ${samples.at(-1)?.[1]} MB; trend over the second half ${trend.toFixed(2)} MB/min`,
  );
});
