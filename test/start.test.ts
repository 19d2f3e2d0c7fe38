// `npm start` as a new user runs it: no DATABASE_URL (embedded PostgreSQL), no TEMPORAL_ADDRESS
// (the dev server), a fresh data folder. Then the printed key works, and Ctrl-C stops it all.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { freePort, isListening } from './support/ports.js';

const startScript = fileURLToPath(new URL('../bin/start.ts', import.meta.url));

interface Running {
  child: ChildProcess;
  output: () => string;
  ports: { api: number; temporal: number; ui: number };
}

async function start(dataDir: string, extraEnv: Record<string, string> = {}): Promise<Running> {
  const ports = { api: await freePort(), temporal: await freePort(), ui: await freePort() };
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ...extraEnv,
    PORT: String(ports.api),
    SWITCHYARD_DATA_DIR: dataDir,
    TEMPORAL_DEV_PORT: String(ports.temporal),
    TEMPORAL_DEV_UI_PORT: String(ports.ui),
  };
  delete env.DATABASE_URL;
  delete env.TEMPORAL_ADDRESS;
  // A process group of its own, so stop() can send Ctrl-C the way a terminal does: to the whole group.
  const child = spawn(process.execPath, ['--import', 'tsx/esm', startScript], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  await new Promise<void>((resolve, reject) => {
    const t = setInterval(() => {
      if (out.includes('Switchyard is running.')) {
        clearInterval(t);
        resolve();
      }
    }, 100);
    child.once('exit', (code) => {
      clearInterval(t);
      reject(new Error(`npm start exited with ${code}:\n${out}`));
    });
  });
  return { child, output: () => out, ports };
}

/** Ctrl-C in a terminal: SIGINT to every process of the group. Answers the exit code and what was printed. */
async function stop(r: Running): Promise<{ code: number | null; printed: string }> {
  const exited = new Promise<number | null>((resolve) => r.child.once('exit', resolve));
  const before = r.output().length;
  if (r.child.pid === undefined) throw new Error('npm start has no process id');
  process.kill(-r.child.pid, 'SIGINT');
  const code = await exited;
  return { code, printed: r.output().slice(before) };
}

/** A clean stop says so in two lines: no failures, no stack, no WARN lines from Temporal. */
function assertCleanStop({ code, printed }: { code: number | null; printed: string }): void {
  assert.equal(code, 0, printed);
  assert.deepEqual(printed.trim().split('\n'), ['[switchyard] stopping…', '[switchyard] stopped']);
}

describe('npm start (embedded database, Temporal dev server)', function () {
  this.timeout(180_000);
  let dataDir: string;
  before(async () => (dataDir = await mkdtemp(path.join(tmpdir(), 'switchyard-start-'))));
  after(() => rm(dataDir, { recursive: true, force: true }));

  it('starts everything, prints a working key once, and stops cleanly on Ctrl-C', async () => {
    const r = await start(dataDir);
    try {
      const out = r.output();
      const key = /Local API key\s+(sk-nanogpt-[0-9a-f-]{36})/.exec(out)?.[1];
      assert.ok(key, `no key printed:\n${out}`);
      assert.match(out, new RegExp(`Temporal UI\\s+http://127\\.0\\.0\\.1:${r.ports.ui}`));
      const base = `http://127.0.0.1:${r.ports.api}`;
      const models = await (await fetch(`${base}/api/v1/models`)).json();
      assert.ok(models.data.some((m: { id: string }) => m.id === 'local/stories260k'));
      const bal = await fetch(`${base}/api/check-balance`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${key}` },
      });
      assert.equal(bal.status, 200);
      assert.equal((await bal.json()).usd_balance, '5');
      assert.equal((await fetch(`${base}/v1/models`, { method: 'POST', body: '{bad' })).status, 405);
      // the built-in decision model answers offline on a fresh install
      const decision = await fetch(`${base}/api/v1/decisions`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'local/decider-260k',
          state: 'The invoice was charged twice.',
          questions: {
            route: { type: 'choice', instructions: 'Which team?', criteria: { billing: null, sales: null } },
          },
        }),
      });
      const d = await decision.json();
      assert.equal(decision.status, 200, JSON.stringify(d));
      assert.equal(d.method, 'logprobs');
      assert.ok(['billing', 'sales'].includes(d.answers.route.choice));
    } finally {
      assertCleanStop(await stop(r));
    }
    for (const port of Object.values(r.ports))
      assert.equal(await isListening(port), false, `port ${port} still open after stop`);
  });

  it('restarts on the same data, with a bootstrap key topped up to the bootstrap balance and its login', async () => {
    const key = `sk-nanogpt-${randomUUID()}`;
    const r = await start(dataDir, {
      SWITCHYARD_BOOTSTRAP_KEY: key,
      SWITCHYARD_BOOTSTRAP_BALANCE_USD: '12.5',
      SWITCHYARD_BOOTSTRAP_EMAIL: 'Operator@Example.test',
      SWITCHYARD_BOOTSTRAP_PASSWORD: 'operator password',
    });
    try {
      const base = `http://127.0.0.1:${r.ports.api}`;
      assert.match(r.output(), new RegExp(`Local API key\\s+${key}`));
      assert.match(
        r.output(),
        /Sign in\s+\S+\/api\/auth\/login\s+as operator@example\.test, with SWITCHYARD_BOOTSTRAP_PASSWORD/,
      );
      const bal = await fetch(`${base}/api/check-balance`, { headers: { 'x-api-key': key } });
      assert.equal((await bal.json()).usd_balance, '12.5');
      // the operator signs in as the bootstrap account, and reads the same balance with the session
      const login = await fetch(`${base}/api/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'operator@example.test', password: 'operator password' }),
      });
      assert.equal(login.status, 200);
      const cookie = login.headers.getSetCookie()[0]!.split(';')[0]!;
      const bySession = await fetch(`${base}/api/check-balance`, { headers: { cookie } });
      assert.equal((await bySession.json()).usd_balance, '12.5');
    } finally {
      assertCleanStop(await stop(r));
    }
  });
});
