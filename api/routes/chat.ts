// POST /api/v1/chat/completions (and /v1/...): OpenAI-style chat, streaming or not. The route
// only translates and streams; planning, money and provider calls are activities.
import Router from '@koa/router';
import { surface } from '../middleware/surface.js';
import { authenticate } from '../middleware/auth.js';
import { refuseUnofferedFeatures } from '../middleware/notOffered.js';
import { billingMode } from '../middleware/billingMode.js';
import { validateBody } from '../validate.js';
import { v1 } from './paths.js';
import { chatRequestSchema } from '../schemas/chat.js';
import { completeOnce, streamOnce } from '../inference.js';
import { asApiError, renderError } from '../errors.js';
import type { Caller } from '../../activities/accounts/keys.js';
import { chatToInternal } from '../../activities/surfaces/chat.js';
import { ChatChunker, toChatCompletion, type ChatMeta } from '../../activities/surfaces/chatResponse.js';
import { ChatRelay, chatPassThroughBody, passedThroughCompletion } from '../../activities/surfaces/chatPassthrough.js';
import { prepareCall, resolveModel } from '../../activities/inference/prepare.js';

export const chatRouter = new Router();

chatRouter.post(
  v1('/chat/completions'),
  surface('openai'),
  authenticate,
  refuseUnofferedFeatures,
  billingMode,
  validateBody(chatRequestSchema),
  async (ctx) => {
    const body = ctx.request.body as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
    const caller = ctx.state.caller as Caller;
    const { model, name } = resolveModel(body.model);
    const input = chatToInternal(body, model, name);
    const header = ctx.get('x-provider').trim();
    if (header) input.prefs.explicit = header;

    // routes to an OpenAI-compatible upstream get the caller's own body (pass-through); others the translation
    const call = await prepareCall({
      caller,
      requestId: ctx.state.requestId,
      surface: 'chat',
      model,
      request: input.request,
      needs: input.needs,
      prefs: input.prefs,
      forcePaygo: ctx.state.forcePaygo === true,
      native: chatPassThroughBody(body),
    });
    const meta: ChatMeta = {
      id: `chatcmpl-${String(ctx.state.requestId).slice(4)}`,
      created: Math.floor(Date.now() / 1000),
      model: model.id,
      provider: '',
      showReasoning: !call.ctx.request.reasoning?.exclude,
      maxToolCalls: input.maxToolCalls,
    };
    if (body.stream) {
      return streamOnce(ctx, call, (sse, route, passedThrough) => {
        if (passedThrough) {
          const relay = new ChatRelay({ model: model.id, provider: route.provider.id }, input.includeUsage);
          return {
            event(e) {
              const data = e.type === 'native' ? relay.chunk(e) : null;
              return data === null ? undefined : sse.data(data);
            },
            empty: (err) => sse.data(renderError(asApiError(err), 'openai')),
            async end({ usage, bill, failure }) {
              if (failure) await sse.data(renderError(asApiError(failure), 'openai'));
              else for (const data of relay.final(usage, bill)) await sse.data(data);
              await sse.data('[DONE]');
            },
          };
        }
        const chunker = new ChatChunker({ ...meta, provider: route.provider.id });
        return {
          start: () => sse.data(chunker.first()),
          event(e) {
            const frame = chunker.event(e);
            return frame ? sse.data(frame) : undefined;
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
    const { result, route, usage, bill } = await completeOnce(ctx, call);
    ctx.body = result.native
      ? passedThroughCompletion(result.native, usage, bill, { model: model.id, provider: route.provider.id })
      : toChatCompletion(result, usage, bill, { ...meta, provider: route.provider.id });
  },
);
