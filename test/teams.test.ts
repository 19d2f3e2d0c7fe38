// The teams API's rules (spec, Teams table): its 409/403/400/422 cases, invitations e-mailed over
// a real SMTP conversation and accepted through their workflow, expiry on the workflow's timer,
// the invite link and join requests, ownership transfer.
import assert from 'node:assert/strict';
import { Browser, startTrustingApi } from './support/browser.js';
import { person, teamEmail, teamFixture } from './support/teams.js';
import { useTemporal } from './support/temporal.js';
import { startSmtpServer, type SmtpServer } from './support/smtp.js';
import protos from '@temporalio/proto';
import { config } from '../activities/config.js';
import { db } from '../activities/db.js';
import { keepConfig } from './support/keepConfig.js';

const { EventType } = protos.temporal.api.enums.v1;

function assertTeamsError(r: { status: number; body: any }, status: number, code: string) {
  assert.equal(r.status, status, JSON.stringify(r.body));
  assert.equal(r.body.code, code, JSON.stringify(r.body));
  assert.equal(r.body.status, status);
  assert.equal(typeof r.body.message, 'string');
  assert.ok('details' in r.body);
}

/** The token in an invitation e-mail's link. */
function tokenIn(text: string): string {
  const m = /lookup\?token=([A-Za-z0-9_-]+)/.exec(text);
  assert.ok(m, `no link in: ${text}`);
  return m[1]!;
}

