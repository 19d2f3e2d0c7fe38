// One pg pool per process, shared by Prisma (through its pg adapter) and by the ledger's
// hand-written SQL, so a request never holds two connections and the pool size is one setting.
import pg from 'pg';
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '../prisma/generated/client.js';

export interface Database {
  pool: pg.Pool;
  prisma: PrismaClient;
}

let current: Database | undefined;

export function connectDatabase(url: string, maxConnections: number): Database {
  if (current) throw new Error('database already connected');
  const pool = new pg.Pool({ connectionString: url, max: maxConnections });
  // An idle client that loses its server (restart, network) must not crash the process.
  pool.on('error', (err) => console.error(`[db] idle connection error: ${err.message}`));
  const prisma = new PrismaClient({ adapter: new PrismaPg(pool) });
  current = { pool, prisma };
  return current;
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
  await d.pool.end().catch(() => undefined);
}

/** Postgres unique_violation: how an idempotency key tells us "this already happened". */
export function isUniqueViolation(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: string }).code === '23505';
}
