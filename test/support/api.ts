// The real Koa app on a free loopback port, the tests' one way to call it (`apiPost`, `api.post`),
// and small helpers to make accounts and keys.
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { createApp } from '../../api/app.js';
import { createAccount } from '../../activities/accounts/accounts.js';
import { createKey, type KeyRestrictions } from '../../activities/accounts/keys.js';
import { credit } from '../../activities/ledger/ledger.js';
import { parseAmount } from '../../activities/core/money.js';

export interface ApiCall {
  /** sent as `Authorization: Bearer <key>`; null or absent: no credentials */
  key?: string | null;
  /** more headers, over the defaults (an `authorization` or `content-type` here wins) */
  headers?: Record<string, string>;
  /** default application/json */
  contentType?: string;
  signal?: AbortSignal;
}

/** POST `body` to `base` + `path`: a string is sent as it is (already serialized, or deliberately broken), anything else as JSON. */
export function apiPost(base: string, path: string, body: unknown, call: ApiCall = {}): Promise<Response> {
  return fetch(`${base}${path}`, {
    method: 'POST',
    headers: {
      'content-type': call.contentType ?? 'application/json',
      ...(call.key == null ? {} : { authorization: `Bearer ${call.key}` }),
      ...call.headers,
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    signal: call.signal,
  });
}

export interface Api {
  base: string;
  post(path: string, body: unknown, call?: ApiCall): Promise<Response>;
  close(): Promise<void>;
}

export async function startApi(): Promise<Api> {
  const server: Server = createApp().listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  const { port } = server.address() as AddressInfo;
  const base = `http://127.0.0.1:${port}`;
  return {
    base,
    post: (path, body, call) => apiPost(base, path, body, call),
    close: () => new Promise((r) => server.close(() => r())),
  };
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
