// Subscriptions (README, Subscriptions): the plans on offer, subscribe and cancel (not in the spec:
// kept small), and the spec's usage record. A signed-in user or an API key; the subscription is
// the account's. Subscribing waits for the workflow's first payment: 200 when the balance paid it,
// 402 when it did not. /api/subscription/v1/chat/completions is the chat route (routes/chat.ts).
import Router from '@koa/router';
import { catalog } from '../../activities/catalog/catalog.js';
import {
  cancelSubscription,
  planView,
  subscribe,
  subscriptionUsage,
} from '../../activities/subscriptions/subscriptions.js';
import { authenticate } from '../middleware/auth.js';
import { surface } from '../middleware/surface.js';
import { subscribeRequestSchema } from '../../activities/surfaces/schemas/subscriptions.js';
import type { AppState } from '../state.js';
import { validateBody } from '../validate.js';

export const subscriptionsRouter = new Router<AppState>();

const BASE = '/api/subscription/v1';

subscriptionsRouter.get(`${BASE}/plans`, surface('openai'), (ctx) => {
  ctx.body = { object: 'list', data: catalog().plans.map(planView) };
});

subscriptionsRouter.get(`${BASE}/usage`, surface('openai'), authenticate, async (ctx) => {
  ctx.body = await subscriptionUsage(ctx.state.caller.accountId);
});

subscriptionsRouter.post(
  `${BASE}/subscribe`,
  surface('openai'),
  authenticate,
  validateBody(subscribeRequestSchema),
  async (ctx) => {
    ctx.body = await subscribe(ctx.state.caller.accountId, (ctx.request.body as { plan: string }).plan);
  },
);

subscriptionsRouter.post(`${BASE}/cancel`, surface('openai'), authenticate, async (ctx) => {
  ctx.body = await cancelSubscription(ctx.state.caller.accountId);
});
