// Credit invitations and referral links end to end: the spec's create errors, the issuer's hold,
// redemption by an API key and by a signed-in user (once), revocation and expiry (the workflow's
// timer) releasing the hold, and the races: many redemptions of one code at once, redeem against
// revoke. Every test ends with the books balanced.
import assert from 'node:assert/strict';
import { Browser, startTrustingApi } from './support/browser.js';
import { newAccount } from './support/api.js';
import { person } from './support/teams.js';
import { useTemporal } from './support/temporal.js';
import { assertBooksBalance } from './support/books.js';
import { keepConfig } from './support/keepConfig.js';
import { config } from '../activities/config.js';
import { db } from '../activities/db.js';
import { closeTemporalClient } from '../activities/temporalClient.js';
import { balances } from '../activities/ledger/ledger.js';
import { release } from '../activities/ledger/holds.js';
import { expireCreditInvitation, redeemCreditInvitation } from '../activities/invitations/creditInvitations.js';
import { parseAmount } from '../activities/core/money.js';

const usd = (s: string) => parseAmount(s, 'USD');

async function usdOf(accountId: string) {
  return (await balances(accountId))!.USD;
}

describe('credit invitations', function () {
  this.timeout(120_000);
  let api: Awaited<ReturnType<typeof startTrustingApi>>;
  let temporal: Awaited<ReturnType<typeof useTemporal>>;
  const saved = keepConfig();
  before(async () => {
    temporal = await useTemporal();
    api = await startTrustingApi();
  });
  after(() => api.close());
  afterEach(async () => {
    config.creditInvitationTtlSeconds = saved.creditInvitationTtlSeconds;
    await assertBooksBalance();
  });

  /** An API-key client of a fresh account holding `funds` USD. */
  async function keyClient(funds = '10') {
    const a = await newAccount(funds);
    const b = new Browser(api.base);
    b.origin = null;
    const post = (path: string, body?: unknown) => b.post(path, body, { authorization: `Bearer ${a.key}` });
    return { ...a, post, get: (path: string) => b.get(path, { authorization: `Bearer ${a.key}` }) };
  }

  it('creates an invitation holding the amount; the spec record; a code without look-alikes', async () => {
    const issuer = await keyClient('10');
    const r = await issuer.post('/api/invitations/create', {
      amount: 2.5,
      currency: 'USD',
      recipientName: 'Ada',
      issuerName: 'Grace',
      issuerNote: 'for the tests',
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.match(r.body.insertId, /^cinv_/);
    assert.match(r.body.redeemCode, /^[23456789ABCDEFGHJKMNPQRSTUVWXYZ]{20}$/);
    assert.equal(r.body.url, `${api.base}/api/invitations/lookup?code=${r.body.redeemCode}`);
    assert.deepEqual(
      { type: r.body.type, amount: r.body.amount, currency: r.body.currency },
      { type: 'invitation', amount: 2.5, currency: 'USD' },
    );
    const b = await usdOf(issuer.accountId);
    assert.equal(b.amount, usd('10'));
    assert.equal(b.held, usd('2.5'));
    // the workflow owns it, searchable by the issuer's account
    const d = await temporal.client.workflow.getHandle(r.body.insertId).describe();
    assert.equal(d.status.name, 'RUNNING');
    assert.deepEqual(d.searchAttributes.SwitchyardAccountId, [issuer.accountId]);
    // anyone holding the code may look it up (no account ids)
    const look = await new Browser(api.base).get(`/api/invitations/lookup?code=${r.body.redeemCode}`);
    assert.equal(look.status, 200);
    assert.equal(look.body.status, 'active');
    assert.equal(look.body.issuerName, 'Grace');
    assert.equal(look.body.amount, 2.5);
    // a lower-case code is the same code
    const lower = await new Browser(api.base).get(`/api/invitations/lookup?code=${r.body.redeemCode.toLowerCase()}`);
    assert.equal(lower.status, 200);
  });

  it("refuses with the spec's errors and writes nothing: InvalidAmount, InsufficientBalance, bad body, 401", async () => {
    const issuer = await keyClient('3');
    const before = await db().pool.query('SELECT count(*) FROM credit_invitations WHERE issuer_account_id = $1', [
      issuer.accountId,
    ]);
    for (const amount of [-1, 0.0000000001, 2_000_000]) {
      const r = await issuer.post('/api/invitations/create', { amount, currency: 'USD' });
      assert.equal(r.status, 400, JSON.stringify(r.body));
      assert.equal(r.body.code, 'InvalidAmount');
    }
    const poor = await issuer.post('/api/invitations/create', { amount: 3.01, currency: 'USD' });
    assert.equal(poor.status, 400);
    assert.equal(poor.body.code, 'InsufficientBalance');
    assert.match(poor.body.message, /needs 3\.01 USD and 3 USD is available/);
    for (const body of [
      { amount: '5', currency: 'USD' },
      { type: 'gift', amount: 1, currency: 'USD' },
      { amount: 1, currency: 'USD', extra: true },
      { amount: 1 },
      { amount: 1, currency: 'EUR' },
      [],
    ]) {
      const r = await issuer.post('/api/invitations/create', body);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.equal(typeof r.body.error, 'string');
    }
    const anon = await new Browser(api.base).post('/api/invitations/create', { amount: 1, currency: 'USD' });
    assert.equal(anon.status, 401);
    const after = await db().pool.query('SELECT count(*) FROM credit_invitations WHERE issuer_account_id = $1', [
      issuer.accountId,
    ]);
    assert.equal(after.rows[0].count, before.rows[0].count);
    const b = await usdOf(issuer.accountId);
    assert.equal(b.held, 0n);
    assert.equal(b.amount, usd('3'));
  });

  it('500 Failed to create invitation when the workflow engine is down: the hold given back, no row', async () => {
    const issuer = await keyClient('4');
    const address = config.temporalAddress;
    await closeTemporalClient();
    config.temporalAddress = '127.0.0.1:1';
    let r: Awaited<ReturnType<typeof issuer.post>>;
    try {
      r = await issuer.post('/api/invitations/create', { amount: 1, currency: 'USD' });
    } finally {
      config.temporalAddress = address;
      await closeTemporalClient();
    }
    assert.equal(r.status, 500, JSON.stringify(r.body));
    assert.equal(r.body.error, 'Failed to create invitation');
    assert.deepEqual(await usdOf(issuer.accountId), { amount: usd('4'), held: 0n, available: usd('4') });
    const { rows } = await db().pool.query(
      'SELECT count(*)::int AS n FROM credit_invitations WHERE issuer_account_id = $1',
      [issuer.accountId],
    );
    assert.equal(rows[0].n, 0);
  });

  it('redeems once (API key), with the issuer paying from the hold; a second try and the issuer are refused', async () => {
    const issuer = await keyClient('10');
    const created = await issuer.post('/api/invitations/create', { amount: 1.25, currency: 'usd' });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const redeemer = await keyClient('0');
    const own = await issuer.post('/api/invitations/redeem', { code: created.body.redeemCode });
    assert.equal(own.status, 400);
    assert.equal(own.body.code, 'own_invitation');
    const r = await redeemer.post('/api/invitations/redeem', { code: created.body.redeemCode });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(r.body, { ok: true, type: 'invitation', amount: 1.25, currency: 'USD', balance: '1.25' });
    const again = await redeemer.post('/api/invitations/redeem', { code: created.body.redeemCode });
    assert.equal(again.status, 409);
    assert.equal(again.body.code, 'invitation_redeemed');
    assert.deepEqual(await usdOf(redeemer.accountId), { amount: usd('1.25'), held: 0n, available: usd('1.25') });
    assert.deepEqual(await usdOf(issuer.accountId), { amount: usd('8.75'), held: 0n, available: usd('8.75') });
    // one debit for the issuer against the hold, one credit for the redeemer
    const { rows } = await db().pool.query(
      `SELECT account_id, kind, amount FROM ledger_entries WHERE idempotency_key LIKE $1 ORDER BY kind`,
      [`invitation:${created.body.insertId}:%`],
    );
    assert.deepEqual(
      rows.map((e) => [e.account_id, e.kind, e.amount]),
      [
        [redeemer.accountId, 'credit', '1250000000'],
        [issuer.accountId, 'debit', '-1250000000'],
      ],
    );
    // the workflow heard it and ended
    assert.equal(await temporal.client.workflow.getHandle(created.body.insertId).result(), 'redeemed');
    const unknown = await redeemer.post('/api/invitations/redeem', { code: 'ABCDEFGHJK23456789MN' });
    assert.equal(unknown.status, 404);
  });

  it('a signed-in user redeems with the session cookie', async () => {
    const issuer = await keyClient('5');
    const created = await issuer.post('/api/invitations/create', { amount: 0.5, currency: 'USD' });
    const p = await person(api.base);
    const r = await p.b.post('/api/invitations/redeem', { code: created.body.redeemCode });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal((await usdOf(p.user.accountId)).amount, usd('0.5'));
  });

  it('race: twelve redemptions of one code at once, from twelve accounts: exactly one is credited', async () => {
    for (let round = 0; round < 3; round++) {
      const issuer = await keyClient('10');
      const created = await issuer.post('/api/invitations/create', { amount: 2, currency: 'USD' });
      const redeemers = await Promise.all(Array.from({ length: 12 }, () => keyClient('0')));
      const answers = await Promise.all(
        redeemers.map((r) => r.post('/api/invitations/redeem', { code: created.body.redeemCode })),
      );
      assert.equal(answers.filter((a) => a.status === 200).length, 1, JSON.stringify(answers.map((a) => a.body)));
      assert.ok(answers.every((a) => a.status === 200 || a.status === 409));
      const credited = await Promise.all(redeemers.map((r) => usdOf(r.accountId)));
      assert.equal(
        credited.reduce((s, b) => s + b.amount, 0n),
        usd('2'),
      );
      assert.deepEqual(await usdOf(issuer.accountId), { amount: usd('8'), held: 0n, available: usd('8') });
    }
  });

  it('race: redeem against revoke: one wins, and the money goes exactly one way', async () => {
    const outcomes = new Set<string>();
    for (let round = 0; round < 6; round++) {
      const issuer = await keyClient('10');
      const created = await issuer.post('/api/invitations/create', { amount: 3, currency: 'USD' });
      const redeemer = await keyClient('0');
      const [redeemed, revoked] = await Promise.all([
        redeemer.post('/api/invitations/redeem', { code: created.body.redeemCode }),
        issuer.post('/api/invitations/revoke', { code: created.body.redeemCode }),
      ]);
      assert.equal([redeemed.status, revoked.status].filter((s) => s === 200).length, 1);
      const i = await usdOf(issuer.accountId);
      const r = await usdOf(redeemer.accountId);
      assert.equal(i.held, 0n);
      if (redeemed.status === 200) {
        assert.equal(revoked.status, 409);
        assert.equal(revoked.body.code, 'invitation_redeemed');
        assert.equal(i.amount, usd('7'));
        assert.equal(r.amount, usd('3'));
        outcomes.add('redeemed');
      } else {
        assert.equal(redeemed.status, 409);
        assert.equal(redeemed.body.code, 'invitation_revoked');
        assert.equal(i.amount, usd('10'));
        assert.equal(r.amount, 0n);
        outcomes.add('revoked');
      }
    }
    assert.ok(outcomes.size >= 1);
  });

  it('revoking releases the hold and ends the workflow; only the issuer may revoke', async () => {
    const issuer = await keyClient('10');
    const created = await issuer.post('/api/invitations/create', { amount: 4, currency: 'USD' });
    const other = await keyClient('0');
    const notTheirs = await other.post('/api/invitations/revoke', { code: created.body.redeemCode });
    assert.equal(notTheirs.status, 404);
    assert.equal((await usdOf(issuer.accountId)).held, usd('4'));
    const r = await issuer.post('/api/invitations/revoke', { code: created.body.redeemCode });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(await usdOf(issuer.accountId), { amount: usd('10'), held: 0n, available: usd('10') });
    assert.equal(await temporal.client.workflow.getHandle(created.body.insertId).result(), 'revoked');
    const late = await other.post('/api/invitations/redeem', { code: created.body.redeemCode });
    assert.equal(late.status, 409);
    assert.equal(late.body.code, 'invitation_revoked');
    const twice = await issuer.post('/api/invitations/revoke', { code: created.body.redeemCode });
    assert.equal(twice.status, 409);
    const list = await issuer.get('/api/invitations');
    assert.equal(list.body.invitations[0].status, 'revoked');
  });

  it("expires on the workflow's timer, releasing the hold; redeeming then is 409", async () => {
    config.creditInvitationTtlSeconds = 2;
    const issuer = await keyClient('10');
    const created = await issuer.post('/api/invitations/create', { amount: 1, currency: 'USD' });
    assert.equal((await usdOf(issuer.accountId)).held, usd('1'));
    assert.equal(await temporal.client.workflow.getHandle(created.body.insertId).result(), 'expired');
    assert.deepEqual(await usdOf(issuer.accountId), { amount: usd('10'), held: 0n, available: usd('10') });
    const { rows } = await db().pool.query('SELECT status FROM credit_invitations WHERE id = $1', [
      created.body.insertId,
    ]);
    assert.equal(rows[0].status, 'expired');
    const redeemer = await keyClient('0');
    const late = await redeemer.post('/api/invitations/redeem', { code: created.body.redeemCode });
    assert.equal(late.status, 409);
    assert.equal(late.body.code, 'invitation_expired');
  });

  it('past its expiry an invitation cannot be redeemed, even before its workflow has closed it', async () => {
    const issuer = await keyClient('10');
    const created = await issuer.post('/api/invitations/create', { amount: 1, currency: 'USD' });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const code = created.body.redeemCode;
    // the expiry passed a moment ago; the workflow's timer (the default TTL) is still far off
    await db().pool.query(`UPDATE credit_invitations SET expires_at = now() - interval '1 second' WHERE id = $1`, [
      created.body.insertId,
    ]);
    const handle = temporal.client.workflow.getHandle(created.body.insertId);
    try {
      assert.equal((await handle.describe()).status.name, 'RUNNING');
      const redeemer = await keyClient('0');
      const late = await redeemer.post('/api/invitations/redeem', { code });
      assert.equal(late.status, 409, JSON.stringify(late.body));
      assert.equal(late.body.code, 'invitation_expired');
      assert.equal((await usdOf(redeemer.accountId)).amount, 0n);
      assert.deepEqual(await usdOf(issuer.accountId), { amount: usd('10'), held: usd('1'), available: usd('9') });
      const looked = await redeemer.get(`/api/invitations/lookup?code=${code}`);
      assert.equal(looked.body.status, 'expired', JSON.stringify(looked.body));
    } finally {
      await handle.terminate('the test is over');
      await expireCreditInvitation(created.body.insertId);
    }
    assert.deepEqual(await usdOf(issuer.accountId), { amount: usd('10'), held: 0n, available: usd('10') });
  });

  it('a hold the sweeper already released pays out nothing: 409 invitation_expired, the redemption rolled back', async () => {
    const issuer = await keyClient('10');
    const created = await issuer.post('/api/invitations/create', { amount: 2, currency: 'USD' });
    const { rows } = await db().pool.query('SELECT hold_id FROM credit_invitations WHERE id = $1', [
      created.body.insertId,
    ]);
    assert.equal(await release(rows[0].hold_id, 'expired'), true); // as the hold sweeper does
    const redeemer = await keyClient('0');
    const r = await redeemer.post('/api/invitations/redeem', { code: created.body.redeemCode });
    assert.equal(r.status, 409, JSON.stringify(r.body));
    assert.equal(r.body.code, 'invitation_expired');
    assert.equal((await usdOf(redeemer.accountId)).amount, 0n);
    assert.deepEqual(await usdOf(issuer.accountId), { amount: usd('10'), held: 0n, available: usd('10') });
    const row = await db().pool.query('SELECT status FROM credit_invitations WHERE id = $1', [created.body.insertId]);
    assert.equal(row.rows[0].status, 'active', 'the redemption rolled back with the failed payout');
    await temporal.client.workflow.getHandle(created.body.insertId).terminate('the test is over');
    await expireCreditInvitation(created.body.insertId);
  });

  it('a redeemer with no balance in the currency: the payout fails whole, the issuer keeps the hold', async () => {
    const issuer = await keyClient('10');
    const created = await issuer.post('/api/invitations/create', { amount: 2, currency: 'USD' });
    const redeemer = await keyClient('0');
    await db().pool.query(`DELETE FROM balances WHERE account_id = $1 AND currency = 'USD'`, [redeemer.accountId]);
    try {
      await assert.rejects(redeemCreditInvitation(created.body.redeemCode, redeemer.accountId), /has no USD balance/);
      assert.deepEqual(await usdOf(issuer.accountId), { amount: usd('10'), held: usd('2'), available: usd('8') });
      const entries = await db().pool.query('SELECT 1 FROM ledger_entries WHERE idempotency_key LIKE $1', [
        `invitation:${created.body.insertId}:%`,
      ]);
      assert.equal(entries.rowCount, 0);
    } finally {
      await db().pool.query(
        `INSERT INTO balances (account_id, currency, amount, held) VALUES ($1, 'USD', 0, 0) ON CONFLICT DO NOTHING`,
        [redeemer.accountId],
      );
    }
    await temporal.client.workflow.getHandle(created.body.insertId).terminate('the test is over');
    await expireCreditInvitation(created.body.insertId);
  });

  it('a referral link carries no money, never expires, and each account uses it once', async () => {
    const issuer = await keyClient('1');
    const created = await issuer.post('/api/invitations/create', { type: 'referralLink', amount: 5, currency: 'USD' });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    assert.deepEqual(
      { type: created.body.type, amount: created.body.amount, currency: created.body.currency },
      { type: 'referralLink', amount: 0, currency: null },
    );
    assert.equal((await usdOf(issuer.accountId)).held, 0n);
    const [a, b] = await Promise.all([keyClient('0'), keyClient('0')]);
    for (const who of [a, b]) {
      const r = await who.post('/api/invitations/redeem', { code: created.body.redeemCode });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.amount, 0);
    }
    const again = await a.post('/api/invitations/redeem', { code: created.body.redeemCode });
    assert.equal(again.status, 409);
    assert.equal(again.body.code, 'already_redeemed');
    const { rows } = await db().pool.query(
      'SELECT count(*)::int AS n FROM credit_invitation_redemptions r JOIN credit_invitations i ON i.id = r.invitation_id WHERE i.code = $1',
      [created.body.redeemCode],
    );
    assert.equal(rows[0].n, 2);
  });

  it('an invitation worth 0 is redeemable once and moves nothing', async () => {
    const issuer = await keyClient('1');
    const created = await issuer.post('/api/invitations/create', {});
    assert.equal(created.status, 200);
    assert.equal(created.body.currency, null);
    const r = await (await keyClient('0')).post('/api/invitations/redeem', { code: created.body.redeemCode });
    assert.equal(r.status, 200);
  });
});
