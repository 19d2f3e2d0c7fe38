/**
 * Starts and stops a local Temporal dev server (`temporal server start-dev`) for development and tests,
 * and registers Switchyard's custom search attributes on any server.
 *
 * Why this exists: `@temporalio/testing`'s `createLocal()` downloads its server at run time and gives it
 * only 5 s to start; here we reuse the CLI found by ./cli.ts, pick free ports so parallel test runs do
 * not collide, wait until the namespace really answers, and make sure the child dies with its parent.
 * `ensureSearchAttributes` is separate so it also works against an existing server (TEMPORAL_ADDRESS).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { Connection, type ConnectionOptions } from '@temporalio/client';
import { DEFAULT_PROJECT_DIR, findTemporalCli } from './cli.js';

type SearchAttributeTypeName = 'Keyword' | 'Text' | 'Int' | 'Double' | 'Bool' | 'Datetime' | 'KeywordList';

export interface DevServerOptions {
  /** Path of the `temporal` CLI; found/installed with findTemporalCli() when omitted. */
  cli?: string;
  /** SQLite file for persistence; omit for an in-memory server. */
  dataFile?: string;
  /**
   * SQLite pragmas for `dataFile` (default DATA_FILE_PRAGMAS); `{}` keeps the CLI's own defaults
   * (a rollback journal, synchronous=FULL).
   */
  sqlitePragmas?: Record<string, string>;
  namespace: string;
  searchAttributes: Record<string, SearchAttributeTypeName>;
  /** Bind address, default 127.0.0.1 (never expose the dev server by accident). */
  ip?: string;
  /** 0/omitted = a free port. */
  port?: number;
  /** 0/omitted = a free port; null = no Web UI. */
  uiPort?: number | null;
  /** Receives the server's output line by line; without it the output goes to a log file. */
  log?: (msg: string) => void;
  /** How long to wait for the namespace to answer, default 30 s. */
  readyTimeoutMs?: number;
  /**
   * Run the server in a process group of its own, so a terminal's Ctrl-C reaches only the parent, which
   * then stops its worker before the server (an ordered, quiet stop). The parent's exit and signal hooks
   * still stop the server; only a SIGKILL of the parent would leave it running. Default false.
   */
  ownProcessGroup?: boolean;
}

export interface DevServer {
  address: string;
  uiUrl: string | null;
  namespace: string;
  pid: number;
  stop(): Promise<void>;
}

// Numeric values of temporal.api.enums.v1.IndexedValueType (stable wire values), so we need not
// import @temporalio/proto, which is not a direct dependency.
const INDEXED_VALUE_TYPES: Record<string, number> = {
  text: 1,
  keyword: 2,
  int: 3,
  double: 4,
  bool: 5,
  datetime: 6,
  keywordlist: 7,
};
/**
 * The data file in write-ahead-log mode with synchronous=NORMAL. With the CLI's defaults (a
 * rollback journal, synchronous=FULL) every commit of the server's single SQLite connection waits
 * for several fsyncs (journal, database, directory), and every workflow start, timer, activity
 * and workflow task is a commit: with a few hundred jobs in flight the writes queue behind each
 * other, and starting a workflow took 55-190 ms (p50) instead of a few. In WAL mode with NORMAL a
 * commit is an append to the log in the OS's page cache, synced at checkpoints. What it risks: a
 * crash of the server process loses nothing, a crash of the machine (power loss) may lose the
 * last commits, never the file's consistency: the trade the database's own request charges make
 * (activities/db.ts). This is the development server; production runs a real Temporal cluster.
 */
const DATA_FILE_PRAGMAS: Record<string, string> = { journal_mode: 'wal', synchronous: 'normal' };
const TYPE_NAMES = ['', 'Text', 'Keyword', 'Int', 'Double', 'Bool', 'Datetime', 'KeywordList'];
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export async function startDevServer(opts: DevServerOptions): Promise<DevServer> {
  validateName(opts.namespace, 'namespace', /^[A-Za-z0-9][A-Za-z0-9._-]{1,254}$/);
  for (const [key, type] of Object.entries(opts.searchAttributes)) {
    validateName(key, 'search attribute name', /^[A-Za-z_][A-Za-z0-9_]*$/);
    indexedValueType(type, key);
  }
  const cli = opts.cli ?? (await findTemporalCli({ log: opts.log }));
  // The OS may hand a just-probed free port to someone else before the server binds it: retry then.
  const autoPorts = !opts.port || opts.uiPort === undefined || opts.uiPort === 0;
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(cli, opts);
    } catch (err) {
      if (!(err instanceof PortInUseError) || !autoPorts || attempt >= 3) throw err;
      opts.log?.(`[temporal-dev] port taken before the server could bind it; retrying (${err.message.split('\n')[0]})`);
    }
  }
}

