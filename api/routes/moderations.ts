// POST /api/v1/moderations (and /v1/...): OpenAI's moderations API for clients that call it
// directly, answered in OpenAI's shape (`id`, `model`, `results`) plus the usage and the bill
// (`cost`, `paymentSource`, `remainingBalance`, the pricing extension). Billed like the `moderation`
// header's preflight (activities/moderation/moderate.ts), flagged or not.
import Router from '@koa/router';
import { clientAbortSignal } from '../clientAbort.js';
import { chargeOnDelivery } from '../delivery.js';
import { authenticate } from '../middleware/auth.js';
import { refuseUnofferedFeatures } from '../middleware/notOffered.js';
import { surface } from '../middleware/surface.js';
import { v1 } from '../paths.js';
import { moderationsRequestSchema } from '../../activities/surfaces/schemas/moderations.js';
import { validateBody } from '../validate.js';
import { DEFAULT_MODERATION_MODEL, ModerationCall, moderationInputOf } from '../../activities/moderation/moderate.js';
import { billOf } from '../../activities/metering/meteredCall.js';
import { withBill } from '../../activities/surfaces/chatResponse.js';
import type { AppState } from '../state.js';

export const moderationsRouter = new Router<AppState>();

moderationsRouter.post(
  v1('/moderations'),
  surface('openai'),
  authenticate,
  refuseUnofferedFeatures,
  validateBody(moderationsRequestSchema),
  async (ctx) => {
    const body = ctx.request.body as { model?: string; input: unknown };
    const input = moderationInputOf(body.input);
    const call = new ModerationCall(
      ctx.state.caller,
      ctx.state.requestId,
      body.model ?? DEFAULT_MODERATION_MODEL,
      input,
      {
        surface: 'moderations',
        param: 'model',
      },
    );
    const out = await call.run(clientAbortSignal(ctx));
    chargeOnDelivery(ctx, call.metered);
    ctx.body = withBill(
      {
        id: `modr-${String(ctx.state.requestId).slice(4)}`,
        model: call.model.id,
        results: out.verdicts,
        usage: { prompt_tokens: out.tokens, total_tokens: out.tokens },
      },
      { ...billOf(out.charge), inputTokens: out.tokens, outputTokens: 0 },
    );
  },
);
