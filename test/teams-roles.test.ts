// Role × route: every teams route as the owner, an admin, a member, someone outside the team and
// someone signed out, on a fresh team each time (so one role's change cannot decide another's answer).
import assert from 'node:assert/strict';
import { Browser, startTrustingApi } from './support/browser.js';
import { person, teamEmail, teamFixture, type TeamFixture } from './support/teams.js';
import { useTemporal } from './support/temporal.js';
import { db } from '../activities/db.js';

type Role = 'owner' | 'admin' | 'member';
const ROLES: Role[] = ['owner', 'admin', 'member'];

interface RouteCase {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  path: string;
  /** the roles allowed; the others get 403 */
  allowed: Role[];
  body?: (t: TeamFixture) => Promise<unknown> | unknown;
  /** the answer an allowed role gets (default 200) */
  status?: number;
  /** what a forbidden role gets, where the route's own rule comes first (owner leaving: 403 anyway) */
  needsWorkflow?: boolean;
}

/** A pending invitation, made through the API (so through its workflow). */
async function invitation(t: TeamFixture): Promise<string> {
  const r = await t.owner.b.req('POST', `/api/teams/${t.uuid}/invitations`, { email: teamEmail() });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.invitation.id;
}

async function joinRequest(t: TeamFixture, status: 'pending' | 'rejected'): Promise<string> {
  const asker = await person(t.owner.b.base, 'Asker');
  const { rows } = await db().pool.query(
    `INSERT INTO team_join_requests (id, team_id, user_id, status) VALUES (gen_random_uuid(), $1, $2, $3) RETURNING id`,
    [t.id, asker.user.id, status],
  );
  return rows[0].id;
}

const CASES: RouteCase[] = [
  { method: 'GET', path: '', allowed: ROLES },
  { method: 'PATCH', path: '', allowed: ['owner', 'admin'], body: () => ({ status: 'paused' }) },
  { method: 'DELETE', path: '', allowed: ['owner'], body: (t) => ({ name: t.name }) },
  { method: 'GET', path: '/members', allowed: ROLES },
  {
    method: 'PATCH',
    path: '/members',
    allowed: ['owner', 'admin'],
    body: (t) => ({ sessionId: t.target.user.id, role: 'admin' }),
  },
  {
    method: 'PATCH',
    path: '/members',
    allowed: ['owner', 'admin'],
    body: (t) => ({ sessionId: t.target.user.id, usage_limit_usd: 2.5, usage_limit_enforced: true }),
  },
  { method: 'DELETE', path: '/members', allowed: ['owner', 'admin'], body: (t) => ({ sessionId: t.target.user.id }) },
  { method: 'GET', path: '/members/self', allowed: ROLES },
  { method: 'PATCH', path: '/members/self', allowed: ROLES, body: () => ({ name: 'Me', bill_to_team: true }) },
  // the owner may not leave (403 by the route's own rule)
  { method: 'POST', path: '/leave', allowed: ['admin', 'member'], body: () => ({}) },
  { method: 'GET', path: '/invitations', allowed: ['owner', 'admin'] },
  {
    method: 'POST',
    path: '/invitations',
    allowed: ['owner', 'admin'],
    body: () => ({ email: teamEmail(), role: 'member' }),
    status: 200,
  },
  {
    method: 'PATCH',
    path: '/invitations',
    allowed: ['owner', 'admin'],
    body: async (t) => ({ action: 'revoke', id: await invitation(t) }),
  },
  { method: 'GET', path: '/invite-link', allowed: ['owner', 'admin'] },
  { method: 'POST', path: '/invite-link', allowed: ['owner', 'admin'], body: () => ({ action: 'enable' }) },
  {
    method: 'POST',
    path: '/invite-link/email',
    allowed: ['owner', 'admin'],
    body: async (t) => {
      await db().pool.query(
        `UPDATE teams SET invite_link_enabled = true, invite_link_token = gen_random_uuid()::text WHERE id = $1`,
        [t.id],
      );
      return { emails: [teamEmail()] };
    },
  },
  { method: 'GET', path: '/join-requests', allowed: ['owner', 'admin'] },
  {
    method: 'PATCH',
    path: '/join-requests',
    allowed: ['owner', 'admin'],
    body: async (t) => ({ action: 'accept', id: await joinRequest(t, 'pending') }),
  },
  {
    method: 'DELETE',
    path: '/join-requests',
    allowed: ['owner', 'admin'],
    body: async (t) => ({ id: await joinRequest(t, 'rejected') }),
  },
  { method: 'GET', path: '/usage', allowed: ROLES },
  {
    method: 'PATCH',
    path: '/settings',
    allowed: ['owner', 'admin'],
    body: () => ({ default_member_usage_limit_usd: 1, team_usage_limit_usd: null, usage_limit_enforced: true }),
  },
  { method: 'GET', path: '/allowed-models', allowed: ROLES },
  {
    method: 'PATCH',
    path: '/allowed-models',
    allowed: ['owner', 'admin'],
    body: () => ({ allowed_models: { 'openai/gpt-4o': false } }),
  },
  { method: 'POST', path: '/owner', allowed: ['owner'], body: (t) => ({ sessionId: t.target.user.id }) },
];

