import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startApi, newAccount } from './support/api.js';
import { createKey, revokeKey, setKeyStatus } from '../activities/accounts/keys.js';
import { createAccount } from '../activities/accounts/accounts.js';
import { db } from '../activities/db.js';
import { config } from '../activities/config.js';
import { FailedAuthentications } from '../api/authFailures.js';
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

  describe('failed authentications per client address', () => {
    // a fresh app: its own count of failures (every test here comes from 127.0.0.1)
    let own: Awaited<ReturnType<typeof startApi>>;
    beforeEach(async () => (own = await startApi()));
    afterEach(() => own.close());
    const ownBalance = (key: string) =>
      fetch(`${own.base}/api/check-balance`, { headers: { authorization: `Bearer ${key}` } });

    /** Counts the key lookups the database is asked for while `run` runs. */
    async function keyLookups(run: () => Promise<void>): Promise<number> {
      const pool = db().pool;
      const query = pool.query;
      let n = 0;
      pool.query = ((...args: unknown[]) => {
        const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string })?.text;
        if (text?.includes('api_keys')) n++;
        return (query as (...a: unknown[]) => unknown).apply(pool, args);
      }) as typeof pool.query;
      try {
        await run();
      } finally {
        pool.query = query;
      }
      return n;
    }

    it('answers 429 with Retry-After past the limit, before looking the key up', async () => {
      const limit = config.authFailuresPerMinute;
      assert.equal(limit, 20, 'the documented default');
      const good = await newAccount('1');
      assert.equal((await ownBalance(good.key)).status, 200);
      const statuses: number[] = [];
      for (let i = 0; i < limit; i++) statuses.push((await ownBalance(`sk-nanogpt-${randomUUID()}`)).status);
      assert.deepEqual(statuses, Array(limit).fill(401));

      let res: Response | undefined;
      const lookups = await keyLookups(async () => {
        res = await ownBalance(`sk-nanogpt-${randomUUID()}`);
      });
      assert.equal(res!.status, 429);
      assert.equal(lookups, 0, 'a random key from a blocked address costs no database lookup');
      const retry = Number(res!.headers.get('retry-after'));
      assert.ok(retry >= 1 && retry <= 60, `Retry-After ${retry}`);
      const body = await res!.json();
      assert.equal(body.status, 429); // the route's (legacy) envelope
      assert.equal(body.code, 'rate_limit_exceeded');
      assert.match(body.message, /failed authentications/);
      // malformed keys and keys this process has not seen are refused too, in each route's envelope
      assert.equal((await ownBalance('not-a-key')).status, 429);
      const fresh = await newAccount('1');
      assert.equal((await ownBalance(fresh.key)).status, 429);
      const chat = await fetch(`${own.base}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': `sk-nanogpt-${randomUUID()}`, 'content-type': 'application/json' },
        body: '{}',
      });
      assert.equal(chat.status, 429);
      assert.equal((await chat.json()).error.type, 'rate_limit_error');
      // a key this process knows to be good still works: the limit stops guessing, not its users
      assert.equal((await ownBalance(good.key)).status, 200);
      // a missing key is not a guess and costs nothing: it stays a 401
      assert.equal((await fetch(`${own.base}/api/check-balance`)).status, 401);
    });

    it('follows the setting, and 0 turns the limit off', async () => {
      const limit = config.authFailuresPerMinute;
      try {
        config.authFailuresPerMinute = 3;
        for (let i = 0; i < 3; i++) assert.equal((await ownBalance(`sk-nanogpt-${randomUUID()}`)).status, 401);
        assert.equal((await ownBalance(`sk-nanogpt-${randomUUID()}`)).status, 429);
        config.authFailuresPerMinute = 0;
        for (let i = 0; i < 5; i++) assert.equal((await ownBalance(`sk-nanogpt-${randomUUID()}`)).status, 401);
      } finally {
        config.authFailuresPerMinute = limit;
      }
    });
  });

  describe('the failed-authentication window', () => {
    const MINUTE = 60_000;

    it('blocks an address after `limit` failures in a minute, until the oldest leaves the window', () => {
      const w = new FailedAuthentications();
      for (let t = 0; t < 3; t++) {
        assert.equal(w.retryAfterSeconds('10.0.0.1', 3, 1000 * t), 0);
        w.record('10.0.0.1', 3, 1000 * t);
      }
      assert.equal(w.retryAfterSeconds('10.0.0.1', 3, 2500), 58); // the first failure (t=0) leaves at 60 s
      assert.equal(w.retryAfterSeconds('10.0.0.2', 3, 2500), 0, 'another address has its own count');
      assert.equal(w.retryAfterSeconds('10.0.0.1', 3, MINUTE - 1), 1);
      assert.equal(w.retryAfterSeconds('10.0.0.1', 3, MINUTE), 0, 'one failure has left the window');
      w.record('10.0.0.1', 3, MINUTE);
      assert.equal(w.retryAfterSeconds('10.0.0.1', 3, MINUTE + 1), 1);
      assert.equal(w.retryAfterSeconds('10.0.0.1', 0, MINUTE + 1), 0, 'limit 0: off');
    });

    it('counts an IPv6 /64 as one address (one host holds a whole /64), an IPv4-mapped one as IPv4', () => {
      const w = new FailedAuthentications();
      w.record('2001:db8:1:2:aaaa::1', 2, 0);
      w.record('2001:db8:1:2:bbbb:cccc:dddd:eeee', 2, 0);
      assert.ok(w.retryAfterSeconds('2001:0db8:0001:0002::9', 2, 1) > 0);
      assert.equal(w.retryAfterSeconds('2001:db8:1:3::1', 2, 1), 0);
      w.record('::ffff:10.0.0.1', 2, 0);
      w.record('10.0.0.1', 2, 0);
      assert.ok(w.retryAfterSeconds('::ffff:10.0.0.1', 2, 1) > 0);
      assert.equal(w.retryAfterSeconds('10.0.0.2', 2, 1), 0);
    });

    it('forgets addresses whose failures have left the window', () => {
      const w = new FailedAuthentications(100);
      for (let i = 0; i < 100; i++) w.record(`10.0.${i >> 8}.${i & 255}`, 5, 0);
      w.record('10.1.0.0', 5, MINUTE + 1); // past the bound: the stale ones go
      assert.equal(w.size, 1);
    });
  });
});
