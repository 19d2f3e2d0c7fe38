// One pg pool per process, shared by Prisma (through its pg adapter) and by the ledger's
// hand-written SQL, so a request never holds two connections and the pool size is one setting.
import pg from 'pg';
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '../prisma/generated/client.js';

export interface Database {
  /** durable commits: Prisma, credits, debits, refunds, everything an operator or a payment does */
  pool: pg.Pool;
  /**
   * The request path's reservations and settlements, with asynchronous commit: a commit is
   * atomic and visible at once, and reaches disk within a fraction of a second (the WAL
   * writer), instead of waiting for its own fsync. Why: these two statements sit on every
   * request's critical path, and on one busy account they serialize on its balance row for as
   * long as each commit takes. What it risks: if the DATABASE SERVER crashes, the last fraction
   * of a second of reservations and charges may be lost as a whole (never half): those requests
   * were served free. Nothing is ever charged twice, and the books still balance. Set
   * SWITCHYARD_DURABLE_REQUEST_CHARGES=1 to make these commits wait for disk too.
   */
  requestPool: pg.Pool;
  prisma: PrismaClient;
}

let current: Database | undefined;

export function connectDatabase(url: string, maxConnections: number): Database {
  if (current) throw new Error('database already connected');
  const pool = newPool(url, maxConnections);
  // The embedded database serves one connection: everything shares it (and async commit buys nothing there).
  const asyncCommit = maxConnections > 1 && process.env.SWITCHYARD_DURABLE_REQUEST_CHARGES !== '1';
  const requestPool = asyncCommit ? newPool(url, maxConnections, '-c synchronous_commit=off') : pool;
  const prisma = new PrismaClient({ adapter: new PrismaPg(pool) });
  current = { pool, requestPool, prisma };
  return current;
}

function newPool(url: string, max: number, options?: string): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max, options });
  // An idle client that loses its server (restart, network) must not crash the process.
  pool.on('error', (err) => console.error(`[db] idle connection error: ${err.message}`));
  return pool;
}

export function db(): Database {
  if (!current) throw new Error('database not connected: call connectDatabase() first');
  return current;
}

export async function closeDatabase(): Promise<void> {
  const d = current;
  current = undefined;
  if (!d) return;
  await d.prisma.$disconnect();
  if (d.requestPool !== d.pool) await d.requestPool.end().catch(() => undefined);
  await d.pool.end().catch(() => undefined);
}

/** Postgres unique_violation: how an idempotency key tells us "this already happened". */
export function isUniqueViolation(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: string }).code === '23505';
}

/**
 * SQLSTATEs of a connection that died under a statement: the server shut it (admin_shutdown,
 * crash_shutdown, cannot_connect_now) or class 08 (connection exception). The statement did not
 * complete on that connection, and the pool has already dropped it.
 */
const LOST_CONNECTION = /^(57P0[123]|08...)$/;
const LOST_CONNECTION_MESSAGE = /^(Connection terminated|Client has encountered a connection error)/;

interface AdapterCause {
  kind?: string;
  code?: unknown;
}

/** The SQLSTATE (or socket error code) behind `err`, from pg directly or through Prisma's pg adapter. */
function causeOf(err: unknown): { code?: unknown; kind?: string; message?: unknown } {
  if (typeof err !== 'object' || err === null) return {};
  const e = err as { code?: unknown; message?: unknown; meta?: { driverAdapterError?: { cause?: AdapterCause } } };
  const cause = e.meta?.driverAdapterError?.cause;
  return cause ? { code: cause.code, kind: cause.kind, message: e.message } : e;
}

/** Did `err` come from a pooled connection that died (through pg directly, or through Prisma's adapter)? */
export function isLostConnection(err: unknown): boolean {
  const { code, kind, message } = causeOf(err);
  if (kind === 'ConnectionClosed') return true;
  if (typeof code === 'string' && (LOST_CONNECTION.test(code) || code === 'ECONNRESET' || code === 'EPIPE'))
    return true;
  return typeof message === 'string' && LOST_CONNECTION_MESSAGE.test(message);
}

/**
 * Is PostgreSQL refusing connections for now: too many clients (53300, for the server, a database
 * or a role) or still starting (57P03)? Nothing ran; the caller may retry shortly (503, not 500).
 */
export function isDatabaseBusy(err: unknown): boolean {
  const { code, kind } = causeOf(err);
  return kind === 'TooManyConnections' || code === '53300' || code === '57P03';
}

/**
 * Run `work` again, once, if a pooled connection died under it: a restarted or failed-over server,
 * or connections killed by an operator, should cost a caller nothing but a few milliseconds. Only
 * for work that may run twice: reads, and writes whose second run changes nothing more.
 */
export async function retryOnLostConnection<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (!isLostConnection(err)) throw err;
    return work();
  }
}
