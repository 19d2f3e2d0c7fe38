// POST /api/talk-to-gpt (and /api/talk-to-gemini, its twin that older clients call for Gemini
// models: the same endpoint, any model): the legacy text endpoint. Key in `x-api-key` (Bearer works too), errors in
// the legacy envelope. A chat request underneath (chat's translation, planner and money path);
// the answer is text/plain: the reply, then `<NanoGPT>{"cost",...}</NanoGPT>` (tag per service name).
import Router from '@koa/router';
import { talkReply, talkToInternal } from '../../activities/surfaces/talkToGpt.js';
import { completeOnce } from '../inference.js';
import { talkToGptRequestSchema } from '../schemas/talkToGpt.js';
import type { AppState } from '../state.js';
import { textRoute } from '../textRoute.js';

export const talkToGptRouter = new Router<AppState>();

textRoute(
  talkToGptRouter,
  {
    paths: ['/api/talk-to-gpt', '/api/talk-to-gemini'],
    envelope: 'legacy',
    schema: talkToGptRequestSchema,
    surface: 'talk-to-gpt',
    redaction: true,
    webSearch: true,
    translate: talkToInternal,
  },
  async ({ ctx, prepare }) => {
    const call = await prepare();
    // Only the reply text is shown here; reasoning, when a model produces it, is billed like on chat.
    const { result, bill } = await completeOnce(ctx, call, (r) => !!r.content);
    ctx.type = 'text/plain; charset=utf-8';
    ctx.body = talkReply(result.content, bill);
  },
);