describe('teams API', function () {
  this.timeout(120_000);
  let api: Awaited<ReturnType<typeof startTrustingApi>>;
  let smtp: SmtpServer;
  let temporal: Awaited<ReturnType<typeof useTemporal>>;
  const saved = keepConfig();
  before(async () => {
    temporal = await useTemporal();
    smtp = await startSmtpServer();
    config.smtpUrl = smtp.url;
    api = await startTrustingApi();
  });
  after(async () => {
    await api.close();
    await smtp.close();
  });
  afterEach(() => {
    config.teamInvitationTtlSeconds = saved.teamInvitationTtlSeconds;
  });

  it('creates a team (200, owner), refuses a name the owner already uses (409) and bad names (422)', async () => {
    const p = await person(api.base);
    const r = await p.b.post('/api/teams', { name: 'Blue Team_1-a' });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.team.role, 'owner');
    assert.equal(r.body.team.status, 'active');
    assert.match(r.body.team.uuid, /^[0-9a-f-]{36}$/);
    assertTeamsError(await p.b.post('/api/teams', { name: 'blue team_1-A' }), 409, 'CONFLICT');
    // another owner may use the name
    const q = await person(api.base);
    assert.equal((await q.b.post('/api/teams', { name: 'Blue Team_1-a' })).status, 200);
    for (const name of ['x', 'a'.repeat(51), 'no/slashes', 'émoji 🙂', '   ']) {
      const bad = await p.b.post('/api/teams', { name });
      assertTeamsError(bad, 422, 'INVALID_INPUT');
      assert.equal(bad.body.details.param, 'name');
    }
    assertTeamsError(await p.b.post('/api/teams', { name: 'ok name', extra: 1 }), 422, 'INVALID_INPUT');
    // letters of any script are letters
    assert.equal((await p.b.post('/api/teams', { name: 'Équipe Ünï' })).status, 200);
    // detail by uuid and by id, with the owner's balances
    const detail = await p.b.get(`/api/teams/${r.body.team.id}`);
    assert.equal(detail.status, 200);
    assert.equal(detail.body.team.uuid, r.body.team.uuid);
    assert.deepEqual(detail.body.team.balances, { usd_balance: '0', nano_balance: '0' });
    assertTeamsError(await p.b.get('/api/teams/not-a-team'), 404, 'NOT_FOUND');
    assertTeamsError(await p.b.get('/api/teams/99999999'), 404, 'NOT_FOUND');
  });

  it('members: owner untouchable (403), own role (400), self-removal (400), owner cannot leave (403)', async () => {
    const t = await teamFixture(api.base);
    const members = `/api/teams/${t.uuid}/members`;
    assertTeamsError(
      await t.admin.b.req('PATCH', members, { sessionId: t.owner.user.id, role: 'member' }),
      403,
      'FORBIDDEN',
    );
    assertTeamsError(
      await t.admin.b.req('PATCH', members, { sessionId: t.owner.user.id, usage_limit_usd: 1 }),
      403,
      'FORBIDDEN',
    );
    assertTeamsError(
      await t.admin.b.req('PATCH', members, { sessionId: t.admin.user.id, role: 'member' }),
      400,
      'INVALID_INPUT',
    );
    assertTeamsError(await t.admin.b.req('DELETE', members, { sessionId: t.owner.user.id }), 403, 'FORBIDDEN');
    assertTeamsError(await t.admin.b.req('DELETE', members, { sessionId: t.admin.user.id }), 400, 'INVALID_INPUT');
    assertTeamsError(await t.admin.b.req('DELETE', members, { sessionId: t.outsider.user.id }), 404, 'NOT_FOUND');
    assertTeamsError(await t.owner.b.post(`/api/teams/${t.uuid}/leave`, {}), 403, 'FORBIDDEN');
    assertTeamsError(await t.owner.b.req('PATCH', members, { sessionId: t.member.user.id }), 422, 'INVALID_INPUT');
    assertTeamsError(
      await t.owner.b.req('PATCH', members, { sessionId: t.member.user.id, role: 'owner' }),
      422,
      'INVALID_INPUT',
    );
    // limits: set, shown in the list and in the member's own preferences
    const set = await t.owner.b.req('PATCH', members, {
      sessionId: t.member.user.id,
      usage_limit_usd: 3.25,
      usage_limit_enforced: true,
    });
    assert.equal(set.status, 200);
    const list = await t.member.b.get(`${members}?page=1&limit=2`);
    assert.equal(list.status, 200);
    assert.deepEqual(list.body.pagination, { page: 1, limit: 2, total: 4, totalPages: 2 });
    assert.equal(list.body.members[0].role, 'owner');
    const page2 = await t.member.b.get(`${members}?page=2&limit=2`);
    const m = [...list.body.members, ...page2.body.members].find((x: any) => x.sessionId === t.member.user.id);
    assert.equal(m.usage_limit_usd, 3.25);
    assert.equal(m.usage_limit_enforced, true);
    assert.equal(m.usage_usd_monthly, 0);
    assert.equal(m.email, t.member.user.email);
    assertTeamsError(await t.member.b.get(`${members}?limit=101`), 422, 'INVALID_INPUT');
    const self = await t.member.b.get(`${members}/self`);
    assert.equal(self.body.effective_usage_limit_usd, 3.25);
    assert.equal(self.body.effective_usage_limit_enforced, true);
    assert.equal(self.body.bill_to_team, false);
    // the team default applies to members without an override
    await t.owner.b.req('PATCH', `/api/teams/${t.uuid}/settings`, { default_member_usage_limit_usd: 7 });
    const other = await t.target.b.get(`${members}/self`);
    assert.equal(other.body.effective_usage_limit_usd, 7);
    assert.equal(other.body.usage_limit_usd, null);
    // a member leaves; removed members are gone from the list
    assert.equal((await t.target.b.post(`/api/teams/${t.uuid}/leave`, {})).status, 200);
    assertTeamsError(await t.target.b.get(`/api/teams/${t.uuid}`), 404, 'NOT_FOUND');
  });

  it('bill_to_team is on for one team at a time', async () => {
    const a = await teamFixture(api.base);
    const r = await a.owner.b.post('/api/teams', { name: `Second ${Date.now()}` });
    const second = r.body.team.uuid;
    await db().pool.query(`INSERT INTO team_members (team_id, user_id, role) VALUES ($1, $2, 'member')`, [
      r.body.team.id,
      a.member.user.id,
    ]);
    const on1 = await a.member.b.req('PATCH', `/api/teams/${a.uuid}/members/self`, { bill_to_team: true });
    assert.equal(on1.body.bill_to_team, true);
    const on2 = await a.member.b.req('PATCH', `/api/teams/${second}/members/self`, { bill_to_team: true });
    assert.equal(on2.body.bill_to_team, true);
    assert.equal((await a.member.b.get(`/api/teams/${a.uuid}/members/self`)).body.bill_to_team, false);
  });

  it('transfers ownership: 400 to oneself, the owner becomes admin, the new owner may delete', async () => {
    const t = await teamFixture(api.base);
    const owner = `/api/teams/${t.uuid}/owner`;
    assertTeamsError(await t.owner.b.post(owner, { sessionId: t.owner.user.id }), 400, 'INVALID_INPUT');
    assertTeamsError(await t.owner.b.post(owner, { sessionId: t.outsider.user.id }), 404, 'NOT_FOUND');
    assert.equal((await t.owner.b.post(owner, { sessionId: t.member.user.id })).status, 200);
    const roles = (await t.owner.b.get(`/api/teams/${t.uuid}/members`)).body.members.map((m: any) => [
      m.sessionId,
      m.role,
    ]);
    assert.deepEqual(new Map(roles).get(t.owner.user.id), 'admin');
    assert.deepEqual(new Map(roles).get(t.member.user.id), 'owner');
    assertTeamsError(await t.owner.b.post(owner, { sessionId: t.owner.user.id }), 403, 'FORBIDDEN');
    // the new owner is already owner: naming them again is 400 (it is themselves)
    assertTeamsError(await t.member.b.post(owner, { sessionId: t.member.user.id }), 400, 'INVALID_INPUT');
    // delete: the name must match exactly
    assertTeamsError(
      await t.member.b.req('DELETE', `/api/teams/${t.uuid}`, { name: t.name.toUpperCase() }),
      400,
      'INVALID_INPUT',
    );
    assertTeamsError(await t.owner.b.req('DELETE', `/api/teams/${t.uuid}`, { name: t.name }), 403, 'FORBIDDEN');
    assert.equal((await t.member.b.req('DELETE', `/api/teams/${t.uuid}`, { name: t.name })).status, 200);
    assertTeamsError(await t.member.b.get(`/api/teams/${t.uuid}`), 404, 'NOT_FOUND');
  });

  it('status: paused and suspended stamp when; allowed models and settings round-trip', async () => {
    const t = await teamFixture(api.base);
    const path = `/api/teams/${t.uuid}`;
    const paused = await t.admin.b.req('PATCH', path, { status: 'paused' });
    assert.equal(paused.body.team.status, 'paused');
    assert.ok(paused.body.team.paused_at);
    const active = await t.admin.b.req('PATCH', path, { status: 'active' });
    assert.equal(active.body.team.paused_at, null);
    assertTeamsError(await t.admin.b.req('PATCH', path, { status: 'frozen' }), 422, 'INVALID_INPUT');
    assertTeamsError(await t.admin.b.req('PATCH', path, {}), 422, 'INVALID_INPUT');
    const all = await t.member.b.get(`${path}/allowed-models`);
    assert.deepEqual(all.body, { ok: true, allowed_models: null, all_allowed: true });
    const some = await t.admin.b.req('PATCH', `${path}/allowed-models`, {
      allowed_models: { 'openai/gpt-4o': false, 'local/stories260k': true },
    });
    assert.deepEqual(some.body, {
      ok: true,
      allowed_models: { 'openai/gpt-4o': false, 'local/stories260k': true },
      all_allowed: false,
    });
    assertTeamsError(
      await t.admin.b.req('PATCH', `${path}/allowed-models`, { allowed_models: { x: 'yes' } }),
      422,
      'INVALID_INPUT',
    );
    const settings = await t.owner.b.req('PATCH', `${path}/settings`, {
      team_usage_limit_usd: 12.5,
      usage_limit_enforced: true,
    });
    assert.deepEqual(settings.body, { ok: true });
    const d = (await t.member.b.get(path)).body.team;
    assert.equal(d.usage_limit_usd, 12.5);
    assert.equal(d.usage_limit_enforced, true);
    assert.equal(d.invite_link_token, null);
    assertTeamsError(
      await t.owner.b.req('PATCH', `${path}/settings`, { team_usage_limit_usd: -1 }),
      422,
      'INVALID_INPUT',
    );
  });

  it('invites by e-mail: the link read from SMTP, accepted through the workflow; 409 once not pending', async () => {
    const t = await teamFixture(api.base);
    const address = teamEmail();
    const invite = await t.admin.b.post(`/api/teams/${t.uuid}/invitations`, { email: address.toUpperCase() });
    assert.equal(invite.status, 200, JSON.stringify(invite.body));
    const inv = invite.body.invitation;
    assert.equal(inv.email, address);
    assert.equal(inv.role, 'member');
    assert.equal(inv.status, 'pending');
    assert.match(inv.id, /^teaminv_/);
    // the same address again while pending: 409
    assertTeamsError(await t.owner.b.post(`/api/teams/${t.uuid}/invitations`, { email: address }), 409, 'CONFLICT');
    // an existing member: 409
    assertTeamsError(
      await t.owner.b.post(`/api/teams/${t.uuid}/invitations`, { email: t.member.user.email }),
      409,
      'CONFLICT',
    );
    const mail = await smtp.next(address);
    assert.match(mail.text, new RegExp(`the team "${t.name}"`));
    const token = tokenIn(mail.text);
    assert.equal(token, inv.token);
    // the workflow: id = invitation id, owner searchable
    const desc = await temporal.client.workflow.getHandle(inv.id).describe();
    assert.equal(desc.type, 'teamInvitation');
    assert.deepEqual(desc.searchAttributes.SwitchyardAccountId, [t.admin.user.accountId]);
    // anyone may look the token up
    const lookup = await new Browser(api.base).get(`/api/teams/invitations/lookup?token=${token}`);
    assert.deepEqual(lookup.body, { type: 'invitation', email: address, status: 'pending', teamName: t.name });
    // someone else signed in cannot use it
    assertTeamsError(await t.outsider.b.post('/api/teams/invitations/accept', { token }), 403, 'FORBIDDEN');
    assertTeamsError(
      await t.outsider.b.post('/api/teams/invitations/accept', { token: 'short' }),
      422,
      'INVALID_INPUT',
    );
    const invitee = await person(api.base, 'Invitee', address);
    const accepted = await invitee.b.post('/api/teams/invitations/accept', { token });
    assert.deepEqual(accepted.body, { ok: true });
    const team = await invitee.b.get(`/api/teams/${t.uuid}`);
    assert.equal(team.body.team.role, 'member');
    assertTeamsError(await invitee.b.post('/api/teams/invitations/accept', { token }), 409, 'CONFLICT');
    assert.equal(await temporal.client.workflow.getHandle(inv.id).result(), 'accepted');
    // the accept is in the workflow's history as an update
    const events = (await temporal.client.workflow.getHandle(inv.id).fetchHistory()).events!;
    assert.ok(events.some((e) => Number(e.eventType) === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED));
    const list = await t.owner.b.get(`/api/teams/${t.uuid}/invitations`);
    assert.equal(list.body.invitations.find((i: any) => i.id === inv.id).status, 'accepted');
    // revoking an accepted one: 409
    assertTeamsError(
      await t.owner.b.req('PATCH', `/api/teams/${t.uuid}/invitations`, { action: 'revoke', id: inv.id }),
      409,
      'CONFLICT',
    );
  });

  it('under SWITCHYARD_SIGNUP=invite, an invited address may sign up and accept; others may not', async () => {
    config.signupPolicy = 'invite';
    try {
      const t = await teamFixture(api.base);
      const address = teamEmail();
      const stranger = new Browser(api.base);
      const body = (email: string) => ({ email, password: 'a long password', name: 'New' });
      assertTeamsError(await stranger.post('/api/auth/signup', body(teamEmail())), 403, 'FORBIDDEN');
      const inv = (await t.owner.b.post(`/api/teams/${t.uuid}/invitations`, { email: address })).body.invitation;
      const invitee = new Browser(api.base);
      assert.equal((await invitee.post('/api/auth/signup', body(address))).status, 201);
      assert.deepEqual((await invitee.post('/api/teams/invitations/accept', { token: inv.token })).body, { ok: true });
    } finally {
      config.signupPolicy = saved.signupPolicy;
    }
  });

  it('an accept racing a revoke: exactly one wins, and the team and the workflow agree with it', async () => {
    const t = await teamFixture(api.base);
    const runs = await Promise.all(
      Array.from({ length: 4 }, async () => {
        const address = teamEmail();
        const inv = (await t.owner.b.post(`/api/teams/${t.uuid}/invitations`, { email: address })).body.invitation;
        const invitee = await person(api.base, 'Racer', address);
        const [accept, revoke, again] = await Promise.all([
          invitee.b.post('/api/teams/invitations/accept', { token: inv.token }),
          t.admin.b.req('PATCH', `/api/teams/${t.uuid}/invitations`, { action: 'revoke', id: inv.id }),
          invitee.b.post('/api/teams/invitations/accept', { token: inv.token }),
        ]);
        return { inv, invitee, statuses: [accept.status, revoke.status, again.status] };
      }),
    );
    for (const { inv, invitee, statuses } of runs) {
      assert.equal(statuses.filter((x) => x === 200).length, 1, JSON.stringify(statuses));
      assert.equal(statuses.filter((x) => x === 409).length, 2, JSON.stringify(statuses));
      const outcome = await temporal.client.workflow.getHandle(inv.id).result();
      const member = (await invitee.b.get(`/api/teams/${t.uuid}`)).status === 200;
      assert.equal(outcome, member ? 'accepted' : 'revoked');
      assert.equal(statuses[1] === 200, !member);
    }
  });

  it("deleting a team ends its pending invitations' workflows", async () => {
    const t = await teamFixture(api.base);
    const inv = (await t.owner.b.post(`/api/teams/${t.uuid}/invitations`, { email: teamEmail() })).body.invitation;
    assert.equal((await t.owner.b.req('DELETE', `/api/teams/${t.uuid}`, { name: t.name })).status, 200);
    assert.equal(await temporal.client.workflow.getHandle(inv.id).result(), 'gone');
    const lookup = await new Browser(api.base).get(`/api/teams/invitations/lookup?token=${inv.token}`);
    assertTeamsError(lookup, 404, 'NOT_FOUND');
  });

  it('revokes by token; the revoked invitation cannot be accepted (409)', async () => {
    const t = await teamFixture(api.base);
    const address = teamEmail();
    const inv = (await t.owner.b.post(`/api/teams/${t.uuid}/invitations`, { email: address, role: 'admin' })).body
      .invitation;
    assert.equal(inv.role, 'admin');
    const revoked = await t.admin.b.req('PATCH', `/api/teams/${t.uuid}/invitations`, {
      action: 'revoke',
      token: inv.token,
    });
    assert.deepEqual(revoked.body, { ok: true });
    assert.equal(await temporal.client.workflow.getHandle(inv.id).result(), 'revoked');
    const invitee = await person(api.base, 'Late', address);
    assertTeamsError(await invitee.b.post('/api/teams/invitations/accept', { token: inv.token }), 409, 'CONFLICT');
    assertTeamsError(
      await t.admin.b.req('PATCH', `/api/teams/${t.uuid}/invitations`, { action: 'revoke', id: 'teaminv_nope' }),
      404,
      'NOT_FOUND',
    );
    assertTeamsError(
      await t.admin.b.req('PATCH', `/api/teams/${t.uuid}/invitations`, { action: 'revoke' }),
      422,
      'INVALID_INPUT',
    );
  });

  it('expires an invitation on the workflow timer (a 2 s TTL setting); accepting it then is 409', async () => {
    config.teamInvitationTtlSeconds = 2;
    const t = await teamFixture(api.base);
    const address = teamEmail();
    const inv = (await t.owner.b.post(`/api/teams/${t.uuid}/invitations`, { email: address })).body.invitation;
    assert.ok(new Date(inv.expires_at).getTime() - new Date(inv.created_at).getTime() <= 2000);
    await smtp.next(address);
    assert.equal(await temporal.client.workflow.getHandle(inv.id).result(), 'expired');
    const row = await db().pool.query('SELECT status FROM team_invitations WHERE id = $1', [inv.id]);
    assert.equal(row.rows[0].status, 'expired');
    const invitee = await person(api.base, 'Slow', address);
    const r = await invitee.b.post('/api/teams/invitations/accept', { token: inv.token });
    assertTeamsError(r, 409, 'CONFLICT');
    assert.equal(r.body.details.reason, 'invitation_expired');
    const lookup = await invitee.b.get(`/api/teams/invitations/lookup?token=${inv.token}`);
    assert.equal(lookup.body.status, 'expired');
    // the history shows the timer firing and the expiry recorded
    const history = await temporal.client.workflow.getHandle(inv.id).fetchHistory();
    const types = history.events!.map((e) => Number(e.eventType));
    assert.ok(types.includes(EventType.EVENT_TYPE_TIMER_FIRED), `no timer fired: ${types}`);
  });

  it('invite link: enable/disable, e-mail it (403 disabled, 5 a minute), join requests and their rules', async () => {
    const t = await teamFixture(api.base);
    const link = `/api/teams/${t.uuid}/invite-link`;
    assert.deepEqual((await t.admin.b.get(link)).body, { enabled: false, token: null });
    assertTeamsError(await t.admin.b.post(`${link}/email`, { emails: [teamEmail()] }), 403, 'FORBIDDEN');
    const on = await t.admin.b.post(link, {});
    assert.equal(on.body.enabled, true);
    const token = on.body.token as string;
    assert.ok(token.length >= 16);
    assert.equal((await t.owner.b.get(`/api/teams/${t.uuid}`)).body.team.invite_link_token, token);
    const anon = await new Browser(api.base).get(`/api/teams/invitations/lookup?token=${token}`);
    assert.deepEqual(anon.body, { type: 'link', teamName: t.name, enabled: true });
    // e-mail it: the message carries the link; 11 addresses is 422, more than 5 a minute is 429
    const to = [teamEmail(), teamEmail(), teamEmail()];
    assert.deepEqual((await t.admin.b.post(`${link}/email`, { emails: to })).body, { ok: true });
    for (const address of to) assert.equal(tokenIn((await smtp.next(address)).text), token);
    assertTeamsError(
      await t.admin.b.post(`${link}/email`, { emails: Array.from({ length: 11 }, teamEmail) }),
      422,
      'INVALID_INPUT',
    );
    assertTeamsError(await t.admin.b.post(`${link}/email`, { emails: [] }), 422, 'INVALID_INPUT');
    const over = await t.admin.b.post(`${link}/email`, { emails: [teamEmail(), teamEmail(), teamEmail()] });
    assertTeamsError(over, 429, 'RATE_LIMITED');
    assert.ok(Number(over.headers.get('retry-after')) >= 1);
    // join by the link: a pending request; asking twice is the same request
    const joiner = await person(api.base, 'Joiner');
    const asked = await joiner.b.post('/api/teams/join', { token });
    assert.equal(asked.status, 200);
    assert.equal(asked.body.ok, true);
    assert.equal((await joiner.b.post('/api/teams/join', { token })).body.requestId, asked.body.requestId);
    assert.deepEqual((await t.member.b.post('/api/teams/join', { token })).body, { ok: true, alreadyMember: true });
    const requests = (await t.admin.b.get(`/api/teams/${t.uuid}/join-requests`)).body.requests;
    const mine = requests.find((r: any) => r.id === asked.body.requestId);
    assert.deepEqual(
      { user_id: mine.user_id, status: mine.status, name: mine.name, email: mine.email },
      { user_id: joiner.user.id, status: 'pending', name: 'Joiner', email: joiner.user.email },
    );
    const jr = `/api/teams/${t.uuid}/join-requests`;
    assertTeamsError(await t.admin.b.req('DELETE', jr, { id: mine.id }), 409, 'CONFLICT');
    assert.equal((await t.admin.b.req('PATCH', jr, { id: mine.id })).status, 200);
    assert.equal((await joiner.b.get(`/api/teams/${t.uuid}`)).body.team.role, 'member');
    assertTeamsError(await t.admin.b.req('PATCH', jr, { id: mine.id, action: 'reject' }), 409, 'CONFLICT');
    assert.equal((await t.admin.b.req('DELETE', jr, { id: mine.id })).status, 200);
    assertTeamsError(await t.admin.b.req('DELETE', jr, { id: mine.id }), 404, 'NOT_FOUND');
    // a rejected request, and a withdrawn one
    const second = await person(api.base, 'Second');
    const req2 = (await second.b.post('/api/teams/join', { token })).body.requestId;
    assert.equal((await t.owner.b.req('PATCH', jr, { id: req2, action: 'reject' })).status, 200);
    assertTeamsError(await second.b.get(`/api/teams/${t.uuid}`), 404, 'NOT_FOUND');
    const third = await person(api.base, 'Third');
    await third.b.post('/api/teams/join', { token });
    assert.deepEqual((await third.b.req('DELETE', '/api/teams/join', { token })).body, { ok: true });
    assertTeamsError(await third.b.req('DELETE', '/api/teams/join', { token }), 404, 'NOT_FOUND');
    // disabled: joining is refused, the token kept for when it is enabled again
    const off = await t.admin.b.post(link, { action: 'disable' });
    assert.deepEqual(off.body, { enabled: false, token });
    assertTeamsError(await third.b.post('/api/teams/join', { token }), 403, 'FORBIDDEN');
    assertTeamsError(await third.b.post('/api/teams/join', { token: 'z'.repeat(43) }), 404, 'NOT_FOUND');
  });
});
