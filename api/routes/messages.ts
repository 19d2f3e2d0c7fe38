// POST /api/v1/messages (and /v1/messages): the message-style API (Anthropic Messages wire
// format), streaming or not; POST /api/v1/messages/count_tokens. Built like chat: translate to
// the internal request, then the same resolveModel → prepareCall → InferenceCall → settle path,
// so planning and money are shared; only the wire shapes differ. `anthropic-version` and
// `anthropic-beta` headers are accepted and not required.
import Router from '@koa/router';
import { textRoute } from '../textRoute.js';
import { messagesQuestions } from '../questionsFormat.js';
import { surface } from '../middleware/surface.js';
import { refuseUnofferedBeside } from '../middleware/notOffered.js';
import { redactRequest } from '../../activities/redaction/mask.js';
import { redactionDecision, redactionSuffix } from '../../activities/redaction/policy.js';
import { config } from '../../activities/config.js';
import { authenticate } from '../middleware/auth.js';
import { validateBody } from '../validate.js';
import { v1 } from '../paths.js';
import { countTokensRequestSchema, messagesRequestSchema } from '../schemas/messages.js';
import { clientAbortSignal } from '../clientAbort.js';
import { completeOnce, streamOnce } from '../inference.js';
import { asRequestError, renderError } from '../errors.js';
import { messagesToInternal } from '../../activities/surfaces/messages.js';
import {
  MessageStreamer,
  cutDelta,
  toMessage,
  type Frame,
  type MessageMeta,
} from '../../activities/surfaces/messagesResponse.js';
import {
  MessagesRelay,
  messagesPassThroughBody,
  passedThroughMessage,
} from '../../activities/surfaces/messagesPassthrough.js';
import { resolveModel } from '../../activities/inference/prepare.js';
import { optionalCapability, targetFor } from '../../activities/providers/registry.js';
import type { InferenceRequest } from '../../activities/core/types.js';
import { catalog } from '../../activities/catalog/catalog.js';
import { planRoute } from '../../activities/routing/planRoute.js';
import { likelyPromptTokens } from '../../activities/billing/pricing.js';
import { RequestError } from '../../activities/core/errors.js';
import type { AppState } from '../state.js';
import { isTeeModel } from '../../activities/tee/tee.js';

export const messagesRouter = new Router<AppState>();

textRoute(
  messagesRouter,
  {
    paths: v1('/messages'),
    envelope: 'message',
    schema: messagesRequestSchema,
    surface: 'messages',
    redaction: true,
    translate: messagesToInternal,
    questions: messagesQuestions,
  },
  async ({ ctx, body, model, input, prepare }) => {
    // `anthropic-beta` is passed on to Anthropic upstreams (others would not understand it)
    // the spec: TEE models stream through chat completions only (their signatures are per chat id)
    if (body.stream && isTeeModel(model))
      throw new RequestError(
        400,
        'invalid_parameter_value',
        `Streaming TEE model '${model.id}' through the message-style API is not supported: use POST /v1/chat/completions.`,
        { param: 'stream' },
      );
    const beta = ctx.get('anthropic-beta').trim();
    const call = await prepare({
      passHeaders: beta ? { 'anthropic-beta': beta } : undefined,
      native: messagesPassThroughBody(body),
    });
    const meta: MessageMeta = {
      id: `msg_${String(ctx.state.requestId).slice(4)}`,
      model: model.id,
      provider: '',
      showReasoning: input.showReasoning && !call.ctx.request.reasoning?.exclude,
    };
    if (body.stream) {
      const errorFrame = (err: RequestError) => renderError(asRequestError(err), 'message');
      return streamOnce(ctx, call, (sse, route, passedThrough) => {
        if (passedThrough) {
          const relay = new MessagesRelay({ model: model.id });
          return {
            async event(e) {
              const frame = e.type === 'native' ? relay.frame(e) : null;
              if (frame) await sse.data(frame[1], frame[0]);
            },
            empty: (err) => sse.data(errorFrame(err), 'error'),
            // Mid-stream failures end with an `event: error` frame and no message_stop, as Anthropic's own
            // do, after a message_delta saying what the stream cost (cutDelta).
            async end({ usage, bill, failure }) {
              if (!failure) {
                for (const [event, data] of relay.end(usage, bill)) await sse.data(data, event);
                return;
              }
              const [event, data] = cutDelta(usage, bill);
              await sse.data(data, event);
              await sse.data(errorFrame(failure), 'error');
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
          // Mid-stream failures end with what the stream cost, then an `event: error` frame, no message_stop.
          async end({ finish, stopSequence, usage, bill, failure }) {
            if (!failure) return send(streamer.end(finish, usage, bill, stopSequence));
            await send(streamer.cut(usage, bill));
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
 * count_tokens: the prompt's input tokens, not billed. A route whose provider can count them
 * (tokenCount: the local model's own tokenizer, Anthropic's counter when its key is set) answers
 * that count; any other route (or a failed upstream count) answers the gateway's documented estimate
 * (likelyPromptTokens: about 4 bytes of UTF-8 a token, plus per-message framing and images).
 * With PII redaction asked for (as on messages), the masked prompt is counted: it is what a
 * redacted request's model reads, and what leaves for Anthropic's counter. Counting is free, so
 * there is no redaction fee here.
 */
messagesRouter.post(
  v1('/messages/count_tokens'),
  surface('message'),
  refuseUnofferedBeside({ redaction: true }),
  authenticate,
  validateBody(countTokensRequestSchema),
  async (ctx) => {
    // biome-ignore lint/suspicious/noExplicitAny: wire JSON
    const body = ctx.request.body as Record<string, any>;
    const caller = ctx.state.caller;
    const { model, name } = resolveModel(body.model);
    const redact = redactionDecision(
      true,
      {
        headers: ctx.headers,
        suffix: redactionSuffix(name),
        callerDefault: caller.redaction,
      },
      'count_tokens',
    );
    const input = messagesToInternal({ ...body, max_tokens: undefined }, model, name);
    if (redact === 'apply') input.request = (await redactRequest(input.request, config.redactionTimeoutMs)).request;
    const header = ctx.get('x-provider').trim();
    if (header) input.prefs.explicit = header;
    const routes = planRoute(catalog(), model, caller, input.prefs, input.needs);
    const route = routes[0];
    const request: InferenceRequest = { ...input.request, model: route.upstreamModel, maxTokens: 1 };
    const counter = optionalCapability(route, 'tokenCount');
    const tokens = await counter?.count(request, targetFor(route), clientAbortSignal(ctx));
    ctx.body = { input_tokens: tokens ?? likelyPromptTokens(request) };
  },
);
