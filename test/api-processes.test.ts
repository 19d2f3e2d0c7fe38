import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
/** `npm run api`: the compiled gateway (npm run build; bin/run.mjs runs dist/) with the script's Node flags. */
const apiScript = JSON.parse(readFileSync(`${root}/package.json`, 'utf8')).scripts.api as string;
const nodeFlags = apiScript.split(/\s+/).filter((t) => t.startsWith('--'));

/** `npm run api` as a process of its own, with its output collected. */
function startApi(env: Record<string, string>) {
  const child = spawn(process.execPath, [...nodeFlags, `${root}/dist/bin/api.js`], {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const until = async (test: (out: string) => boolean, what: string, ms = 60_000) => {
    const deadline = Date.now() + ms;
    while (!test(out)) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; output:\n${out}`);
      if (child.exitCode !== null && !test(out))
        throw new Error(`api exited (${child.exitCode}) before ${what}; output:\n${out}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  return { child, output: () => out, until };
}

const servers = (out: string) =>
  [...out.matchAll(/\[api (\d+)\] listening on 127\.0\.0\.1:(\d+)/g)].map((m) => ({ pid: Number(m[1]), port: m[2] }));
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
const exited = (child: ChildProcess) =>
  new Promise<number | null>((resolve) =>
    child.exitCode !== null ? resolve(child.exitCode) : child.once('exit', (code) => resolve(code)),
  );

describe('npm run api with several processes (SWITCHYARD_API_PROCESSES)', function () {
  this.timeout(120_000);
  before(() => {
    assert.match(apiScript, /^node .*bin\/run\.mjs api$/, 'npm run api runs dist/ (npm run build) when built');
    execFileSync(process.execPath, [`${root}/bin/build.mjs`], { cwd: root });
  });

  it('serves from N processes on one port, replaces one that dies, and stops them all on SIGTERM', async () => {
    const api = startApi({ SWITCHYARD_API_PROCESSES: '2' });
    try {
      await api.until((o) => servers(o).length === 2, 'two API processes');
      const [a, b] = servers(api.output());
      assert.notEqual(a.pid, b.pid);
      assert.equal(a.port, b.port, 'the processes share one port');
      const base = `http://127.0.0.1:${a.port}`;
      for (let i = 0; i < 20; i++) assert.equal((await fetch(`${base}/health`)).status, 200);
      assert.equal((await fetch(`${base}/api/v1/models`)).status, 200);

      // one process dies without warning: another takes its place, and the port keeps answering
      process.kill(a.pid, 'SIGKILL');
      await api.until((o) => servers(o).length === 3, 'a replacement process');
      assert.match(api.output(), new RegExp(`API process ${a.pid} ended \\(SIGKILL\\); starting another`));
      for (let i = 0; i < 10; i++) assert.equal((await fetch(`${base}/health`)).status, 200);

      api.child.kill('SIGTERM');
      assert.equal(await exited(api.child), 0);
      for (const s of servers(api.output())) assert.equal(alive(s.pid), false, `process ${s.pid} is gone`);
      await assert.rejects(fetch(`${base}/health`));
    } finally {
      if (api.child.exitCode === null) api.child.kill('SIGKILL');
      for (const s of servers(api.output())) if (alive(s.pid)) process.kill(s.pid, 'SIGKILL');
    }
  });

  it('refuses a process count that is not a whole number', async () => {
    const api = startApi({ SWITCHYARD_API_PROCESSES: 'two' });
    assert.equal(await exited(api.child), 1);
    assert.match(api.output(), /SWITCHYARD_API_PROCESSES must be a whole number of at least 1, or "auto"; got "two"/);
  });
});
