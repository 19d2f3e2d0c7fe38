import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startApi, newAccount } from './support/api.js';
import { createKey, revokeKey, setKeyStatus } from '../activities/accounts/keys.js';
import { createAccount } from '../activities/accounts/accounts.js';
import { db } from '../activities/db.js';
import { config } from '../activities/config.js';
import { parseAmount } from '../activities/core/money.js';

describe('authentication', () => {
  let api: Awaited<ReturnType<typeof startApi>>;
  before(async () => (api = await startApi()));
  after(() => api.close());

  const balance = (headers: Record<string, string>) =>
    fetch(`${api.base}/api/check-balance`, { method: 'POST', headers });

  it('accepts Bearer, x-api-key and X-API-Key', async () => {
    const { key } = await newAccount('3');
    for (const headers of <Record<string, string>[]>[
      { Authorization: `Bearer ${key}` },
      { 'x-api-key': key },
      { 'X-API-Key': key },
      { authorization: `bearer ${key}` },
    ]) {
      const res = await balance(headers);
      assert.equal(res.status, 200, JSON.stringify(headers));
      const body = await res.json();
      assert.equal(body.usd_balance, '3');
      assert.equal(body.nano_balance, '0');
    }
  });

  it('accepts legacy plain-UUID keys', async () => {
    const a = await createAccount('legacy');
    const legacy = randomUUID();
    await createKey(a.id, { key: legacy });
    assert.equal((await balance({ Authorization: `Bearer ${legacy}` })).status, 200);
  });

  it('stores only a hash and a display prefix', async () => {
    const { key, keyId } = await newAccount();
    const row = await db().prisma.apiKey.findUniqueOrThrow({ where: { id: keyId } });
    assert.ok(!JSON.stringify(row).includes(key.slice(-12)));
    assert.match(row.prefix, /^sk-nanogpt-[0-9a-f]{8}$/);
  });

  it("answers 401 for missing, malformed, unknown, revoked, inactive and expired keys, in the route's envelope", async () => {
    const missing = await balance({});
    assert.equal(missing.status, 401);
    const mb = await missing.json();
    assert.equal(mb.status, 401); // legacy envelope
    assert.equal(mb.code, 'missing_api_key');
    assert.ok(missing.headers.get('x-request-id'));

    const malformed = await balance({ Authorization: 'Bearer not-a-key' });
    assert.equal(malformed.status, 401);
    // the key format as this gateway configures it, not the spec's placeholder
    assert.match((await malformed.json()).message, /keys look like sk-nanogpt-<uuid>\.$/);
    const service = config.serviceName;
    config.serviceName = 'acme';
    try {
      const other = await balance({ Authorization: 'Bearer not-a-key' });
      assert.match((await other.json()).message, /keys look like sk-acme-<uuid>\.$/);
    } finally {
      config.serviceName = service;
    }
    assert.equal((await balance({ Authorization: `Bearer sk-nanogpt-${randomUUID()}` })).status, 401);
    assert.equal((await balance({ Authorization: `Bearer sk-otherservice-${randomUUID()}` })).status, 401);

    const revoked = await newAccount();
    assert.equal((await balance({ 'x-api-key': revoked.key })).status, 200);
    await revokeKey(revoked.keyId);
    const r = await balance({ 'x-api-key': revoked.key });
    assert.equal(r.status, 401);
    assert.match((await r.json()).message, /revoked/);

    const inactive = await newAccount();
    await setKeyStatus(inactive.keyId, 'inactive');
    assert.match((await (await balance({ 'x-api-key': inactive.key })).json()).message, /inactive/);

    const expired = await newAccount('1', { expiresAt: new Date(Date.now() - 1000) });
    assert.match((await (await balance({ 'x-api-key': expired.key })).json()).message, /expired/);
  });

  it('enforces the daily request cap with 429 daily_rpd_limit_exceeded and Retry-After', async () => {
    const { key } = await newAccount('1', { dailyRequestLimit: 3 });
    const statuses = [];
    for (let i = 0; i < 5; i++) statuses.push((await balance({ 'x-api-key': key })).status);
    assert.deepEqual(statuses, [200, 200, 200, 429, 429]);
    const res = await balance({ 'x-api-key': key });
    const body = await res.json();
    assert.equal(body.code, 'daily_rpd_limit_exceeded');
    const retry = Number(res.headers.get('retry-after'));
    assert.ok(retry > 0 && retry <= 86_400);
  });

  it('holds the request cap under concurrency', async () => {
    const { key } = await newAccount('1', { dailyRequestLimit: 10 });
    const statuses = await Promise.all(
      Array.from({ length: 40 }, async () => (await balance({ 'x-api-key': key })).status),
    );
    assert.equal(statuses.filter((s) => s === 200).length, 10);
    assert.equal(statuses.filter((s) => s === 429).length, 30);
  });

  it('enforces the daily USD cap with 429 daily_usd_limit_exceeded', async () => {
    const { key, keyId } = await newAccount('1', { dailyUsdLimit: parseAmount('0.05', 'USD') });
    assert.equal((await balance({ 'x-api-key': key })).status, 200);
    await db().pool.query(`UPDATE key_daily_usage SET usd_spent = $2 WHERE key_id = $1`, [
      keyId,
      parseAmount('0.05', 'USD').toString(),
    ]);
    const res = await balance({ 'x-api-key': key });
    assert.equal(res.status, 429);
    assert.equal((await res.json()).code, 'daily_usd_limit_exceeded');
  });
});