class PortInUseError extends Error {}

/** The `temporal server start-dev` command line for these options. */
function serverArgs(ip: string, port: number, uiPort: number | null, opts: DevServerOptions): string[] {
  const args = ['server', 'start-dev', '--ip', ip, '--port', String(port)];
  args.push(...(uiPort === null ? ['--headless'] : ['--ui-port', String(uiPort)]));
  if (opts.dataFile) {
    const dataFile = path.resolve(opts.dataFile);
    mkdirSync(path.dirname(dataFile), { recursive: true });
    args.push('--db-filename', dataFile);
    for (const [name, value] of Object.entries(opts.sqlitePragmas ?? DATA_FILE_PRAGMAS))
      args.push('--sqlite-pragma', `${name}=${value}`);
  }
  if (opts.namespace !== 'default') args.push('--namespace', opts.namespace); // default always exists
  for (const [key, type] of Object.entries(opts.searchAttributes)) args.push('--search-attribute', `${key}=${type}`);
  args.push('--log-level', 'warn');
  return args;
}

/** The server's log file, next to its data (or in <repo>/.data), opened with a header line for this run. */
function openLogFile(dataFile: string | undefined, command: string): WriteStream {
  const dir = dataFile ? path.dirname(path.resolve(dataFile)) : path.join(DEFAULT_PROJECT_DIR, '.data');
  mkdirSync(dir, { recursive: true });
  const logFile = createWriteStream(path.join(dir, 'temporal-server.log'), { flags: 'a' });
  logFile.write(`\n--- ${new Date().toISOString()} ${command}\n`);
  return logFile;
}

/** Hand each non-empty line of `stream` to `emit`, the last one too when it has no line break. */
function eachLine(stream: Readable, emit: (line: string) => void): void {
  let partial = '';
  stream.setEncoding('utf8');
  stream.on('data', (d: string) => {
    const lines = (partial + d).split(/\r?\n/);
    partial = lines.pop() ?? '';
    for (const line of lines) if (line.trim()) emit(line);
  });
  stream.on('end', () => partial.trim() && emit(partial));
}

