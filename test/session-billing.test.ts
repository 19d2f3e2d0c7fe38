// A session and an API key resolve to the same Caller before any route runs: the same account,
// user and restrictions, billed the same way on a billed route.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { useChatBench, type ChatBench } from './support/chatEnv.js';
import { Browser } from './support/browser.js';
import { db } from '../activities/db.js';
import { createUser } from '../activities/accounts/users.js';
import { createKey, resolveKey } from '../activities/accounts/keys.js';
import { createSession, resolveSession } from '../activities/accounts/sessions.js';
import { credit } from '../activities/ledger/ledger.js';
import { parseAmount } from '../activities/core/money.js';
import { flushRequestRecords } from '../activities/metering/records.js';

const MODEL = 'openai/gpt-4o-mini';
const hello = { model: MODEL, messages: [{ role: 'user', content: 'Say hello' }] };

describe('a session and an API key are the same caller', function () {
  this.timeout(60_000);
  const bench = useChatBench();
  let b: ChatBench;
  before(() => (b = bench()));

  async function person() {
    const user = await createUser({
      email: `payer-${process.pid}-${randomUUID().slice(0, 8)}@example.test`,
      name: 'Payer',
      password: 'payer password',
    });
    await credit({
      accountId: user.accountId,
      currency: 'USD',
      amount: parseAmount('1', 'USD'),
      reason: 'test funds',
      idempotencyKey: `test-funds:${user.accountId}`,
    });
    await db().pool.query('UPDATE accounts SET provider_deny = $2 WHERE id = $1', [user.accountId, ['groq']]);
    const { key, record } = await createKey(user.accountId, { name: 'k' });
    const session = await createSession(user.id, { method: 'password' });
    return { user, key, keyId: record.id, token: session.token };
  }

  it('resolves both to one account, one user and the account restrictions', async () => {
    const p = await person();
    const byKey = await resolveKey(p.key);
    const bySession = await resolveSession(p.token);
    assert.ok(byKey.caller && bySession.caller);
    const { keyId, keyPrefix, webSessionId, ...sharedByKey } = byKey.caller;
    const { keyId: k2, keyPrefix: p2, webSessionId: s2, ...sharedBySession } = bySession.caller;
    assert.deepEqual(sharedBySession, sharedByKey);
    assert.equal(sharedByKey.userId, p.user.id);
    assert.equal(sharedByKey.accountId, p.user.accountId);
    assert.deepEqual(sharedByKey.providerDeny, ['groq']);
    assert.equal(keyId, p.keyId);
    assert.equal(k2, null);
    assert.equal(p2, null);
    assert.equal(webSessionId, undefined);
    assert.equal(s2, bySession.session.id);
  });

  it('bills a chat completion made with the session cookie to the same account as one made with the key', async () => {
    const p = await person();
    const viaKey = await b.post(p.key, hello);
    assert.equal(viaKey.status, 200);
    const browser = new Browser(b.base);
    browser.cookie = p.token;
    const viaSession = await browser.post('/api/v1/chat/completions', hello);
    assert.equal(viaSession.status, 200, JSON.stringify(viaSession.body));
    const keyBody = await viaKey.json();
    assert.equal(viaSession.body.cost, keyBody.cost);
    assert.equal(viaSession.body.paymentSource, 'USD');
    await flushRequestRecords();
    const records = (
      await db().pool.query(
        `SELECT account_id, api_key_id, status FROM request_records WHERE account_id = $1 ORDER BY started_at`,
        [p.user.accountId],
      )
    ).rows;
    assert.deepEqual(
      records.map((r) => [r.api_key_id, r.status]),
      [
        [p.keyId, 'completed'],
        [null, 'completed'],
      ],
    );
    const bal = await b.usd(p.user.accountId);
    const cost = parseAmount(String(keyBody.cost), 'USD');
    assert.equal(bal.amount, parseAmount('1', 'USD') - 2n * cost);
  });

  it('refuses a billed POST with the cookie from another origin before anything is reserved', async () => {
    const p = await person();
    const browser = new Browser(b.base);
    browser.cookie = p.token;
    browser.origin = 'https://evil.example';
    const r = await browser.post('/api/v1/chat/completions', hello);
    assert.equal(r.status, 403);
    assert.equal(r.body.error.code, 'csrf_origin_mismatch'); // the route's own (OpenAI-style) envelope
    assert.equal(b.openai.requests.length, 0);
    assert.equal((await b.usd(p.user.accountId)).amount, parseAmount('1', 'USD'));
  });
});
