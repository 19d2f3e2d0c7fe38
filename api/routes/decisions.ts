// POST /api/v1/decisions and POST /api/v1/systemone (and /v1/...): decision models answer named,
// typed questions about a state with probabilities (spec "Decisions"; wire-details "Decisions").
// The System One route speaks that SDK's wire format ({model, state, questions} in; {model,
// answers, usage} out) and also takes its model names without a vendor prefix. Both answers
// carry the bill (`cost`, `paymentSource`, `remainingBalance`, the pricing extension) and
// `method`: how the probabilities were made ("logprobs" or "structured_generation").
import Router from '@koa/router';
import { decideOnce } from '../../activities/inference/decide.js';
import { KoaExchange } from '../exchange.js';
import { authenticate } from '../middleware/auth.js';
import { refuseUnofferedFeatures } from '../middleware/notOffered.js';
import { surface } from '../middleware/surface.js';
import { v1 } from '../paths.js';
import { decisionsRequestSchema } from '../../activities/surfaces/schemas/decisions.js';
import { validateBody } from '../validate.js';
import type { DecisionsBody } from '../../activities/decisions/decide.js';
import { withBill } from '../../activities/surfaces/chatResponse.js';
import type { AppState } from '../state.js';

export const decisionsRouter = new Router<AppState>();

const preamble = [surface('openai'), authenticate, refuseUnofferedFeatures, validateBody(decisionsRequestSchema)];

decisionsRouter.post(v1('/decisions'), ...preamble, async (ctx) => {
  const { plan, decision, bill } = await decideOnce(new KoaExchange(ctx), ctx.request.body as DecisionsBody);
  ctx.body = withBill(
    {
      id: `decision_${ctx.state.requestId.slice(4)}`,
      model: plan.model.id,
      provider: decision.route.provider.id,
      answers: decision.answers,
      method: decision.method,
      usage: { input_tokens: decision.inputTokens, output_tokens: decision.outputTokens },
    },
    bill,
  );
});

decisionsRouter.post(v1('/systemone'), ...preamble, async (ctx) => {
  const { plan, decision, bill } = await decideOnce(new KoaExchange(ctx), ctx.request.body as DecisionsBody, {
    bareNames: true,
    surface: 'systemone',
  });
  ctx.body = withBill(
    {
      model: plan.model.id,
      answers: decision.answers,
      method: decision.method,
      usage: { input_tokens: decision.inputTokens, output_tokens: decision.outputTokens },
    },
    bill,
  );
});
