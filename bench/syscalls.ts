// `npm run bench:syscalls`: system calls per request, the gateway next to the bare proxy, counted
// by strace (a count does not depend on how busy the machine is, unlike time). Sends BENCH_SAMPLES
// (default 500) streaming and non-streaming chat requests at concurrency 8 to each, with strace -c
// attached to each process, and prints the calls per request by kind. Needs `strace`
// (Debian: apt-get install strace).
import { execFileSync, spawn } from 'node:child_process';
import { once as onceEvent } from 'node:events';
import { Pool } from 'undici';
import { chatBody, modes, pidOf, printTable, startProcess, stopProcesses, withBenchDatabase } from './harness.js';

const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 500);

try {
  execFileSync('strace', ['-V'], { stdio: 'ignore' });
} catch {
  console.error('bench:syscalls needs strace (apt-get install strace)');
  process.exit(1);
}

/** strace -c's table for `pid` (all its threads) while `work` runs: calls by system call name. */
async function countCalls(pid: number, work: () => Promise<void>): Promise<Map<string, number>> {
  const tracer = spawn('strace', ['-c', '-f', '-p', String(pid)], { stdio: ['ignore', 'ignore', 'pipe'] });
  let report = '';
  tracer.stderr.on('data', (d) => {
    report += d;
  });
  await new Promise((r) => setTimeout(r, 500)); // attached
  await work();
  tracer.kill('SIGINT');
  await onceEvent(tracer, 'close');
  const calls = new Map<string, number>();
  for (const line of report.split('\n')) {
    const m = /^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)$/.exec(line);
    if (m && m[2] !== 'total') calls.set(m[2], Number(m[1]));
  }
  return calls;
}

async function send(port: string, key: string | undefined, body: string): Promise<void> {
  const pool = new Pool(`http://127.0.0.1:${port}`, { connections: 8 });
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (key) headers.authorization = `Bearer ${key}`;
  let left = SAMPLES;
  const worker = async () => {
    while (left-- > 0) {
      const res = await pool.request({ method: 'POST', path: '/api/v1/chat/completions', headers, body });
      await res.body.text();
      if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}`);
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  await pool.close();
}

await withBenchDatabase(async ({ url, keys }) => {
  const upPort = await startProcess('./upstream.ts', [], {}, /"port":(\d+)/);
  const upstream = `http://127.0.0.1:${upPort}`;
  const proxyPort = await startProcess('./proxy.ts', [`${upstream}/v1`], {}, /"port":(\d+)/);
  const gatewayPort = await startProcess(
    '../bin/api.ts',
    [],
    { DATABASE_URL: url, PORT: '0', OPENAI_API_KEY: 'sk-bench', OPENAI_BASE_URL: `${upstream}/v1`, HOST: '127.0.0.1' },
    /listening on 127\.0\.0\.1:(\d+)/,
  );
  const rows: string[][] = [];
  for (const stream of modes()) {
    const body = chatBody(stream);
    await send(gatewayPort, keys[0], body); // warm-up
    await send(proxyPort, undefined, body);
    const proxy = await countCalls(pidOf(proxyPort), () => send(proxyPort, undefined, body));
    const gateway = await countCalls(pidOf(gatewayPort), () => send(gatewayPort, keys[0], body));
    const names = [...new Set([...proxy.keys(), ...gateway.keys()])].sort(
      (a, b) => (gateway.get(b) ?? 0) - (gateway.get(a) ?? 0),
    );
    const per = (m: Map<string, number>, n: string) => ((m.get(n) ?? 0) / SAMPLES).toFixed(2);
    const sum = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0) / SAMPLES;
    const label = stream ? 'streaming' : 'non-streaming';
    rows.push([label, 'all', sum(proxy).toFixed(2), sum(gateway).toFixed(2)]);
    for (const n of names.slice(0, 12)) rows.push([label, n, per(proxy, n), per(gateway, n)]);
  }
  console.log(`\nsystem calls per request, ${SAMPLES} requests at concurrency 8\n`);
  printTable(['mode', 'call', 'bare proxy', 'gateway'], rows);
}).catch((err) => {
  console.error(err);
  stopProcesses('SIGTERM');
  process.exit(1);
});
