// `npm run test:mutation [-- stryker options]`: StrykerJS (stryker.config.mjs) with its test
// databases looked after. Stryker kills a test process that overruns its time (SIGKILL: the
// process's own `after` hook never drops its database), so this run's databases are named
// switchyard_mutation_<this process's pid>_... and dropped when Stryker is done; those a killed run
// left behind are dropped at the next start.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

const ADMIN_URL = process.env.TEST_DATABASE_ADMIN_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const PREFIX = 'switchyard_mutation';

/** @param {number} pid */
function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return /** @type {NodeJS.ErrnoException} */ (err).code === 'EPERM';
  }
}

/**
 * Drop the databases of the runs `whose` selects, by the pid in their names.
 * @param {(pid: number) => boolean} whose
 */
async function dropMutationDatabases(whose) {
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  try {
    const { rows } = await admin.query(`SELECT datname FROM pg_database WHERE datname LIKE $1`, [`${PREFIX}\\_%`]);
    for (const { datname } of rows) {
      const pid = Number(datname.slice(PREFIX.length + 1).split('_')[0]);
      if (whose(pid)) await admin.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
    }
  } finally {
    await admin.end();
  }
}

await dropMutationDatabases((pid) => !alive(pid));
const stryker = fileURLToPath(new URL('../../node_modules/@stryker-mutator/core/bin/stryker.js', import.meta.url));
// Stryker and its test processes in a process group of their own, so that none outlives the run
// (Stryker stopped by a signal leaves its test processes running).
const child = spawn(process.execPath, [stryker, 'run', ...process.argv.slice(2)], {
  stdio: 'inherit',
  detached: true,
  // test/support/database.ts names the databases with this
  env: { ...process.env, SWITCHYARD_TEST_DATABASE_PREFIX: `${PREFIX}_${process.pid}` },
});
/** @param {NodeJS.Signals} signal */
function signalGroup(signal) {
  try {
    process.kill(-(/** @type {number} */ (child.pid)), signal);
  } catch {
    // the group is gone
  }
}
process.on('SIGINT', () => signalGroup('SIGINT'));
process.on('SIGTERM', () => signalGroup('SIGTERM'));
const [code, signal] = await once(child, 'exit');
signalGroup('SIGKILL');
await dropMutationDatabases((pid) => pid === process.pid);
process.exitCode = code ?? (signal ? 1 : 0);
