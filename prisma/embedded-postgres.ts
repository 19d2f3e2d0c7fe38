// Embedded Postgres for machines without a database server: PGlite (Postgres compiled to WASM,
// persisted in a directory) behind the Postgres wire protocol (pglite-socket). It runs in a child
// process because PGlite executes queries synchronously: in-process it would stall the gateway's
// event loop for the length of every query.
import { fork, type ChildProcess } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

export interface EmbeddedPostgres {
  /** postgresql:// URL of the server; it accepts ONE connection at a time. */
  url: string;
  maxConnections: 1;
  /** Shuts the child down cleanly (shutdown checkpoint, data on disk) and waits for it. */
  stop(): Promise<void>;
}

export interface EmbeddedPostgresOptions {
  dataDir: string;
  /** 0 (default) picks a free port. */
  port?: number;
  log?: (m: string) => void;
}

/** Thrown when the data dir is in use by another running instance (`code === 'EMBEDDED_PG_LOCKED'`). */
export class EmbeddedPostgresError extends Error {
  constructor(
    message: string,
    readonly code?: string,
  ) {
    super(message);
    this.name = 'EmbeddedPostgresError';
  }
}

type ChildMessage =
  | { type: 'ready'; port: number }
  | { type: 'error'; message: string; code?: string }
  | { type: 'log'; message: string }
  | { type: 'stopped' };

const CHILD = fileURLToPath(new URL('./embedded-postgres-child.mjs', import.meta.url));
const START_TIMEOUT_MS = 120_000;
const STOP_TIMEOUT_MS = 30_000;

export async function startEmbeddedPostgres(opts: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const log = opts.log ?? (() => {});
  const dataDir = resolve(opts.dataDir);
  await mkdir(dataDir, { recursive: true });
  const started = Date.now();

  const child = fork(CHILD, [JSON.stringify({ dataDir, port: opts.port ?? 0 })], {
    // A bare node: the parent's loader flags (tsx, inspector) are not wanted in the child.
    execArgv: [],
    // Own process group, so a terminal's Ctrl-C reaches only the parent; the child then stops
    // cleanly when the parent exits and the IPC channel closes.
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  const prefix = `[embedded-postgres ${child.pid}]`;
  for (const stream of [child.stdout, child.stderr]) {
    stream?.setEncoding('utf8');
    stream?.on('data', (chunk: string) => {
      for (const line of chunk.split('\n')) if (line.trim()) log(`${prefix} ${line}`);
    });
  }

  const exited = new Promise<number | null>((res) => child.once('exit', (code) => res(code)));
  let port: number;
  try {
    port = await waitForReady(child, exited, log, prefix);
  } catch (e) {
    if (child.exitCode === null) child.kill('SIGKILL');
    throw e;
  }

  const url = `postgresql://postgres@127.0.0.1:${port}/postgres`;
  try {
    await probe(url);
  } catch (e) {
    child.kill('SIGKILL');
    throw new EmbeddedPostgresError(`embedded Postgres started but does not answer: ${(e as Error).message}`);
  }
  log(`${prefix} ready on 127.0.0.1:${port} (data ${dataDir}) in ${Date.now() - started} ms`);

  let stopping: Promise<void> | undefined;
  void exited.then((code) => {
    if (!stopping) log(`${prefix} exited unexpectedly (code ${code}); the database is gone until restarted`);
  });
  return {
    url,
    maxConnections: 1,
    stop() {
      stopping ??= stopChild(child, exited, log, prefix);
      return stopping;
    },
  };
}

function waitForReady(
  child: ChildProcess,
  exited: Promise<number | null>,
  log: (m: string) => void,
  prefix: string,
): Promise<number> {
  return new Promise<number>((res, rej) => {
    const timer = setTimeout(
      () => rej(new EmbeddedPostgresError(`embedded Postgres did not start within ${START_TIMEOUT_MS} ms`)),
      START_TIMEOUT_MS,
    );
    child.on('message', (msg: ChildMessage) => {
      if (msg.type === 'log') log(`${prefix} ${msg.message}`);
      else if (msg.type === 'ready') {
        clearTimeout(timer);
        res(msg.port);
      } else if (msg.type === 'error') {
        clearTimeout(timer);
        rej(new EmbeddedPostgresError(`embedded Postgres failed to start: ${msg.message}`, msg.code));
      }
    });
    child.once('error', (e) => {
      clearTimeout(timer);
      rej(new EmbeddedPostgresError(`could not start embedded Postgres: ${e.message}`));
    });
    void exited.then((code) => {
      clearTimeout(timer);
      rej(new EmbeddedPostgresError(`embedded Postgres exited during start-up (code ${code})`));
    });
  });
}

async function probe(url: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
    try {
      await client.connect();
      await client.query('SELECT 1');
      return;
    } catch (e) {
      if (Date.now() > deadline) throw e;
      await new Promise((r) => setTimeout(r, 100));
    } finally {
      // The single connection slot must be free again before anyone else gets the URL.
      await client.end().catch(() => {});
    }
  }
}

async function stopChild(
  child: ChildProcess,
  exited: Promise<number | null>,
  log: (m: string) => void,
  prefix: string,
): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  if (child.connected) child.send({ type: 'stop' });
  else child.kill('SIGTERM');
  const timer = setTimeout(() => {
    log(`${prefix} did not stop within ${STOP_TIMEOUT_MS} ms; killing it`);
    child.kill('SIGKILL');
  }, STOP_TIMEOUT_MS);
  const code = await exited;
  clearTimeout(timer);
  // A clean stop is silent (the launcher prints one "stopped" for everything).
  if (code !== 0) log(`${prefix} stopped (exit code ${code})`);
}
