// Three people on one gateway, as new users would go: sign up, create a team, invite by e-mail (the
// link read from a real SMTP conversation), accept, join by the invite link, set limits and
// allowed models, spend with bill_to_team until the limit stops them, transfer ownership, leave.
import assert from 'node:assert/strict';
import { useChatBench, type ChatBench } from './support/chatEnv.js';
import { Browser } from './support/browser.js';
import { teamEmail } from './support/teams.js';
import { useTemporal } from './support/temporal.js';
import { startSmtpServer, type SmtpServer } from './support/smtp.js';
import { config } from '../activities/config.js';
import { keepConfig } from './support/keepConfig.js';
import { credit } from '../activities/ledger/ledger.js';
import { parseAmount } from '../activities/core/money.js';

const chat = () => ({
  model: 'openai/gpt-4o-mini',
  messages: [{ role: 'user', content: 'Say hello' }],
  max_tokens: 40,
});

describe('a team, end to end, for three people', function () {
  this.timeout(120_000);
  const bench = useChatBench();
  let b: ChatBench;
  let smtp: SmtpServer;
  keepConfig();
  before(async () => {
    b = bench();
    await useTemporal();
    smtp = await startSmtpServer();
    config.smtpUrl = smtp.url;
  });
  after(async () => {
    await smtp.close();
  });

  async function signUp(name: string) {
    const browser = new Browser(b.base);
    const email = teamEmail();
    const r = await browser.post('/api/auth/signup', { email, password: 'a long password', name });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    return { browser, email, user: r.body.user as { sessionId: number; accountId: string } };
  }

  it('signs up, invites, joins, bills to the team until the limit, hands over and leaves', async () => {
    const ada = await signUp('Ada');
    const bob = await signUp('Bob');
    const cy = await signUp('Cy');
    await credit({
      accountId: ada.user.accountId,
      currency: 'USD',
      amount: parseAmount('2', 'USD'),
      reason: 'test funds',
      idempotencyKey: `journey:${ada.user.accountId}`,
    });
    // Ada makes a team and invites Bob by e-mail
    const made = await ada.browser.post('/api/teams', { name: 'Night Shift' });
    assert.equal(made.status, 200);
    const team = made.body.team.uuid as string;
    const invited = await ada.browser.post(`/api/teams/${team}/invitations`, { email: bob.email });
    assert.equal(invited.status, 200);
    const mail = await smtp.next(bob.email);
    const token = /lookup\?token=([A-Za-z0-9_-]+)/.exec(mail.text)![1]!;
    const lookup = await new Browser(b.base).get(`/api/teams/invitations/lookup?token=${token}`);
    assert.equal(lookup.body.teamName, 'Night Shift');
    assert.deepEqual((await bob.browser.post('/api/teams/invitations/accept', { token })).body, { ok: true });
    // Cy comes in by the invite link, approved by Ada
    const link = (await ada.browser.post(`/api/teams/${team}/invite-link`, {})).body.token as string;
    assert.equal((await ada.browser.post(`/api/teams/${team}/invite-link/email`, { emails: [cy.email] })).status, 200);
    assert.ok((await smtp.next(cy.email)).text.includes(link));
    const asked = await cy.browser.post('/api/teams/join', { token: link });
    assert.equal(asked.status, 200);
    const decided = await ada.browser.req('PATCH', `/api/teams/${team}/join-requests`, { id: asked.body.requestId });
    assert.equal(decided.status, 200);
    const members = (await bob.browser.get(`/api/teams/${team}/members`)).body.members;
    assert.deepEqual(members.map((m: { displayName: string; role: string }) => [m.displayName, m.role]).sort(), [
      ['Ada', 'owner'],
      ['Bob', 'member'],
      ['Cy', 'member'],
    ]);
    // Ada allows one model and gives Bob a small monthly limit; Bob bills to the team
    await ada.browser.req('PATCH', `/api/teams/${team}/allowed-models`, {
      allowed_models: { 'openai/gpt-4o-mini': false },
    });
    await ada.browser.req('PATCH', `/api/teams/${team}/members`, {
      sessionId: bob.user.sessionId,
      usage_limit_usd: 0.00005,
      usage_limit_enforced: true,
    });
    const prefs = await bob.browser.req('PATCH', `/api/teams/${team}/members/self`, { bill_to_team: true });
    assert.equal(prefs.body.effective_usage_limit_usd, 0.00005);
    const notAllowed = await bob.browser.post('/api/v1/chat/completions', chat());
    assert.equal(notAllowed.status, 403);
    assert.equal(notAllowed.body.error.code, 'model_not_allowed');
    await ada.browser.req('PATCH', `/api/teams/${team}/allowed-models`, {
      allowed_models: { 'openai/gpt-4o-mini': true },
    });
    let spentOk = 0;
    let stopped: any;
    for (let i = 0; i < 200 && !stopped; i++) {
      const r = await bob.browser.post('/api/v1/chat/completions', chat());
      if (r.status === 200) {
        assert.equal(r.body.x_nanogpt_pricing.billedTeamName, 'Night Shift');
        spentOk++;
      } else stopped = r;
    }
    assert.ok(spentOk >= 1, 'Bob spent nothing before the limit');
    assert.equal(stopped?.status, 402, JSON.stringify(stopped?.body));
    assert.equal(stopped.body.error.code, 'team_usage_limit_exceeded');
    const usage = (await cy.browser.get(`/api/teams/${team}/usage`)).body;
    assert.equal(usage.byActor.length, 1);
    assert.equal(usage.byActor[0].actorSessionId, bob.user.sessionId);
    assert.ok(usage.byActor[0].totalAmount <= 0.00005);
    // Bob's own account paid nothing; Ada's paid it all
    assert.equal((await b.usd(bob.user.accountId)).amount, 0n);
    assert.equal(
      parseAmount('2', 'USD') - (await b.usd(ada.user.accountId)).amount,
      parseAmount(String(usage.totals[0].totalAmount), 'USD'),
    );
    // Ada hands the team to Cy, then leaves it
    assert.equal((await ada.browser.post(`/api/teams/${team}/owner`, { sessionId: cy.user.sessionId })).status, 200);
    assert.equal((await ada.browser.post(`/api/teams/${team}/leave`, {})).status, 200);
    const after = (await cy.browser.get(`/api/teams/${team}/members`)).body.members;
    assert.deepEqual(after.map((m: { displayName: string; role: string }) => [m.displayName, m.role]).sort(), [
      ['Bob', 'member'],
      ['Cy', 'owner'],
    ]);
    // the team's balance is now Cy's account's (empty): with Bob's limit lifted, he is refused for funds
    const detail = (await cy.browser.get(`/api/teams/${team}`)).body.team;
    assert.equal(detail.balances.usd_balance, '0');
    const lifted = await cy.browser.req('PATCH', `/api/teams/${team}/members`, {
      sessionId: bob.user.sessionId,
      usage_limit_usd: null,
    });
    assert.equal(lifted.status, 200);
    const broke = await bob.browser.post('/api/v1/chat/completions', chat());
    assert.equal(broke.status, 402);
    assert.equal(broke.body.error.code, 'insufficient_balance');
    assert.match(broke.body.error.message, /Night Shift/);
  });
});
