// Credit invitations and referral links (activities/invitations/): create (the issuer's balance
// is held for the amount), redeem (a signed-in user or an API key; credits once), revoke, list,
// and a public lookup by code. Errors in the legacy envelope, as the spec's invitation errors are.
import Router from '@koa/router';
import { surface } from '../middleware/surface.js';
import { authenticate } from '../middleware/auth.js';
import { validateBody, validateQuery } from '../validate.js';
import { publicOrigin } from '../paths.js';
import {
  createInvitationSchema,
  invitationCodeSchema,
  lookupInvitationQuerySchema,
} from '../../activities/surfaces/schemas/invitations.js';
import { RequestError } from '../../activities/core/errors.js';
import { formatAmount } from '../../activities/core/money.js';
import {
  type CreateInvitationInput,
  closeCreditInvitation,
  invitationByCode,
  invitationView,
  issuersInvitation,
  listCreditInvitations,
  lookupView,
  redeemCreditInvitation,
} from '../../activities/invitations/creditInvitations.js';
import { createCreditInvitation, signalInvitationEnded } from '../../activities/invitations/creditInvitationJobs.js';
import type { AppState } from '../state.js';

export const invitationsRouter = new Router<AppState>();

const notFound = () =>
  new RequestError(404, 'invitation_not_found', 'No invitation has this code. Check it for typos.', { param: 'code' });

invitationsRouter.post(
  '/api/invitations/create',
  surface('legacy'),
  authenticate,
  validateBody(createInvitationSchema),
  async (ctx) => {
    let row: Awaited<ReturnType<typeof createCreditInvitation>>;
    try {
      row = await createCreditInvitation(ctx.state.caller, ctx.request.body as CreateInvitationInput);
    } catch (err) {
      if (err instanceof RequestError && err.status < 500) throw err;
      console.error(`[invitations] ${ctx.state.requestId}: could not create an invitation:`, err);
      throw new RequestError(500, 'invitation_failed', 'Failed to create invitation');
    }
    ctx.body = invitationView(row, publicOrigin(ctx));
  },
);

invitationsRouter.post(
  '/api/invitations/redeem',
  surface('legacy'),
  authenticate,
  validateBody(invitationCodeSchema),
  async (ctx) => {
    const code = String((ctx.request.body as { code: string }).code);
    const result = await redeemCreditInvitation(code, ctx.state.caller.accountId);
    if (!result.ok) {
      switch (result.reason) {
        case 'not_found':
          throw notFound();
        case 'own':
          throw new RequestError(400, 'own_invitation', 'You cannot redeem your own invitation; send the code on.');
        case 'already_used':
          throw new RequestError(409, 'already_redeemed', 'Your account has already redeemed this code.');
        default:
          throw new RequestError(409, `invitation_${result.status}`, `This invitation is ${result.status}.`);
      }
    }
    if (result.type === 'invitation') await signalInvitationEnded(result.invitationId, 'redeemed');
    ctx.body = {
      ok: true,
      type: result.type,
      amount: result.currency ? Number(formatAmount(result.amount, result.currency)) : 0,
      currency: result.currency,
      ...(result.balanceAfter !== undefined && result.currency
        ? { balance: formatAmount(result.balanceAfter, result.currency) }
        : {}),
    };
  },
);

invitationsRouter.post(
  '/api/invitations/revoke',
  surface('legacy'),
  authenticate,
  validateBody(invitationCodeSchema),
  async (ctx) => {
    const i = await issuersInvitation(ctx.state.caller.accountId, (ctx.request.body as { code: string }).code);
    if (!i) throw notFound();
    const was = lookupView(i).status;
    if (was !== 'active')
      throw new RequestError(409, `invitation_${was}`, `This invitation is ${was}; it can no longer be revoked.`);
    const status = await closeCreditInvitation(i.id, 'revoked', ctx.state.caller.accountId);
    if (status === 'not_found') throw notFound();
    if (status !== 'revoked')
      throw new RequestError(409, `invitation_${status}`, `This invitation is ${status}; it can no longer be revoked.`);
    if (i.expiresAt) await signalInvitationEnded(i.id, 'revoked');
    ctx.body = { ok: true, status };
  },
);

invitationsRouter.get('/api/invitations', surface('legacy'), authenticate, async (ctx) => {
  const base = publicOrigin(ctx);
  const rows = await listCreditInvitations(ctx.state.caller.accountId);
  ctx.body = {
    invitations: rows.map((i) => ({ ...invitationView(i, base), ...lookupView(i), createdAt: i.createdAt })),
  };
});

invitationsRouter.get(
  '/api/invitations/lookup',
  surface('legacy'),
  validateQuery(lookupInvitationQuerySchema),
  async (ctx) => {
    const i = await invitationByCode(String(ctx.state.query.code));
    if (!i) throw notFound();
    ctx.body = lookupView(i);
  },
);
