// The teams API (spec, "Teams"): session cookie only, successes 200 with the spec's bodies, the
// teams envelope {code, message, details, status}, validation failures 422 INVALID_INPUT naming the
// field. A team is named by its numeric id or its UUID. Roles: owner and admins view and manage;
// only the owner deletes the team or hands it over; members view. A team the caller is not in answers 404, like one that does not exist.
// The work is in activities/accounts/teams.ts and teamInvitations.ts; invitations are workflows
// (workflows/teamInvitation.ts, started and driven through teamInvitationJobs.ts).
import Router from '@koa/router';
import { surface } from '../middleware/surface.js';
import { requireSession } from '../middleware/auth.js';
import { validateBody, validateQuery } from '../validate.js';
import { publicOrigin } from '../paths.js';
import type { AppContext, AppState } from '../state.js';
import * as s from '../../activities/surfaces/schemas/teams.js';
import {
  allowedModelsView,
  setAllowedModels,
  teamUsage,
  updateSettings,
} from '../../activities/accounts/teamSettings.js';
import {
  badRequest,
  createTeam,
  deleteTeam,
  forbidden,
  listTeams,
  type Membership,
  membership,
  notFound,
  requireManager,
  teamDetail,
  teamSummary,
  updateTeam,
} from '../../activities/accounts/teams.js';
import {
  leaveTeam,
  listMembers,
  ownPreferences,
  removeMember,
  transferOwnership,
  updateMember,
  updateOwnPreferences,
  usdUnits,
} from '../../activities/accounts/teamMembers.js';
import {
  decideJoinRequest,
  deleteJoinRequest,
  emailInviteLink,
  invitationByToken,
  invitationView,
  inviteLinkView,
  joinRequestView,
  listInvitations,
  listJoinRequests,
  lookupToken,
  notPending,
  requestToJoin,
  setInviteLink,
  findTeamInvitation,
  withdrawJoinRequest,
} from '../../activities/accounts/teamInvitations.js';
import {
  acceptThroughWorkflow,
  inviteByEmail,
  revokeAll,
  revokeThroughWorkflow,
} from '../../activities/accounts/teamInvitationJobs.js';

export const teamsRouter = new Router<AppState>();

const TEAM = '/api/teams/:team';
const teams = () => surface('teams');
const body = <T>(ctx: AppContext) => ctx.request.body as T;

/** The signed-in user (a session always has one). */
function userId(ctx: AppContext): number {
  return ctx.state.caller.userId!;
}

const team = (ctx: AppContext): Promise<Membership> => membership(ctx.params.team!, userId(ctx));

/** Where links in e-mails point: SWITCHYARD_PUBLIC_URL, else where the caller reached us. */
function linkBase(ctx: AppContext): string {
  const configured = process.env.SWITCHYARD_PUBLIC_URL?.replace(/\/+$/, '');
  return configured || publicOrigin(ctx);
}

const ok = (ctx: AppContext, extra: Record<string, unknown> = {}) => {
  ctx.body = { ok: true, ...extra };
};

// ---- routes without a team in the path (registered first: /join is not a team id) ----

teamsRouter.get('/api/teams/invitations/lookup', teams(), validateQuery(s.lookupQuerySchema), async (ctx) => {
  ctx.set('Cache-Control', 'no-store');
  ctx.body = await lookupToken(String(ctx.state.query.token));
});

teamsRouter.post('/api/teams/invitations/accept', teams(), requireSession, validateBody(s.tokenSchema), async (ctx) => {
  const invitation = await invitationByToken(body<{ token: string }>(ctx).token);
  if (!invitation) throw notFound('No invitation has this token.', 'invitation_not_found');
  const result = await acceptThroughWorkflow(invitation.id, userId(ctx));
  if (!result) {
    // the workflow has closed: the invitation was settled or expired
    const now = await invitationByToken(invitation.token);
    throw notPending(invitationView(now ?? invitation).status);
  }
  if (result.ok) return ok(ctx, result.alreadyMember ? { alreadyMember: true } : {});
  if (result.reason === 'not_pending') throw notPending(result.status);
  if (result.reason === 'gone') throw notFound('This invitation no longer exists.', 'invitation_not_found');
  throw forbidden(
    'This invitation was sent to another e-mail address; sign in as that address to accept it.',
    'invitation_email_mismatch',
  );
});

teamsRouter.post('/api/teams/join', teams(), requireSession, validateBody(s.tokenSchema), async (ctx) => {
  const r = await requestToJoin(body<{ token: string }>(ctx).token, userId(ctx));
  if (r.alreadyMember) return ok(ctx, { alreadyMember: true });
  ok(ctx, { status: 'pending', requestId: r.id });
});

