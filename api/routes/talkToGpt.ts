// POST /api/talk-to-gpt: the legacy text endpoint. Key in `x-api-key` (Bearer works too), errors in
// the legacy envelope. A chat request underneath (chat's translation, planner and money path);
// the answer is text/plain: the reply, then `<NanoGPT>{"cost",...}</NanoGPT>` (tag per service name).
import Router from '@koa/router';
import { surface } from '../middleware/surface.js';
import { authenticate } from '../middleware/auth.js';
import { refuseUnofferedFeatures } from '../middleware/notOffered.js';
import { validateBody } from '../validate.js';
import { talkToGptRequestSchema } from '../schemas/talkToGpt.js';
import { completeOnce } from '../inference.js';
import type { Caller } from '../../activities/accounts/keys.js';
import { talkReply, talkToInternal } from '../../activities/surfaces/talkToGpt.js';
import { prepareCall, resolveModel } from '../../activities/inference/prepare.js';
import { billingMode } from '../middleware/billingMode.js';

export const talkToGptRouter = new Router();

talkToGptRouter.post(
  '/api/talk-to-gpt',
  surface('legacy'),
  authenticate,
  refuseUnofferedFeatures,
  billingMode,
  validateBody(talkToGptRequestSchema),
  async (ctx) => {
    const body = ctx.request.body as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
    const caller = ctx.state.caller as Caller;
    const { model, name } = resolveModel(body.model);
    const input = talkToInternal(body, model, name);
    const header = ctx.get('x-provider').trim();
    if (header) input.prefs.explicit = header;

    const call = await prepareCall({
      caller,
      requestId: ctx.state.requestId,
      surface: 'talk-to-gpt',
      model,
      request: input.request,
      needs: input.needs,
      prefs: input.prefs,
      forcePaygo: ctx.state.forcePaygo === true,
    });
    // Only the reply text is shown here; reasoning, when a model produces it, is billed like on chat.
    const { result, bill } = await completeOnce(ctx, call, (r) => !!r.content);
    ctx.type = 'text/plain; charset=utf-8';
    ctx.body = talkReply(result.content, bill);
  },
);