async function startOnce(cli: string, opts: DevServerOptions): Promise<DevServer> {
  const ip = opts.ip ?? '127.0.0.1';
  const [freeA, freeB] = await freePorts(ip, 2);
  const port = opts.port || freeA;
  const uiPort = opts.uiPort === null ? null : opts.uiPort || (freeB === port ? freeA : freeB);
  // A wildcard bind address is not something to connect to.
  const connectHost = ip === '0.0.0.0' ? '127.0.0.1' : ip === '::' ? '::1' : ip;
  const hostPort = (h: string, p: number) => (h.includes(':') ? `[${h}]:${p}` : `${h}:${p}`);
  const address = hostPort(connectHost, port);
  const uiUrl = uiPort === null ? null : `http://${hostPort(connectHost, uiPort)}`;

  const args = serverArgs(ip, port, uiPort, opts);

  // Output: to the callback, else to a log file next to the data (or in <repo>/.data); keep a tail for errors.
  const logFile = opts.log ? null : openLogFile(opts.dataFile, `${cli} ${args.join(' ')}`);
  const tail: string[] = [];
  // Once we stop the server, its shutdown chatter (WARN lines about its own internal pollers losing
  // their connection) is expected: it is kept in the tail and shown only if the stop goes wrong.
  let muted: string[] | null = null;
  const emit = (line: string) => {
    tail.push(line);
    if (tail.length > 30) tail.shift();
    if (muted && muted.length < 30) muted.push(line);
    if (opts.log && !muted) opts.log(`[temporal] ${line}`);
    else logFile?.write(`${line}\n`);
  };

  const started = Date.now();
  const child = spawn(cli, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    windowsHide: true,
    detached: opts.ownProcessGroup ?? false,
  });
  track(child);
  for (const stream of [child.stdout!, child.stderr!]) eachLine(stream, emit);
  const exited = new Promise<string>((resolve) => {
    child.once('error', (err) => resolve(`could not be started: ${err.message}`));
    child.once('exit', (code, signal) => resolve(signal ? `was killed by ${signal}` : `exited with code ${code}`));
  });
  exited.then(() => untrack(child));

  let stopping: Promise<void> | null = null;
  const stop = () =>
    (stopping ??= (async () => {
      if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
        muted = [];
        child.kill('SIGTERM');
        let timer: NodeJS.Timeout | undefined;
        const gone = await Promise.race([
          exited.then(() => true),
          new Promise<boolean>((r) => (timer = setTimeout(() => r(false), 5_000))),
        ]);
        clearTimeout(timer); // do not keep a short-lived parent alive for 5 s
        if (!gone) {
          child.kill('SIGKILL');
          await exited;
        }
        const how = await exited;
        if (!gone || !/^exited with code 0$|^was killed by SIGTERM$/.test(how)) {
          opts.log?.(`[temporal-dev] the server ${gone ? how : 'did not stop within 5 s and was killed'}`);
          for (const line of muted) opts.log?.(`[temporal] ${line}`);
        }
      }
      untrack(child);
      await new Promise<void>((r) => (logFile ? logFile.end(r) : r()));
    })());

  const giveUp = new AbortController();
  try {
    const early = exited.then((how) => {
      // Give the output streams a moment to deliver the final lines (usually the actual error).
      return sleep(100).then(() => {
        const text = tail.slice(-12).join('\n');
        const msg = `Temporal dev server ${how} before it was ready (${cli} ${args.join(' ')}).\nLast output:\n${text || '(none)'}`;
        throw /address already in use|bind:/i.test(text) ? new PortInUseError(msg) : new Error(msg);
      });
    });
    early.catch(() => {}); // handled via the race below; avoid an unhandled rejection after success
    await Promise.race([early, waitReady(address, opts.namespace, opts.readyTimeoutMs ?? 30_000, giveUp.signal)]);
    await Promise.race([early, ensureSearchAttributes(address, opts.namespace, opts.searchAttributes)]);
  } catch (err) {
    giveUp.abort(); // stop polling a server that is gone
    await stop();
    if (!(err instanceof Error) || err instanceof PortInUseError || /before it was ready/.test(err.message)) throw err;
    throw new Error(`${err.message}\nLast server output:\n${tail.slice(-12).join('\n') || '(none)'}`);
  }
  opts.log?.(
    `[temporal-dev] server ready at ${address} in ${Date.now() - started} ms (namespace ${opts.namespace}${uiUrl ? `, UI ${uiUrl}` : ''})`,
  );
  return { address, uiUrl, namespace: opts.namespace, pid: child.pid!, stop };
}

/** Ready = the frontend answers DescribeNamespace for our namespace (namespaces are created after the port opens). */
async function waitReady(address: string, namespace: string, timeoutMs: number, signal: AbortSignal): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError = 'no attempt made';
  while (Date.now() < deadline && !signal.aborted) {
    // A fresh connection per attempt: a gRPC channel that saw "connection refused" backs off for seconds.
    // lazy + ensureConnected (not connect()) so a failed attempt still leaves us a handle to close.
    const connection = Connection.lazy({ address, connectTimeout: 2_000 });
    try {
      await connection.ensureConnected();
      await connection.withDeadline(Date.now() + 3_000, () =>
        connection.workflowService.describeNamespace({ namespace }),
      );
      return;
    } catch (err) {
      lastError = err instanceof Error ? err.message : String(err);
    } finally {
      await connection.close().catch(() => {});
    }
    await sleep(250);
  }
  throw new Error(`Temporal dev server at ${address} was not ready within ${timeoutMs} ms: ${lastError}`);
}

/**
 * Makes sure each search attribute exists in `namespace` with the given type; adds the missing ones.
 * Idempotent; fails if an attribute exists with another type. Returns the names it added.
 */
