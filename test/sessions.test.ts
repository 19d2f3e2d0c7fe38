import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Browser, startTrustingApi } from './support/browser.js';
import { startApi } from './support/api.js';
import { config } from '../activities/config.js';
import { db } from '../activities/db.js';
import { createUser } from '../activities/accounts/users.js';
import { revokeUserSessions } from '../activities/accounts/sessions.js';
import { createKey } from '../activities/accounts/keys.js';
import { credit } from '../activities/ledger/ledger.js';
import { parseAmount } from '../activities/core/money.js';
import { ensureBootstrap } from '../bin/boot.js';
import { keepConfig } from './support/keepConfig.js';
import { holdTable, holdUpdates } from './support/dbFaults.js';
import { until } from './support/wait.js';

const PASSWORD = 'correct horse battery';
let n = 0;
const email = () => `person-${process.pid}-${++n}-${randomUUID().slice(0, 6)}@example.test`;

/** Every answer of these routes is the teams envelope. */
function assertTeamsError(r: { status: number; body: any }, status: number, code: string) {
  assert.equal(r.status, status, JSON.stringify(r.body));
  assert.equal(r.body.code, code, JSON.stringify(r.body));
  assert.equal(r.body.status, status);
  assert.equal(typeof r.body.message, 'string');
  assert.ok('details' in r.body);
}

