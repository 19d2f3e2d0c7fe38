// Accounts and their balance rows. An account always has one balance row per currency, created
// with it, so the ledger's conditional updates never need an upsert.
import { randomUUID } from 'node:crypto';
import { db } from '../db.js';
import { CURRENCIES } from '../core/money.js';
import { balances, credit } from '../ledger/ledger.js';
import { createKey, hashKey, isWellFormedKey } from './keys.js';
import { config } from '../config.js';

export async function createAccount(name: string): Promise<{ id: string; name: string }> {
  const id = randomUUID();
  await db().prisma.$transaction([
    db().prisma.account.create({ data: { id, name } }),
    db().prisma.balance.createMany({ data: CURRENCIES.map((currency) => ({ accountId: id, currency })) }),
  ]);
  return { id, name };
}

/** By id, or by exact name when the name is unique. */
export async function findAccount(idOrName: string) {
  const isUuid = /^[0-9a-f-]{36}$/i.test(idOrName);
  if (isUuid) {
    const a = await db().prisma.account.findUnique({ where: { id: idOrName } });
    if (a) return a;
  }
  const named = await db().prisma.account.findMany({ where: { name: idOrName }, take: 2 });
  if (named.length > 1) throw new Error(`more than one account is named "${idOrName}": use its id`);
  return named[0] ?? null;
}

/**
 * Make sure the local account behind `key` exists and holds at least `minBalanceUsd` (nano-USD),
 * topping it up with a ledger credit when it holds less. Safe to run on every start-up, and from
 * two processes at once: the top-up's idempotency key names the balance it tops up from.
 */
export async function ensureBootstrapAccount(
  key: string,
  minBalanceUsd: bigint,
): Promise<{ accountId: string; created: boolean; credited: bigint }> {
  if (!isWellFormedKey(key)) {
    throw new Error(`SWITCHYARD_BOOTSTRAP_KEY must be a full key, sk-${config.serviceName}-<uuid>`);
  }
  let created = false;
  let existing = await db().prisma.apiKey.findUnique({ where: { hash: hashKey(key) } });
  if (!existing) {
    const account = await createAccount('local');
    try {
      existing = (await createKey(account.id, { key, name: 'bootstrap' })).record;
      created = true;
    } catch (err) {
      // Another process created the key first: drop our empty account, use theirs.
      await db().prisma.account.delete({ where: { id: account.id } });
      existing = await db().prisma.apiKey.findUnique({ where: { hash: hashKey(key) } });
      if (!existing) throw err;
    }
  }
  const bal = await balances(existing.accountId);
  const have = bal?.USD.amount ?? 0n;
  let credited = 0n;
  if (have < minBalanceUsd) {
    credited = minBalanceUsd - have;
    await credit({
      accountId: existing.accountId,
      currency: 'USD',
      amount: credited,
      reason: 'bootstrap balance (SWITCHYARD_BOOTSTRAP_BALANCE_USD)',
      idempotencyKey: `bootstrap:${existing.accountId}:from:${have}:to:${minBalanceUsd}`,
    });
  }
  return { accountId: existing.accountId, created, credited };
}