export async function ensureSearchAttributes(
  address: string,
  namespace: string,
  attrs: Record<string, string>,
  connectionOptions: Omit<ConnectionOptions, 'address'> = {},
): Promise<string[]> {
  const wanted = Object.entries(attrs).map(([name, type]) => [name, indexedValueType(type, name)] as const);
  if (wanted.length === 0) return [];
  const connection = await Connection.connect({ ...connectionOptions, address });
  try {
    const list = async () =>
      (await connection.operatorService.listSearchAttributes({ namespace })).customAttributes ?? {};
    const check = (existing: Record<string, unknown>) => {
      const missing: string[] = [];
      for (const [name, type] of wanted) {
        const have = existing[name];
        if (have === undefined || have === null) missing.push(name);
        else if (Number(have) !== type) {
          throw new Error(
            `Search attribute ${name} exists in namespace ${namespace} as ${TYPE_NAMES[Number(have)] ?? have}, ` +
              `but Switchyard needs ${TYPE_NAMES[type]}. Remove it (temporal operator search-attribute remove) or use another namespace.`,
          );
        }
      }
      return missing;
    };
    const missing = check(await list());
    if (missing.length === 0) return [];
    const searchAttributes = Object.fromEntries(wanted.filter(([n]) => missing.includes(n)));
    let addError: unknown;
    try {
      await connection.operatorService.addSearchAttributes({ namespace, searchAttributes });
    } catch (err) {
      addError = err; // e.g. ALREADY_EXISTS from a concurrent caller; the re-check below decides
    }
    // Elasticsearch-backed servers register asynchronously: poll briefly.
    for (let i = 0; ; i++) {
      const still = check(await list());
      if (still.length === 0) return missing;
      if (i >= 40) {
        const why = addError instanceof Error ? `: ${addError.message}` : '';
        throw new Error(
          `Could not register search attributes ${still.join(', ')} in namespace ${namespace} at ${address}${why}. ` +
            'Where the operator API is not open to clients (Temporal Cloud), add them with ' +
            '`tcld namespace search-attributes add` or in the Cloud UI.',
        );
      }
      await sleep(250);
    }
  } finally {
    await connection.close();
  }
}

function indexedValueType(type: string, name: string): number {
  const v =
    INDEXED_VALUE_TYPES[
      type
        .toLowerCase()
        .replace(/^indexed_value_type_/, '')
        .replace(/_/g, '')
    ];
  if (!v)
    throw new Error(`Search attribute ${name}: unknown type "${type}" (use one of ${TYPE_NAMES.slice(1).join(', ')})`);
  return v;
}

function validateName(value: string, what: string, re: RegExp): void {
  if (!re.test(value)) throw new Error(`Invalid ${what} "${value}" (must match ${re})`);
}

/** Free ports by binding port 0; all held open together so they are distinct. */
async function freePorts(host: string, n: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<net.Server>((resolve, reject) => {
          const s = net.createServer();
          s.once('error', reject);
          s.listen(0, host, () => resolve(s));
        }),
    ),
  );
  const ports = servers.map((s) => (s.address() as net.AddressInfo).port);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}

// --- The child must not outlive this process -------------------------------------------------
// 'exit' covers normal exits and process.exit(). A fatal signal skips 'exit', so while servers run we
// also listen for SIGINT/SIGTERM/SIGHUP; if nobody else handles the signal we clean up and re-raise it
// (keeping Node's default "die" behaviour). If the app has its own handler, it decides, and 'exit' covers us.
// Nothing can run on SIGKILL of the parent; Ctrl-C in a terminal reaches the child anyway (same process group).
const live = new Set<ChildProcess>();
const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
const killAll = () => {
  for (const child of live) child.kill('SIGTERM'); // SIGTERM lets SQLite-backed servers shut down cleanly
};
const onSignal = (signal: NodeJS.Signals) => {
  if (process.listenerCount(signal) > 1) return;
  killAll();
  uninstall();
  process.kill(process.pid, signal);
};
function install(): void {
  process.on('exit', killAll);
  if (process.platform !== 'win32') for (const s of SIGNALS) process.on(s, onSignal);
}
function uninstall(): void {
  process.removeListener('exit', killAll);
  for (const s of SIGNALS) process.removeListener(s, onSignal);
}
function track(child: ChildProcess): void {
  if (live.size === 0) install();
  live.add(child);
}
function untrack(child: ChildProcess): void {
  if (live.delete(child) && live.size === 0) uninstall();
}