teamsRouter.delete('/api/teams/join', teams(), requireSession, validateBody(s.tokenSchema), async (ctx) => {
  await withdrawJoinRequest(body<{ token: string }>(ctx).token, userId(ctx));
  ok(ctx);
});

// ---- teams ----

teamsRouter.get('/api/teams', teams(), requireSession, async (ctx) => {
  ctx.body = { teams: (await listTeams(userId(ctx))).map(teamSummary) };
});

teamsRouter.post('/api/teams', teams(), requireSession, validateBody(s.createTeamSchema), async (ctx) => {
  const m = await createTeam(userId(ctx), body<{ name: string }>(ctx).name);
  ctx.body = { team: teamSummary(m) };
});

teamsRouter.get(TEAM, teams(), requireSession, async (ctx) => {
  ctx.body = { team: await teamDetail(await team(ctx)) };
});

teamsRouter.patch(TEAM, teams(), requireSession, validateBody(s.patchTeamSchema), async (ctx) => {
  const patch = body<{ name?: string; status?: 'active' | 'paused' | 'suspended' }>(ctx);
  ctx.body = { team: await teamDetail(await updateTeam(await team(ctx), patch)) };
});

teamsRouter.delete(TEAM, teams(), requireSession, validateBody(s.deleteTeamSchema), async (ctx) => {
  const pending = await deleteTeam(await team(ctx), body<{ name: string }>(ctx).name);
  await revokeAll(pending);
  ok(ctx);
});

// ---- members ----

teamsRouter.get(`${TEAM}/members`, teams(), requireSession, validateQuery(s.membersQuerySchema), async (ctx) => {
  const q = ctx.state.query as { page: number; limit?: number };
  ctx.body = await listMembers(await team(ctx), q.page, q.limit);
});

interface MemberPatch {
  sessionId: number;
  role?: 'admin' | 'member';
  usage_limit_usd?: number | null;
  usage_limit_enforced?: boolean;
}

teamsRouter.patch(`${TEAM}/members`, teams(), requireSession, validateBody(s.patchMemberSchema), async (ctx) => {
  const b = body<MemberPatch>(ctx);
  await updateMember(await team(ctx), {
    sessionId: b.sessionId,
    role: b.role,
    usageLimit: usdUnits(b.usage_limit_usd),
    usageLimitEnforced: b.usage_limit_enforced,
  });
  ok(ctx);
});

teamsRouter.delete(`${TEAM}/members`, teams(), requireSession, validateBody(s.memberRefSchema), async (ctx) => {
  await removeMember(await team(ctx), body<{ sessionId: number }>(ctx).sessionId);
  ok(ctx);
});

teamsRouter.get(`${TEAM}/members/self`, teams(), requireSession, async (ctx) => {
  ctx.body = await ownPreferences(await team(ctx));
});

teamsRouter.patch(`${TEAM}/members/self`, teams(), requireSession, validateBody(s.patchSelfSchema), async (ctx) => {
  const m = await team(ctx);
  const b = body<{ bill_to_team?: boolean; name?: string }>(ctx);
  await updateOwnPreferences(m, { billToTeam: b.bill_to_team, name: b.name });
  ctx.body = await ownPreferences(m);
});

teamsRouter.post(`${TEAM}/leave`, teams(), requireSession, validateBody(s.emptySchema), async (ctx) => {
  await leaveTeam(await team(ctx));
  ok(ctx);
});

teamsRouter.post(`${TEAM}/owner`, teams(), requireSession, validateBody(s.memberRefSchema), async (ctx) => {
  await transferOwnership(await team(ctx), body<{ sessionId: number }>(ctx).sessionId);
  ok(ctx);
});

// ---- invitations ----

teamsRouter.get(`${TEAM}/invitations`, teams(), requireSession, async (ctx) => {
  ctx.set('Cache-Control', 'no-store');
  ctx.body = { invitations: (await listInvitations(await team(ctx))).map(invitationView) };
});

teamsRouter.post(
  `${TEAM}/invitations`,
  teams(),
  requireSession,
  validateBody(s.createInvitationSchema),
  async (ctx) => {
    const m = await team(ctx);
    const b = body<{ email: string; role?: 'admin' | 'member' }>(ctx);
    const invitation = await inviteByEmail(m, ctx.state.caller, b.email, b.role ?? 'member', linkBase(ctx));
    ctx.body = { invitation };
  },
);