describe('users and sessions', function () {
  this.timeout(60_000);
  let api: Awaited<ReturnType<typeof startTrustingApi>>;
  const saved = keepConfig();
  before(async () => (api = await startTrustingApi()));
  after(async () => {
    await api.close();
  });
  afterEach(() => {
    config.signupPolicy = saved.signupPolicy;
    config.authAttemptsPerEmail = saved.authAttemptsPerEmail;
    config.authAttemptsPerIp = saved.authAttemptsPerIp;
  });
  const browser = () => new Browser(api.base);

  async function signedUp(name = 'Ada') {
    const b = browser();
    const address = email();
    const r = await b.post('/api/auth/signup', { email: address, password: PASSWORD, name });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    return { b, address, user: r.body.user };
  }

  it('signs up, signs in with an HttpOnly SameSite=Lax cookie, and shows the session', async () => {
    const b = browser();
    const address = email();
    const r = await b.post('/api/auth/signup', {
      email: address.toUpperCase(),
      password: PASSWORD,
      name: 'Ada',
    });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    const u = r.body.user;
    assert.equal(u.email, address); // lower-cased
    assert.equal(u.displayName, 'Ada');
    assert.equal(typeof u.sessionId, 'number');
    assert.match(u.sessionUUID, /^[0-9a-f-]{36}$/);
    // the cookie: HttpOnly, SameSite=Lax, Path=/, a lifetime, and not Secure over plain HTTP
    assert.match(b.setCookie!, /; HttpOnly/);
    assert.match(b.setCookie!, /; SameSite=Lax/);
    assert.match(b.setCookie!, /; Path=\//);
    assert.match(b.setCookie!, /; Max-Age=\d+/);
    assert.doesNotMatch(b.setCookie!, /Secure/);
    const s = await b.get('/api/auth/session');
    assert.equal(s.status, 200);
    assert.deepEqual(s.body.user, u);
    assert.equal(s.body.session.method, 'signup');
    // the password is kept as argon2id, the token only as a hash
    const row = (await db().pool.query('SELECT password_hash FROM users WHERE id = $1', [u.sessionId])).rows[0];
    assert.match(row.password_hash, /^\$argon2id\$/);
    assert.ok(!row.password_hash.includes(PASSWORD));
    const sess = (await db().pool.query('SELECT token_hash FROM sessions WHERE user_id = $1', [u.sessionId])).rows;
    assert.equal(sess.length, 1);
    assert.notEqual(sess[0].token_hash, b.cookie);
    assert.match(sess[0].token_hash, /^[0-9a-f]{64}$/);
    // the personal account has balances and reads them with the session
    const bal = await b.get('/api/check-balance');
    assert.equal(bal.status, 200);
    assert.equal(bal.body.usd_balance, '0');
  });

  it('marks the cookie Secure behind HTTPS (a trusted proxy saying so)', async () => {
    const b = browser();
    b.origin = `https://${new URL(api.base).host}`;
    const r = await b.post(
      '/api/auth/signup',
      { email: email(), password: PASSWORD, name: 'Sec' },
      { 'x-forwarded-proto': 'https' },
    );
    assert.equal(r.status, 201);
    assert.match(b.setCookie!, /; Secure/);
    // the same header from a proxy that is not trusted (SWITCHYARD_TRUST_PROXY unset) means nothing
    const plain = await startApi();
    try {
      const res = await fetch(`${plain.base}/api/auth/signup`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-forwarded-proto': 'https' },
        body: JSON.stringify({ email: email(), password: PASSWORD, name: 'Plain' }),
      });
      assert.equal(res.status, 201);
      assert.doesNotMatch(res.headers.getSetCookie()[0]!, /Secure/);
    } finally {
      await plain.close();
    }
  });

  it('refuses a taken address (409), bad bodies (422 naming the field), all in the teams envelope', async () => {
    const { address } = await signedUp();
    const b = browser();
    assertTeamsError(
      await b.post('/api/auth/signup', { email: address, password: PASSWORD, name: 'X' }),
      409,
      'CONFLICT',
    );
    const short = await b.post('/api/auth/signup', { email: email(), password: 'short', name: 'X' });
    assertTeamsError(short, 422, 'INVALID_INPUT');
    assert.equal(short.body.details.param, 'password');
    const notEmail = await b.post('/api/auth/signup', { email: 'nope', password: PASSWORD, name: 'X' });
    assertTeamsError(notEmail, 422, 'INVALID_INPUT');
    assert.equal(notEmail.body.details.param, 'email');
    const extra = await b.post('/api/auth/login', { email: email(), pasword: PASSWORD });
    assertTeamsError(extra, 422, 'INVALID_INPUT');
    // malformed JSON is one of the teams API's 400 cases
    const broken = await fetch(`${api.base}/api/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"email":',
    });
    assertTeamsError({ status: broken.status, body: await broken.json() }, 400, 'INVALID_INPUT');
    assert.equal(b.cookie, undefined);
  });

  it('logs in with the password; a wrong password and an unknown address get the same 401', async () => {
    const { address, user } = await signedUp();
    const b = browser();
    const wrong = await b.post('/api/auth/login', { email: address, password: 'not the password' });
    assertTeamsError(wrong, 401, 'UNAUTHORIZED');
    const unknown = await b.post('/api/auth/login', { email: email(), password: PASSWORD });
    assertTeamsError(unknown, 401, 'UNAUTHORIZED');
    assert.equal(unknown.body.message, wrong.body.message);
    assert.equal(b.cookie, undefined);
    const ok = await b.post('/api/auth/login', { email: address.toUpperCase(), password: PASSWORD });
    assert.equal(ok.status, 200);
    assert.equal(ok.body.user.sessionId, user.sessionId);
    assert.equal((await b.get('/api/auth/session')).body.session.method, 'password');
  });

  it('takes as long for an unknown address as for a wrong password (argon2id either way)', async () => {
    config.authAttemptsPerEmail = 1000;
    const { address } = await signedUp();
    const time = async (who: string) => {
      const t = process.hrtime.bigint();
      const r = await browser().post('/api/auth/login', { email: who, password: 'wrong password!' });
      assert.equal(r.status, 401);
      return Number(process.hrtime.bigint() - t) / 1e6;
    };
    const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    await time(email()); // the decoy hash is made on first use
    const known: number[] = [];
    const unknown: number[] = [];
    for (let i = 0; i < 7; i++) {
      known.push(await time(address));
      unknown.push(await time(email()));
    }
    const [k, u] = [median(known), median(unknown)];
    assert.ok(u > k * 0.5 && u < k * 2, `unknown ${u.toFixed(1)} ms vs wrong password ${k.toFixed(1)} ms`);
  });

  it('signs out: the session row is revoked and the old cookie no longer works anywhere', async () => {
    const { b } = await signedUp();
    const token = b.cookie!;
    const out = await b.post('/api/auth/logout');
    assert.deepEqual(out.body, { ok: true });
    assert.match(b.setCookie!, /Max-Age=0/);
    assert.equal(b.cookie, undefined);
    b.cookie = token; // a copy of the cookie kept by someone
    assertTeamsError(await b.get('/api/auth/session'), 401, 'UNAUTHORIZED');
    const bal = await b.get('/api/check-balance');
    assert.equal(bal.status, 401);
    assert.equal(bal.body.code, 'invalid_session'); // the legacy envelope of that route
    // signing out again, or with no session, is fine
    assert.equal((await browser().post('/api/auth/logout')).status, 200);
  });

  it('expires a session left unused for its lifetime; using it pushes the expiry back', async () => {
    const { b, user } = await signedUp();
    const row = () =>
      db()
        .pool.query('SELECT id, expires_at FROM sessions WHERE user_id = $1', [user.sessionId])
        .then((r) => r.rows[0]);
    // used two minutes ago, ten seconds left: this use gives it the whole lifetime again
    await db().pool.query(
      `UPDATE sessions SET last_seen_at = now() - interval '2 minutes', expires_at = now() + interval '10 seconds'
       WHERE user_id = $1`,
      [user.sessionId],
    );
    assert.equal((await b.get('/api/auth/session')).status, 200);
    const pushed = (await row()).expires_at.getTime() - Date.now();
    assert.ok(pushed > (config.sessionTtlSeconds - 60) * 1000, `expiry only ${pushed} ms away`);
    // left unused past its expiry: gone
    await db().pool.query(`UPDATE sessions SET expires_at = now() - interval '1 second' WHERE user_id = $1`, [
      user.sessionId,
    ]);
    const r = await b.get('/api/auth/session');
    assertTeamsError(r, 401, 'UNAUTHORIZED');
    assert.equal(r.body.details.reason, 'invalid_session');
  });

  it('refuses the session of a suspended account', async () => {
    const { b, user } = await signedUp();
    await db().pool.query(`UPDATE accounts SET status = 'suspended' WHERE id = $1`, [user.accountId]);
    const r = await b.get('/api/check-balance');
    assert.equal(r.status, 401);
    assert.match(r.body.message, /inactive/);
  });

  it('revokes every session of a user at once (operator)', async () => {
    const { b, address } = await signedUp();
    const other = browser();
    assert.equal((await other.post('/api/auth/login', { email: address, password: PASSWORD })).status, 200);
    const user = (await b.get('/api/auth/session')).body.user;
    assert.equal(await revokeUserSessions(user.sessionId), 2);
    assert.equal((await b.get('/api/auth/session')).status, 401);
    assert.equal((await other.get('/api/auth/session')).status, 401);
  });

  it('answers 401 for no cookie or a forged one, and an API key does not open session-only routes', async () => {
    const b = browser();
    assertTeamsError(await b.get('/api/auth/session'), 401, 'UNAUTHORIZED');
    b.cookie = 'x'.repeat(43);
    assertTeamsError(await b.get('/api/auth/session'), 401, 'UNAUTHORIZED');
    const { b: owner, user } = await signedUp();
    const { key } = await createKey(user.accountId);
    const withKey = await browser().get('/api/keys', { authorization: `Bearer ${key}` });
    assertTeamsError(withKey, 401, 'UNAUTHORIZED');
    assert.equal((await owner.get('/api/keys')).status, 200);
  });

  describe('CSRF: state-changing requests with the session cookie must come from the gateway itself', () => {
    it('refuses another Origin, a foreign Referer, and neither; accepts its own Origin or Referer', async () => {
      const { b } = await signedUp();
      b.origin = 'https://evil.example';
      const evil = await b.post('/api/keys', { name: 'stolen' });
      assertTeamsError(evil, 403, 'FORBIDDEN');
      assert.equal(evil.body.details.reason, 'csrf_origin_mismatch');
      assert.equal((await b.post('/api/check-balance')).status, 403);
      b.origin = null;
      assert.equal((await b.post('/api/keys', { name: 'stolen' })).status, 403);
      assert.equal((await b.post('/api/keys', { name: 'x' }, { referer: 'https://evil.example/page' })).status, 403);
      assert.equal((await b.post('/api/keys', {}, { origin: 'null' })).status, 403);
      // nothing was made by the refused requests
      assert.deepEqual((await b.get('/api/keys')).body.keys, []);
      // reading needs no origin; the gateway's own origin (or referer) may write
      assert.equal((await b.get('/api/check-balance')).status, 200);
      assert.equal((await b.post('/api/keys', { name: 'mine' }, { referer: `${api.base}/settings` })).status, 201);
      b.origin = api.base;
      assert.equal((await b.post('/api/check-balance')).status, 200);
      assert.equal((await b.get('/api/keys')).body.keys.length, 1);
    });

    it('refuses sign-in from another site, but lets clients without a browser (no Origin) sign in', async () => {
      const { address } = await signedUp();
      const b = browser();
      b.origin = 'https://evil.example';
      assertTeamsError(await b.post('/api/auth/login', { email: address, password: PASSWORD }), 403, 'FORBIDDEN');
      assert.equal(b.cookie, undefined);
      b.origin = null;
      assert.equal((await b.post('/api/auth/login', { email: address, password: PASSWORD })).status, 200);
    });

    it('does not check requests made with an API key', async () => {
      const { user } = await signedUp();
      const { key } = await createKey(user.accountId);
      const r = await fetch(`${api.base}/api/check-balance`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, origin: 'https://elsewhere.example' },
      });
      assert.equal(r.status, 200);
    });
  });

  describe('API keys of a signed-in user', () => {
    it('creates a key shown once with restrictions, lists it without the key, and revokes it', async () => {
      const { b, user } = await signedUp();
      const made = await b.post('/api/keys', {
        name: 'ci',
        daily_request_limit: 100,
        daily_usd_limit: '2.5',
        provider_deny: ['groq'],
        zdr_only: true,
        billing_mode: 'paygo',
      });
      assert.equal(made.status, 201, JSON.stringify(made.body));
      assert.match(made.body.key, /^sk-nanogpt-[0-9a-f-]{36}$/);
      assert.equal(made.body.daily_usd_limit, '2.5');
      assert.equal(made.body.billing_mode, 'paygo');
      const list = await b.get('/api/keys');
      assert.equal(list.body.keys.length, 1);
      assert.ok(!JSON.stringify(list.body).includes(made.body.key.slice(20)));
      assert.equal(list.body.keys[0].prefix, made.body.key.slice(0, 19));
      assert.deepEqual(list.body.keys[0].provider_deny, ['groq']);
      // the key works, on the user's own account
      const bal = await fetch(`${api.base}/api/check-balance`, { headers: { 'x-api-key': made.body.key } });
      assert.equal(bal.status, 200);
      const row = await db().prisma.apiKey.findUniqueOrThrow({ where: { id: made.body.id } });
      assert.equal(row.accountId, user.accountId);
      assert.equal(row.dailyRequestLimit, 100);
      assert.equal(row.zdrOnly, true);
      // revoke by prefix (query) and by id (path)
      const del = await b.req('DELETE', `/api/keys?id=${made.body.prefix}`);
      assert.deepEqual(del.body, { ok: true, revoked: 1 });
      assert.equal(
        (await fetch(`${api.base}/api/check-balance`, { headers: { 'x-api-key': made.body.key } })).status,
        401,
      );
      const third = await b.post('/api/keys', { name: 'third' });
      assert.deepEqual((await b.req('DELETE', '/api/keys', { id: third.body.id })).body, { ok: true, revoked: 1 });
      const second = await b.post('/api/keys', {});
      assert.equal((await b.req('DELETE', `/api/keys/${second.body.id}`)).status, 200);
      assertTeamsError(await b.req('DELETE', `/api/keys/${second.body.id}`), 404, 'NOT_FOUND');
      assertTeamsError(await b.req('DELETE', '/api/keys'), 422, 'INVALID_INPUT');
    });

    it("cannot see or revoke another user's keys", async () => {
      const alice = await signedUp('Alice');
      const bob = await signedUp('Bob');
      const key = (await alice.b.post('/api/keys', { name: 'alice' })).body;
      assert.deepEqual((await bob.b.get('/api/keys')).body.keys, []);
      assertTeamsError(await bob.b.req('DELETE', `/api/keys/${key.id}`), 404, 'NOT_FOUND');
      assertTeamsError(await bob.b.req('DELETE', `/api/keys?id=${key.prefix}`), 404, 'NOT_FOUND');
      assert.equal((await alice.b.get('/api/keys')).body.keys[0].status, 'active');
    });

    it('refuses bad restrictions with 422 naming the field, and makes nothing', async () => {
      const { b } = await signedUp();
      for (const [body, param] of [
        [{ daily_usd_limit: 'lots' }, 'daily_usd_limit'],
        [{ billing_mode: 'free' }, 'billing_mode'],
        [{ expires_at: 'tomorrow' }, 'expires_at'],
        [{ expires_at: '2001-01-01T00:00:00Z' }, 'expires_at'],
        [{ daily_request_limit: -1 }, 'daily_request_limit'],
      ] as const) {
        const r = await b.post('/api/keys', body);
        assertTeamsError(r, 422, 'INVALID_INPUT');
        assert.equal(r.body.details.param, param);
      }
      assert.deepEqual((await b.get('/api/keys')).body.keys, []);
    });

    it('takes a daily USD limit as a number of any precision, cut to the nano-dollar', async () => {
      const { b } = await signedUp();
      for (const [limit, shown] of [
        [1e-10, '0'],
        [0.1234567891, '0.123456789'],
        [2.5, '2.5'],
      ] as const) {
        const made = await b.post('/api/keys', { daily_usd_limit: limit });
        assert.equal(made.status, 201, JSON.stringify(made.body));
        assert.equal(made.body.daily_usd_limit, shown);
      }
    });
  });

  describe('a pooled connection that dies under a signed-in request', () => {
    /** Start `request`, kill the database session serving it mid-statement, then let the rest through. */
    async function killedUnder<T>(hold: Awaited<ReturnType<typeof holdTable>>, request: () => Promise<T>): Promise<T> {
      try {
        const pending = request();
        await until(hold.waiting, (pids) => pids.length > 0, 5000, 'the statement to wait');
        await hold.dropWaiting();
        await hold.release();
        return await pending;
      } finally {
        await hold.release();
      }
    }

    it('answers from a fresh connection: reading the session is tried once more', async () => {
      const { b } = await signedUp();
      const teams = await killedUnder(await holdTable('sessions'), () => b.get('/api/teams'));
      assert.equal(teams.status, 200, JSON.stringify(teams.body));
      const made = await killedUnder(await holdTable('sessions'), () => b.post('/api/keys', { name: 'after-kill' }));
      assert.equal(made.status, 201, JSON.stringify(made.body));
    });

    it('a revocation whose connection dies is made on a fresh one, and the key stops working', async () => {
      const { b } = await signedUp();
      const made = (await b.post('/api/keys', { name: 'doomed' })).body;
      const del = await killedUnder(await holdUpdates('api_keys', "NEW.status = 'revoked'"), () =>
        b.req('DELETE', `/api/keys/${made.id}`),
      );
      assert.deepEqual(del.body, { ok: true, revoked: 1 });
      const row = await db().prisma.apiKey.findUniqueOrThrow({ where: { id: made.id } });
      assert.equal(row.status, 'revoked');
      const use = await fetch(`${api.base}/api/check-balance`, { headers: { 'x-api-key': made.key } });
      assert.equal(use.status, 401);
    });
  });

  describe('sign-up policy (SWITCHYARD_SIGNUP)', () => {
    it('invite and closed refuse self-service sign-up with 403; existing users still sign in', async () => {
      const { address } = await signedUp();
      for (const policy of ['invite', 'closed'] as const) {
        config.signupPolicy = policy;
        const r = await browser().post('/api/auth/signup', { email: email(), password: PASSWORD, name: 'N' });
        assertTeamsError(r, 403, 'FORBIDDEN');
        assert.match(r.body.message, policy === 'invite' ? /invitation/ : /closed/);
        assert.equal((await browser().post('/api/auth/login', { email: address, password: PASSWORD })).status, 200);
      }
      const refused = await db().pool.query('SELECT count(*)::int AS n FROM users WHERE email LIKE $1', [
        `person-${process.pid}-%`,
      ]);
      config.signupPolicy = 'open';
      assert.equal(
        (await browser().post('/api/auth/signup', { email: email(), password: PASSWORD, name: 'N' })).status,
        201,
      );
      const after = await db().pool.query('SELECT count(*)::int AS n FROM users WHERE email LIKE $1', [
        `person-${process.pid}-%`,
      ]);
      assert.equal(after.rows[0].n, refused.rows[0].n + 1);
    });
  });

  describe('rate limits on sign-in', () => {
    it('per e-mail address from one client: past the limit even the right password gets 429 with Retry-After', async () => {
      const { address } = await signedUp();
      config.authAttemptsPerEmail = 3;
      const guesser = browser();
      const statuses = [];
      for (let i = 0; i < 3; i++)
        statuses.push(
          (await guesser.post('/api/auth/login', { email: address, password: `wrong-${i}-password` })).status,
        );
      const r = await guesser.post('/api/auth/login', { email: address, password: PASSWORD });
      assert.deepEqual(statuses, [401, 401, 401]);
      assertTeamsError(r, 429, 'RATE_LIMITED');
      const retry = Number(r.headers.get('retry-after'));
      assert.ok(retry >= 1 && retry <= config.authAttemptWindowSeconds, String(retry));
      // another address is not affected
      const other = await signedUp();
      assert.equal((await guesser.post('/api/auth/login', { email: other.address, password: PASSWORD })).status, 200);
    });

    it('wrong passwords from other client addresses cannot lock the owner out', async () => {
      const { address } = await signedUp();
      config.authAttemptsPerEmail = 3;
      // an attacker spends the allowance from several clients of its own, each to its limit
      for (const attacker of [browser(), browser()]) {
        const statuses = [];
        for (let i = 0; i < 4; i++)
          statuses.push((await attacker.post('/api/auth/login', { email: address, password: `guess-${i}-x` })).status);
        assert.deepEqual(statuses, [401, 401, 401, 429]);
      }
      // the owner, from their own address, still signs in
      const owner = browser();
      const r = await owner.post('/api/auth/login', { email: address, password: PASSWORD });
      assert.equal(r.status, 200, JSON.stringify(r.body));
    });

    it('per client address, across e-mail addresses', async () => {
      config.authAttemptsPerIp = 4;
      const b = browser();
      const statuses = [];
      for (let i = 0; i < 6; i++)
        statuses.push((await b.post('/api/auth/login', { email: email(), password: PASSWORD })).status);
      assert.deepEqual(statuses, [401, 401, 401, 401, 429, 429]);
      // another client address still may
      assert.equal((await browser().post('/api/auth/login', { email: email(), password: PASSWORD })).status, 401);
    });

    it('holds exactly under a burst of parallel guesses', async () => {
      const { address } = await signedUp();
      config.authAttemptsPerEmail = 5;
      const guesser = browser();
      const statuses = await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          guesser.post('/api/auth/login', { email: address, password: `guess-number-${i}` }).then((r) => r.status),
        ),
      );
      assert.equal(statuses.filter((s) => s === 401).length, 5);
      assert.equal(statuses.filter((s) => s === 429).length, 25);
    });
  });

  it('the bootstrap account is a user one can sign in as (SWITCHYARD_BOOTSTRAP_EMAIL / _PASSWORD)', async () => {
    const key = `sk-nanogpt-${randomUUID()}`;
    const address = email();
    Object.assign(config, {
      bootstrapKey: key,
      bootstrapBalanceUsd: '3',
      bootstrapEmail: address,
      bootstrapPassword: 'first password',
    });
    const log: string[] = [];
    try {
      const first = await ensureBootstrap((m) => log.push(m));
      assert.match(first.login!, new RegExp(address));
      const b = browser();
      const r = await b.post('/api/auth/login', { email: address, password: 'first password' });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.user.accountId, first.accountId);
      // the session and the bootstrap key see the same account and balance
      const bySession = await b.get('/api/check-balance');
      const byKey = await (await fetch(`${api.base}/api/check-balance`, { headers: { 'x-api-key': key } })).json();
      assert.deepEqual(bySession.body, byKey);
      assert.equal(byKey.usd_balance, '3');
      // a changed password replaces the old one at the next start
      config.bootstrapPassword = 'second password';
      const again = await ensureBootstrap(() => undefined);
      assert.equal(again.accountId, first.accountId);
      assert.equal(
        (await browser().post('/api/auth/login', { email: address, password: 'first password' })).status,
        401,
      );
      assert.equal(
        (await browser().post('/api/auth/login', { email: address, password: 'second password' })).status,
        200,
      );
    } finally {
      Object.assign(config, {
        bootstrapKey: saved.bootstrapKey,
        bootstrapBalanceUsd: saved.bootstrapBalanceUsd,
        bootstrapEmail: saved.bootstrapEmail,
        bootstrapPassword: saved.bootstrapPassword,
      });
    }
  });

  it('users made directly (the CLI path) sign in too; a code-only user cannot use a password', async () => {
    const address = email();
    const u = await createUser({ email: address, name: 'Made', password: null });
    await credit({
      accountId: u.accountId,
      currency: 'USD',
      amount: parseAmount('1', 'USD'),
      reason: 'test',
      idempotencyKey: `t:${u.accountId}`,
    });
    assert.equal((await browser().post('/api/auth/login', { email: address, password: PASSWORD })).status, 401);
  });
});
