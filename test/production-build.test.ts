// biome-ignore-all lint/suspicious/noExplicitAny: wire JSON, read field by field
// The production build with production dependencies only, exactly as an operator makes it: the
// project copied to a scratch folder (without node_modules), this checkout's node_modules copied in
// and pruned (`npm prune --omit=dev`), the Prisma client generated, `npm run build`, then `npm run
// worker` and `npm run api` against the test database, a Temporal dev server and a loopback fal
// upstream: a chat answered by the built-in local model and a video job completed.
// SLOW (a 1 GB copy, a build, two processes): 25 s with a warm disk cache, 3 min on a busy machine. Part of
// `npm test` (one parallel worker carries it while the others run the rest); SWITCHYARD_TEST_PRODUCTION_BUILD=0
// skips it, for a quick local run.
import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomUUID } from 'node:crypto';
import { config } from '../activities/config.js';
import { findLocalModel } from '../activities/providers/local/modelFiles.js';
import { findTemporalCli, startDevServer, type DevServer } from '../temporal-dev/index.js';
import { newAccount } from './support/api.js';
import { startFalUpstream, type FalUpstream } from './support/upstreams/fal.js';
import { until } from './support/wait.js';
import { assertBooksBalance } from './support/books.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const enabled = process.env.SWITCHYARD_TEST_PRODUCTION_BUILD !== '0';

/** `npm run <script>` in `dir`, in a process group of its own (npm, its shell and node stop together). */
function npmRun(dir: string, script: string, env: Record<string, string>) {
  const child = spawn('npm', ['run', script], {
    cwd: dir,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const waitFor = async (pattern: RegExp, ms = 90_000) => {
    const deadline = Date.now() + ms;
    for (;;) {
      const m = out.match(pattern);
      if (m) return m;
      if (child.exitCode !== null) throw new Error(`npm run ${script} exited (${child.exitCode}):\n${out}`);
      if (Date.now() > deadline) throw new Error(`npm run ${script}: no ${pattern} in time:\n${out}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  return { child, output: () => out, waitFor };
}

async function stopGroup(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  const signal = (s: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, s);
    } catch {
      // already gone
    }
  };
  signal('SIGTERM');
  const timer = setTimeout(() => signal('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
}

/** The files of the checkout (tracked or not, but not ignored), copied to `to`. */
function copyProject(to: string): void {
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: root })
    .toString()
    .split('\0')
    .filter((f) => f && existsSync(path.join(root, f)) && f !== 'node_modules' && f !== '.venv');
  for (const f of files) {
    mkdirSync(path.dirname(path.join(to, f)), { recursive: true });
    cpSync(path.join(root, f), path.join(to, f));
  }
}

(enabled ? describe : describe.skip)('production build, pruned of dev dependencies (slow)', function () {
  this.timeout(600_000);
  let dir: string;
  let server: DevServer;
  let fal: FalUpstream;
  const processes: ChildProcess[] = [];

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'switchyard-prod-'));
    copyProject(dir);
    const sh = (cmd: string, args: string[]) =>
      execFileSync(cmd, args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env } }).toString();
    // cp: several times faster than Node's cpSync on a million small files
    sh('cp', ['-a', realpathSync(path.join(root, 'node_modules')), path.join(dir, 'node_modules')]);
    sh('npm', ['prune', '--omit=dev', '--no-audit', '--no-fund']);
    for (const dev of ['mocha', 'knip', '@biomejs/biome', '@temporalio/testing']) {
      assert.ok(!existsSync(path.join(dir, 'node_modules', dev)), `${dev} (a dev dependency) is gone`);
    }
    sh('node', ['bin/prisma-generate.mjs']);
    sh('npm', ['run', 'build']);
    assert.ok(existsSync(path.join(dir, 'dist', 'workflow-bundle.js')), 'the workflow bundle is built');
    server = await startDevServer({
      cli: await findTemporalCli(),
      namespace: config.temporalNamespace,
      searchAttributes: {},
      uiPort: null,
    });
    fal = await startFalUpstream();
  });
  after(async () => {
    for (const p of processes) await stopGroup(p);
    await fal?.close();
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('npm run worker and npm run api answer a chat with the local model and complete a video job', async () => {
    const models = path.dirname(findLocalModel('stories260K.gguf') ?? assert.fail('stories260K.gguf not found'));
    const env = {
      DATABASE_URL: config.databaseUrl!,
      TEMPORAL_ADDRESS: server.address,
      TEMPORAL_NAMESPACE: config.temporalNamespace,
      TEMPORAL_TASK_QUEUE: `prod-${randomUUID()}`,
      LOCAL_MODELS_DIR: models,
      FAL_BASE_URL: fal.url,
      FAL_API_KEY: fal.apiKey,
      SWITCHYARD_FETCH_ALLOW_PRIVATE: '1', // the loopback "CDN" serving the outputs
      SWITCHYARD_VIDEO_POLL_MS: '200',
      SWITCHYARD_DATA_DIR: path.join(dir, '.data'),
      PORT: '0',
      HOST: '127.0.0.1',
    };
    const worker = npmRun(dir, 'worker', env);
    processes.push(worker.child);
    await worker.waitFor(/\[worker\] serving task queue/);
    const api = npmRun(dir, 'api', env);
    processes.push(api.child);
    const [, port] = await api.waitFor(/listening on 127\.0\.0\.1:(\d+)/);
    for (const p of [worker, api]) assert.doesNotMatch(p.output(), /no build in dist|tsx/);
    const base = `http://127.0.0.1:${port}`;
    const { key, accountId } = await newAccount('10');
    const call = async (method: string, route: string, body?: unknown) => {
      const res = await fetch(`${base}${route}`, {
        method,
        headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      return { status: res.status, body: (await res.json()) as any };
    };

    const chat = await call('POST', '/api/v1/chat/completions', {
      model: 'local/stories260k',
      messages: [{ role: 'user', content: 'Once upon a time' }],
      max_tokens: 12,
    });
    assert.equal(chat.status, 200, JSON.stringify(chat.body));
    assert.ok(chat.body.choices[0].message.content.length > 0);
    assert.ok(chat.body.usage.completion_tokens > 0);

    fal.script({ queuePolls: 1, progressPolls: 1, duration: 5 });
    const job = await call('POST', '/api/generate-video', {
      model: 'kling-2.1-master',
      prompt: 'A lighthouse in a storm',
      duration: '5',
    });
    assert.equal(job.status, 202, JSON.stringify(job.body));
    const done = await until(
      () => call('GET', `/api/video/status?requestId=${job.body.runId}`),
      (r) => ['completed', 'failed', 'cancelled'].includes(r.body?.data?.status),
      60_000,
    );
    assert.equal(done.body.data.status, 'completed', JSON.stringify(done.body));
    assert.equal(fal.jobs.length, 1, 'the worker called the loopback fal upstream');
    await assertBooksBalance(accountId);
  });
});