teamsRouter.patch(
  `${TEAM}/invitations`,
  teams(),
  requireSession,
  validateBody(s.patchInvitationSchema),
  async (ctx) => {
    const ref = body<{ id?: string; token?: string }>(ctx);
    const invitation = await findTeamInvitation(await team(ctx), ref);
    const view = invitationView(invitation);
    if (view.status !== 'pending') throw notPending(view.status);
    const status = await revokeThroughWorkflow(invitation.id);
    if (status === undefined) throw notPending('expired');
    if (status === 'gone') throw notFound('This invitation no longer exists.', 'invitation_not_found');
    if (status !== 'revoked') throw notPending(status);
    ok(ctx);
  },
);

// ---- the invite link and join requests ----

teamsRouter.get(`${TEAM}/invite-link`, teams(), requireSession, async (ctx) => {
  const m = await team(ctx);
  requireManager(m);
  ctx.body = inviteLinkView(m);
});

teamsRouter.post(`${TEAM}/invite-link`, teams(), requireSession, validateBody(s.inviteLinkSchema), async (ctx) => {
  const action = body<{ action?: 'enable' | 'disable' }>(ctx).action ?? 'enable';
  ctx.body = await setInviteLink(await team(ctx), action === 'enable');
});

teamsRouter.post(
  `${TEAM}/invite-link/email`,
  teams(),
  requireSession,
  validateBody(s.inviteLinkEmailSchema),
  async (ctx) => {
    const from = ctx.state.session?.user.displayName ?? 'A team manager';
    await emailInviteLink(await team(ctx), body<{ emails: string[] }>(ctx).emails, linkBase(ctx), from);
    ok(ctx);
  },
);

teamsRouter.get(`${TEAM}/join-requests`, teams(), requireSession, async (ctx) => {
  ctx.body = { requests: (await listJoinRequests(await team(ctx))).map(joinRequestView) };
});

teamsRouter.patch(
  `${TEAM}/join-requests`,
  teams(),
  requireSession,
  validateBody(s.patchJoinRequestSchema),
  async (ctx) => {
    const b = body<{ id: string; action?: 'accept' | 'reject' }>(ctx);
    await decideJoinRequest(await team(ctx), b.id, b.action ?? 'accept');
    ok(ctx);
  },
);

teamsRouter.delete(
  `${TEAM}/join-requests`,
  teams(),
  requireSession,
  validateBody(s.joinRequestRefSchema),
  async (ctx) => {
    await deleteJoinRequest(await team(ctx), body<{ id: string }>(ctx).id);
    ok(ctx);
  },
);

// ---- usage, settings, allowed models ----

/** `from` defaults to the start of this month (UTC), `to` to now; a date alone means its midnight UTC. */
function usageWindow(q: { from?: string; to?: string }): { from: Date; to: Date } {
  const now = new Date();
  const from = q.from ? new Date(q.from) : new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  // a bare date as `to` includes that whole day
  const to = q.to ? new Date(new Date(q.to).getTime() + (q.to.length === 10 ? 86_400_000 : 0)) : now;
  if (from.getTime() > to.getTime()) throw badRequest("'from' is after 'to'.", 'invalid_date_range', 'from');
  return { from, to };
}

teamsRouter.get(`${TEAM}/usage`, teams(), requireSession, validateQuery(s.usageQuerySchema), async (ctx) => {
  const { from, to } = usageWindow(ctx.state.query as { from?: string; to?: string });
  ctx.body = await teamUsage(await team(ctx), from, to);
});

interface SettingsPatch {
  default_member_usage_limit_usd?: number | null;
  team_usage_limit_usd?: number | null;
  usage_limit_enforced?: boolean;
}

teamsRouter.patch(`${TEAM}/settings`, teams(), requireSession, validateBody(s.settingsSchema), async (ctx) => {
  const b = body<SettingsPatch>(ctx);
  await updateSettings(await team(ctx), {
    defaultMemberUsageLimit: usdUnits(b.default_member_usage_limit_usd),
    usageLimit: usdUnits(b.team_usage_limit_usd),
    usageLimitEnforced: b.usage_limit_enforced,
  });
  ok(ctx);
});

teamsRouter.get(`${TEAM}/allowed-models`, teams(), requireSession, async (ctx) => {
  ctx.body = allowedModelsView((await team(ctx)).team.allowedModels);
});

teamsRouter.patch(
  `${TEAM}/allowed-models`,
  teams(),
  requireSession,
  validateBody(s.allowedModelsSchema),
  async (ctx) => {
    const allowed = body<{ allowed_models: Record<string, boolean> | null }>(ctx).allowed_models;
    ctx.body = await setAllowedModels(await team(ctx), allowed);
  },
);
