// Child-process side of prisma/embedded-postgres.ts. Plain JavaScript on purpose: it is forked with
// a bare `node` (no tsx loader), so it starts fast and does not depend on how the parent was run.
// PGlite does its work synchronously inside WebAssembly; here that only ever blocks this process.
import { open, readFile, unlink, writeFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';

const config = JSON.parse(process.argv[2] ?? '{}');
const lockPath = join(config.dataDir, 'switchyard-embedded.lock');
const MARK = 'embedded-postgres-child';

const send = (msg) => {
  if (process.connected) process.send(msg);
};
const log = (message) => send({ type: 'log', message });

let db = null;
let server = null;
let lockHeld = false;
let stopping = null;

function isOurKind(pid) {
  try {
    process.kill(pid, 0);
  } catch (e) {
    if (e.code === 'ESRCH') return false;
  }
  // A recycled pid belonging to some other program must not keep the data dir locked forever.
  return readFile(`/proc/${pid}/cmdline`, 'utf8').then(
    (c) => c.includes(MARK),
    () => true,
  );
}

async function acquireLock() {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fh = await open(lockPath, 'wx');
      await fh.writeFile(JSON.stringify({ pid: process.pid, startedAt: new Date().toISOString() }));
      await fh.close();
      lockHeld = true;
      return;
    } catch (e) {
      if (e.code !== 'EEXIST') throw e;
    }
    let holder = null;
    try {
      holder = JSON.parse(await readFile(lockPath, 'utf8'));
    } catch {
      /* half-written or gone */
    }
    if (holder?.pid && holder.pid !== process.pid && (await isOurKind(holder.pid))) {
      const where = holder.port ? ` serving 127.0.0.1:${holder.port}` : '';
      const err = new Error(
        `data dir ${config.dataDir} is locked by another running embedded Postgres (pid ${holder.pid}${where}); ` +
          `stop it first, or delete ${lockPath} if you are sure it is gone`,
      );
      err.code = 'EMBEDDED_PG_LOCKED';
      throw err;
    }
    if (!holder)
      await new Promise((r) => setTimeout(r, 100)); // another starter may be mid-write
    else await unlink(lockPath).catch(() => {});
  }
  const err = new Error(`could not lock data dir ${config.dataDir} (${lockPath})`);
  err.code = 'EMBEDDED_PG_LOCKED';
  throw err;
}

async function releaseLock() {
  if (!lockHeld) return;
  lockHeld = false;
  try {
    const holder = JSON.parse(await readFile(lockPath, 'utf8'));
    if (holder.pid === process.pid) await unlink(lockPath);
  } catch {
    /* already gone */
  }
}

function shutdown(reason) {
  stopping ??= (async () => {
    // A stop the parent asked for is the parent's to report; anything else is news.
    if (reason !== 'stop requested') log(`stopping (${reason})`);
    try {
      if (server) await server.stop();
      // close() runs Postgres' shutdown checkpoint: everything is on disk afterwards.
      if (db) await db.close();
    } catch (e) {
      log(`error while stopping: ${e?.stack ?? e}`);
    }
    await releaseLock();
    send({ type: 'stopped' });
    process.exit(0);
  })();
  return stopping;
}

process.on('message', (msg) => {
  if (msg?.type === 'stop') void shutdown('stop requested');
});
// The IPC channel closes when the parent exits or is killed, whatever the signal.
process.on('disconnect', () => void shutdown('parent went away'));
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));

try {
  await mkdir(config.dataDir, { recursive: true });
  await acquireLock();
  const { PGlite } = await import('@electric-sql/pglite');
  const { PGLiteSocketServer } = await import('@electric-sql/pglite-socket');
  db = await PGlite.create(config.dataDir);
  // One connection: PGlite is a single Postgres session, so a second client would share (and
  // break) the first one's transactions.
  server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: config.port ?? 0, maxConnections: 1 });
  await server.start();
  const port = Number(server.getServerConn().split(':').pop());
  await writeFile(lockPath, JSON.stringify({ pid: process.pid, port, startedAt: new Date().toISOString() }));
  if (stopping) await stopping;
  send({ type: 'ready', port });
} catch (e) {
  send({ type: 'error', message: e?.message ?? String(e), code: e?.code });
  try {
    if (db) await db.close();
  } catch {
    /* best effort */
  }
  await releaseLock();
  process.exit(1);
}
