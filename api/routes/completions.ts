// POST /api/v1/completions (and /v1/...): OpenAI's legacy text completions, streaming or not, in
// the OpenAI error envelope. The same path as chat: validate → resolveModel → translate (to the
// one internal request, with `prompt` set) → prepareCall (plan + reserve) → InferenceCall
// (complete with fallback, or openStream) → settle / fail. Only the wire shapes differ.
import Router from '@koa/router';
import { surface } from '../middleware/surface.js';
import { authenticate } from '../middleware/auth.js';
import { refuseUnofferedFeatures } from '../middleware/notOffered.js';
import { billingMode } from '../middleware/billingMode.js';
import { validateBody } from '../validate.js';
import { v1 } from './paths.js';
import { completionsRequestSchema } from '../schemas/completions.js';
import { completeOnce, streamOnce } from '../inference.js';
import { asApiError, renderError } from '../errors.js';
import type { Caller } from '../../activities/accounts/keys.js';
import {
  CompletionChunker,
  completionsToInternal,
  toTextCompletion,
  type CompletionMeta,
} from '../../activities/surfaces/completions.js';
import { prepareCall, resolveModel } from '../../activities/inference/prepare.js';

export const completionsRouter = new Router();

completionsRouter.post(
  v1('/completions'),
  surface('openai'),
  authenticate,
  refuseUnofferedFeatures,
  billingMode,
  validateBody(completionsRequestSchema),
  async (ctx) => {
    const body = ctx.request.body as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
    const caller = ctx.state.caller as Caller;
    const { model, name } = resolveModel(body.model);
    const input = completionsToInternal(body, model, name);
    const header = ctx.get('x-provider').trim();
    if (header) input.prefs.explicit = header;

    const forcePaygo =
      ctx.state.forcePaygo === true || body.billing_mode !== undefined || body.billingMode !== undefined;
    const call = await prepareCall({
      caller,
      requestId: ctx.state.requestId,
      surface: 'completions',
      model,
      request: input.request,
      needs: input.needs,
      prefs: input.prefs,
      forcePaygo,
    });
    const meta: CompletionMeta = {
      id: `cmpl-${String(ctx.state.requestId).slice(4)}`,
      created: Math.floor(Date.now() / 1000),
      model: model.id,
      provider: '',
      topLogprobs: input.request.sampling.logprobs ? (input.request.sampling.topLogprobs ?? 0) : undefined,
      promptLength: input.prompt.length,
    };
    if (body.stream) {
      return streamOnce(ctx, call, (sse, route) => {
        const chunker = new CompletionChunker({ ...meta, provider: route.provider.id });
        return {
          // A completion shows only text: reasoning (from a reasoning model) and tool calls cannot be
          // shown here, but what was produced is still billed, as on chat.
          async event(e) {
            if (e.type === 'text') await sse.data(chunker.text(e.text, e.logprobs));
          },
          empty: (err) => sse.data(renderError(asApiError(err), 'openai')),
          async end({ finish, usage, bill, failure }) {
            if (failure) await sse.data(renderError(asApiError(failure), 'openai'));
            for (const frame of chunker.final(finish, usage, bill, input.includeUsage)) await sse.data(frame);
            await sse.data('[DONE]');
          },
        };
      });
    }
    const { result, route, usage, bill } = await completeOnce(ctx, call, (r) => !!r.content);
    ctx.body = toTextCompletion(result, usage, bill, { ...meta, provider: route.provider.id });
  },
);
