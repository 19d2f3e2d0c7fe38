// The real Koa app on a free loopback port, plus small helpers to make accounts and keys.
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { createApp } from '../../api/app.js';
import { createAccount } from '../../activities/accounts/accounts.js';
import { createKey, type KeyRestrictions } from '../../activities/accounts/keys.js';
import { credit } from '../../activities/ledger/ledger.js';
import { parseAmount } from '../../activities/core/money.js';

export async function startApi(): Promise<{ base: string; close(): Promise<void> }> {
  const server: Server = createApp().listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  const { port } = server.address() as AddressInfo;
  return { base: `http://127.0.0.1:${port}`, close: () => new Promise((r) => server.close(() => r())) };
}

let n = 0;
export async function newAccount(usd = '10', restrictions: KeyRestrictions = {}) {
  const account = await createAccount(`test-${process.pid}-${++n}`);
  if (usd !== '0') {
    await credit({
      accountId: account.id,
      currency: 'USD',
      amount: parseAmount(usd, 'USD'),
      reason: 'test funds',
      idempotencyKey: `test-funds:${account.id}`,
    });
  }
  const { key, record } = await createKey(account.id, restrictions);
  return { accountId: account.id, key, keyId: record.id };
}
