// Start-up steps shared by the launcher, the API and worker entries and the ops CLI:
// open the database (embedded when DATABASE_URL is unset), migrate, load the catalog,
// make sure the local account exists.
import path from 'node:path';
import { config } from '../activities/config.js';
import { closeDatabase, connectDatabase } from '../activities/db.js';
import { applyMigrations } from '../prisma/applyMigrations.js';
import { startEmbeddedPostgres } from '../prisma/embedded-postgres.js';
import { readCatalogFile } from '../activities/catalog/file.js';
import { syncCatalog } from '../activities/catalog/sync.js';
import { loadCatalog } from '../activities/catalog/catalog.js';
import { createAccount, ensureBootstrapAccount, findAccount } from '../activities/accounts/accounts.js';
import { createKey } from '../activities/accounts/keys.js';
import { ensureBootstrapUser } from '../activities/accounts/users.js';
import { credit } from '../activities/ledger/ledger.js';
import { formatAmount, parseAmount } from '../activities/core/money.js';

export type Log = (message: string) => void;

export interface OpenDatabase {
  url: string;
  embedded: boolean;
  stop(): Promise<void>;
}

export async function openDatabase(opts: { migrate: boolean; log: Log }): Promise<OpenDatabase> {
  let url = config.databaseUrl;
  let max = config.databaseMaxConnections;
  let stopEmbedded: (() => Promise<void>) | undefined;
  if (!url) {
    const dataDir = path.join(config.dataDir, 'postgres');
    opts.log(`DATABASE_URL is not set: starting the embedded PostgreSQL (PGlite) in ${dataDir}`);
    const embedded = await startEmbeddedPostgres({ dataDir, port: 0, log: opts.log });
    url = embedded.url;
    max = embedded.maxConnections;
    stopEmbedded = embedded.stop;
  }
  try {
    if (opts.migrate) {
      const { applied } = await applyMigrations(url, { log: opts.log, maxConnections: max });
      if (applied.length) opts.log(`applied ${applied.length} migration(s): ${applied.join(', ')}`);
    }
    connectDatabase(url, max);
  } catch (err) {
    await stopEmbedded?.();
    throw err;
  }
  return {
    url,
    embedded: !!stopEmbedded,
    async stop() {
      await closeDatabase();
      await stopEmbedded?.();
    },
  };
}

/** Copy the catalog file into the database and load it into memory. */
export async function prepareCatalog(log: Log): Promise<void> {
  const file = await readCatalogFile(config.catalogFile);
  const r = await syncCatalog(file);
  const catalog = await loadCatalog();
  log(
    `catalog: ${r.models} models, ${r.routes} provider routes from ${path.relative(process.cwd(), config.catalogFile) || config.catalogFile}; usable now: ${
      catalog
        .usable()
        .map((m) => m.id)
        .join(', ') || 'none'
    }`,
  );
}

/** A fresh local install gets this much to spend on its own local account (operators override it). */
const LOCAL_STARTER_BALANCE_USD = '5';

/**
 * The local account (below), and with SWITCHYARD_BOOTSTRAP_EMAIL the user who signs in as it: the
 * operator's own login (password SWITCHYARD_BOOTSTRAP_PASSWORD; without one, by e-mail code).
 */
export async function ensureBootstrap(
  log: Log,
): Promise<{ key?: string; accountId: string; note: string; login?: string }> {
  const local = await ensureLocalAccount(log);
  if (!config.bootstrapEmail) {
    if (config.bootstrapPassword)
      log('SWITCHYARD_BOOTSTRAP_PASSWORD applies with SWITCHYARD_BOOTSTRAP_EMAIL only; ignored');
    return local;
  }
  const { user, created } = await ensureBootstrapUser(local.accountId, config.bootstrapEmail, config.bootstrapPassword);
  if (created) log(`the local account now signs in as ${user.email}`);
  const how = config.bootstrapPassword ? 'with SWITCHYARD_BOOTSTRAP_PASSWORD' : 'by e-mail code (no password set)';
  return { ...local, login: `${user.email}, ${how}` };
}

/**
 * The local account. With SWITCHYARD_BOOTSTRAP_KEY: that key, topped up to the bootstrap
 * balance. Without: on the very first start an account "local" and a new key, printed once
 * (only its hash is kept), with the bootstrap balance or a small starter balance.
 */
async function ensureLocalAccount(log: Log): Promise<{ key?: string; accountId: string; note: string }> {
  const minBalance = parseAmount(config.bootstrapBalanceUsd ?? '0', 'USD');
  if (config.bootstrapKey) {
    const r = await ensureBootstrapAccount(config.bootstrapKey, minBalance);
    if (r.credited > 0n) log(`credited ${formatAmount(r.credited, 'USD')} USD to the bootstrap account`);
    return { key: config.bootstrapKey, accountId: r.accountId, note: 'the key from SWITCHYARD_BOOTSTRAP_KEY' };
  }
  const existing = await findAccount('local');
  if (existing) {
    if (minBalance > 0n) log('SWITCHYARD_BOOTSTRAP_BALANCE_USD applies with SWITCHYARD_BOOTSTRAP_KEY only; ignored');
    return { accountId: existing.id, note: 'printed on first start; `npm run ops -- keys create local` makes another' };
  }
  const account = await createAccount('local');
  const { key } = await createKey(account.id, { name: 'local' });
  const starter = minBalance > 0n ? minBalance : parseAmount(LOCAL_STARTER_BALANCE_USD, 'USD');
  await credit({
    accountId: account.id,
    currency: 'USD',
    amount: starter,
    reason: 'starter balance for the local account',
    idempotencyKey: `starter:${account.id}`,
  });
  return {
    key,
    accountId: account.id,
    note: `new; shown only this once (balance ${formatAmount(starter, 'USD')} USD)`,
  };
}