function assertTeamsError(r: { status: number; body: any }, status: number, code: string, what: string) {
  assert.equal(r.status, status, `${what}: ${JSON.stringify(r.body)}`);
  assert.equal(r.body.code, code, what);
  assert.equal(r.body.status, status, what);
  assert.equal(typeof r.body.message, 'string', what);
  assert.ok('details' in r.body, what);
}

describe('teams: role × route', function () {
  this.timeout(180_000);
  let api: Awaited<ReturnType<typeof startTrustingApi>>;
  before(async () => {
    await useTemporal();
    api = await startTrustingApi();
  });
  after(() => api.close());

  for (const c of CASES) {
    const label = `${c.method} /api/teams/{team}${c.path}`;
    it(`${label}: ${c.allowed.join('/')} allowed; others 403, outsiders 404, signed out 401`, async () => {
      // the refusals, on one team (nothing changes)
      const t = await teamFixture(api.base);
      const path = `/api/teams/${t.uuid}${c.path}`;
      const bodyFor = async (team: TeamFixture) => (c.body ? await c.body(team) : undefined);
      const signedOut = new Browser(api.base);
      assertTeamsError(await signedOut.req(c.method, path, await bodyFor(t)), 401, 'UNAUTHORIZED', 'signed out');
      assertTeamsError(await t.outsider.b.req(c.method, path, await bodyFor(t)), 404, 'NOT_FOUND', 'outsider');
      for (const role of ROLES.filter((r) => !c.allowed.includes(r))) {
        assertTeamsError(await t[role].b.req(c.method, path, await bodyFor(t)), 403, 'FORBIDDEN', role);
      }
      // each allowed role on a team of its own, by numeric id this time
      await Promise.all(
        c.allowed.map(async (role) => {
          const own = await teamFixture(api.base);
          const r = await own[role].b.req(c.method, `/api/teams/${own.id}${c.path}`, await bodyFor(own));
          assert.equal(r.status, c.status ?? 200, `${role}: ${JSON.stringify(r.body)}`);
        }),
      );
    });
  }

  it('routes without a team: list and create (any user), accept and join (a user), lookup (anyone)', async () => {
    const t = await teamFixture(api.base);
    const signedOut = new Browser(api.base);
    assertTeamsError(await signedOut.get('/api/teams'), 401, 'UNAUTHORIZED', 'list signed out');
    assertTeamsError(await signedOut.post('/api/teams', { name: 'Nope' }), 401, 'UNAUTHORIZED', 'create signed out');
    const token = 'x'.repeat(43);
    assertTeamsError(
      await signedOut.post('/api/teams/invitations/accept', { token }),
      401,
      'UNAUTHORIZED',
      'accept signed out',
    );
    assertTeamsError(await signedOut.post('/api/teams/join', { token }), 401, 'UNAUTHORIZED', 'join signed out');
    assertTeamsError(await signedOut.req('DELETE', '/api/teams/join', { token }), 401, 'UNAUTHORIZED', 'leave request');
    // lookup needs no session: an unknown token is 404
    assertTeamsError(await signedOut.get(`/api/teams/invitations/lookup?token=${token}`), 404, 'NOT_FOUND', 'lookup');
    // every role sees its own teams with its role
    for (const role of ROLES) {
      const list = await t[role].b.get('/api/teams');
      assert.equal(list.status, 200);
      const mine = list.body.teams.find((x: { uuid: string }) => x.uuid === t.uuid);
      assert.deepEqual(
        { uuid: mine.uuid, name: mine.name, status: mine.status, role: mine.role },
        {
          uuid: t.uuid,
          name: t.name,
          status: 'active',
          role,
        },
      );
    }
    const outsiderList = await t.outsider.b.get('/api/teams');
    assert.deepEqual(outsiderList.body.teams, []);
    // an API key is not a session: the teams API refuses it
    const apiKeyOnly = new Browser(api.base);
    const r = await apiKeyOnly.get('/api/teams', {
      authorization: 'Bearer sk-nanogpt-00000000-0000-0000-0000-000000000000',
    });
    assertTeamsError(r, 401, 'UNAUTHORIZED', 'api key');
  });
});
