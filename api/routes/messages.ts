// POST /api/v1/messages (and /v1/messages): the message-style API (Anthropic Messages wire
// format), streaming or not; POST /api/v1/messages/count_tokens. Built like chat: translate to
// the internal request, then the same resolveModel → prepareCall → InferenceCall → settle path,
// so planning and money are shared; only the wire shapes differ. `anthropic-version` and
// `anthropic-beta` headers are accepted and not required.
import Router from '@koa/router';
import { surface } from '../middleware/surface.js';
import { authenticate } from '../middleware/auth.js';
import { refuseUnofferedFeatures } from '../middleware/notOffered.js';
import { billingMode } from '../middleware/billingMode.js';
import { validateBody } from '../validate.js';
import { v1 } from './paths.js';
import { countTokensRequestSchema, messagesRequestSchema } from '../schemas/messages.js';
import { clientAbortSignal } from './clientAbort.js';
import { completeOnce, streamOnce } from '../inference.js';
import { asApiError, renderError } from '../errors.js';
import type { Caller } from '../../activities/accounts/keys.js';
import { messagesToInternal } from '../../activities/surfaces/messages.js';
import {
  MessageStreamer,
  toMessage,
  type Frame,
  type MessageMeta,
} from '../../activities/surfaces/messagesResponse.js';
import {
  MessagesRelay,
  messagesPassThroughBody,
  passedThroughMessage,
} from '../../activities/surfaces/messagesPassthrough.js';
import { prepareCall, resolveModel } from '../../activities/inference/prepare.js';
import { RequestError } from '../../activities/inference/errors.js';
import { targetFor } from '../../activities/inference/execute.js';
import type { InferenceRequest } from '../../activities/inference/types.js';
import { catalog } from '../../activities/catalog/catalog.js';
import { planRoute } from '../../activities/routing/planRoute.js';
import { likelyPromptTokens } from '../../activities/billing/pricing.js';
import { countPromptTokens } from '../../activities/providers/local/index.js';
import { countTokens as anthropicCountTokens } from '../../activities/providers/anthropic/index.js';

export const messagesRouter = new Router();

messagesRouter.post(
  v1('/messages'),
  surface('message'),
  authenticate,
  refuseUnofferedFeatures,
  billingMode,
  validateBody(messagesRequestSchema),
  async (ctx) => {
    const body = ctx.request.body as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
    const caller = ctx.state.caller as Caller;
    const { model, name } = resolveModel(body.model);
    const input = messagesToInternal(body, model, name);
    const header = ctx.get('x-provider').trim();
    if (header) input.prefs.explicit = header;

    // `anthropic-beta` is passed on to Anthropic upstreams (others would not understand it)
    const beta = ctx.get('anthropic-beta').trim();
    const call = await prepareCall({
      caller,
      requestId: ctx.state.requestId,
      surface: 'messages',
      model,
      request: input.request,
      needs: input.needs,
      prefs: input.prefs,
      forcePaygo: ctx.state.forcePaygo === true,
      passHeaders: beta ? { anthropic: { 'anthropic-beta': beta } } : undefined,
      // routes to Anthropic get the caller's own body (pass-through); others the translation
      native: messagesPassThroughBody(body),
    });
    const meta: MessageMeta = {
      id: `msg_${String(ctx.state.requestId).slice(4)}`,
      model: model.id,
      provider: '',
      showReasoning: input.showReasoning && !call.ctx.request.reasoning?.exclude,
    };
    if (body.stream) {
      const errorFrame = (err: RequestError) => renderError(asApiError(err), 'message');
      return streamOnce(ctx, call, (sse, route, passedThrough) => {
        if (passedThrough) {
          const relay = new MessagesRelay({ model: model.id });
          return {
            async event(e) {
              const frame = e.type === 'native' ? relay.frame(e) : null;
              if (frame) await sse.data(frame[1], frame[0]);
            },
            empty: (err) => sse.data(errorFrame(err), 'error'),
            // Mid-stream failures end with an `event: error` frame and no message_stop, as Anthropic's own do.
            async end({ usage, bill, failure }) {
              if (failure) return sse.data(errorFrame(failure), 'error');
              for (const [event, data] of relay.end(usage, bill)) await sse.data(data, event);
            },
          };
        }
        const streamer = new MessageStreamer({ ...meta, provider: route.provider.id });
        const send = async (frames: Frame[]) => {
          for (const [event, data] of frames) await sse.data(data, event);
        };
        return {
          start: () => send(streamer.start(call.ctx.promptTokenEstimate)),
          event: (e) => send(streamer.event(e)),
          async empty(err) {
            await send(streamer.abort());
            await sse.data(errorFrame(err), 'error');
          },
          // Mid-stream failures end with an `event: error` frame and no message_stop.
          async end({ finish, stopSequence, usage, bill, failure }) {
            if (!failure) return send(streamer.end(finish, usage, bill, stopSequence));
            await send(streamer.abort());
            await sse.data(errorFrame(failure), 'error');
          },
        };
      });
    }
    const { result, route, usage, bill } = await completeOnce(ctx, call);
    ctx.body = result.native
      ? passedThroughMessage(result.native, usage, bill, { model: model.id, provider: route.provider.id })
      : toMessage(result, usage, bill, { ...meta, provider: route.provider.id });
  },
);

/**
 * count_tokens: the prompt's input tokens, not billed. The local model counts with its real
 * tokenizer; a model routed to Anthropic asks Anthropic's counter when a key is configured; any
 * other route (or a failed upstream count) answers the gateway's documented estimate
 * (likelyPromptTokens: about 4 bytes of UTF-8 a token, plus per-message framing and images).
 */
messagesRouter.post(
  v1('/messages/count_tokens'),
  surface('message'),
  authenticate,
  refuseUnofferedFeatures,
  validateBody(countTokensRequestSchema),
  async (ctx) => {
    const body = ctx.request.body as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
    const caller = ctx.state.caller as Caller;
    const { model, name } = resolveModel(body.model);
    const input = messagesToInternal({ ...body, max_tokens: undefined }, model, name);
    const header = ctx.get('x-provider').trim();
    if (header) input.prefs.explicit = header;
    const routes = planRoute(catalog(), model, caller, input.prefs, input.needs);
    const route = routes[0];
    const request: InferenceRequest = { ...input.request, model: route.upstreamModel, maxTokens: 1 };
    let tokens: number | undefined;
    if (route.provider.protocol === 'local') {
      tokens = await countPromptTokens(route.upstreamModel, request);
    } else if (route.provider.protocol === 'anthropic') {
      const target = targetFor(route);
      if (target.apiKey)
        tokens = await anthropicCountTokens(request, target, clientAbortSignal(ctx)).catch(() => undefined);
    }
    ctx.body = { input_tokens: tokens ?? likelyPromptTokens(request) };
  },
);
