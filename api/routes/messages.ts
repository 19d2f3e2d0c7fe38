// POST /api/v1/messages (and /v1/messages): the message-style API (Anthropic Messages wire
// format), streaming or not; POST /api/v1/messages/count_tokens. Built like chat: translate to
// the internal request, then the same resolveModel → prepareCall → InferenceCall → settle path,
// so planning and money are shared; only the wire shapes differ. `anthropic-version` and
// `anthropic-beta` headers are accepted and not required.
import Router from '@koa/router';
import type { Context } from 'koa';
import { surface } from '../middleware/surface.js';
import { authenticate } from '../middleware/auth.js';
import { validateBody } from '../validate.js';
import { v1 } from './paths.js';
import { countTokensRequestSchema, messagesRequestSchema } from '../schemas/messages.js';
import { clientAbortSignal } from './clientAbort.js';
import { SseWriter } from '../sse.js';
import { asApiError, renderError } from '../errors.js';
import type { Caller } from '../../activities/accounts/keys.js';
import { messagesToInternal } from '../../activities/surfaces/messages.js';
import { MessageStreamer, toMessage, type Frame, type MessageMeta } from '../../activities/surfaces/messagesResponse.js';
import { prepareCall, resolveModel } from '../../activities/inference/prepare.js';
import { RequestError } from '../../activities/inference/errors.js';
import { targetFor, type InferenceCall } from '../../activities/inference/execute.js';
import type { FinishReason, InferenceRequest, StreamEvent, Usage } from '../../activities/inference/types.js';
import type { UpstreamError } from '../../activities/providers/types.js';
import { catalog } from '../../activities/catalog/catalog.js';
import { planRoute } from '../../activities/routing/planRoute.js';
import { likelyPromptTokens } from '../../activities/billing/pricing.js';
import { countPromptTokens } from '../../activities/providers/local/index.js';
import { countTokens as anthropicCountTokens } from '../../activities/providers/anthropic/index.js';

export const messagesRouter = new Router();

messagesRouter.post(v1('/messages'), surface('message'), authenticate, validateBody(messagesRequestSchema), async (ctx) => {
  const body = ctx.request.body as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
  const caller = ctx.state.caller as Caller;
  const { model, name } = resolveModel(body.model);
  const input = messagesToInternal(body, model, name);
  const header = ctx.get('x-provider').trim();
  if (header) input.prefs.explicit = header;

  // `anthropic-beta` is passed on to Anthropic upstreams (others would not understand it)
  const beta = ctx.get('anthropic-beta').trim();
  const call = await prepareCall({
    caller, requestId: ctx.state.requestId, surface: 'messages', model, request: input.request, needs: input.needs, prefs: input.prefs,
    passHeaders: beta ? { anthropic: { 'anthropic-beta': beta } } : undefined,
  });
  const meta: MessageMeta = {
    id: `msg_${String(ctx.state.requestId).slice(4)}`,
    model: model.id,
    provider: '',
    showReasoning: input.showReasoning && !call.ctx.request.reasoning?.exclude,
  };
  if (body.stream) return streamMessage(ctx, call, meta);

  let outcome;
  try {
    outcome = await call.complete(clientAbortSignal(ctx));
  } catch (err) {
    await call.fail((err as { code?: string }).code ?? 'error');
    throw err;
  }
  const { result, route } = outcome;
  if (!result.content && !result.toolCalls.length && !result.reasoning) {
    await call.fail('empty_response');
    throw new RequestError(502, 'empty_response', `${route.provider.id} returned an empty response. Nothing was charged; retry the request.`);
  }
  const { usage, bill } = await call.settle(result.usage, result.content + (result.reasoning ?? '') + result.toolCalls.map((c) => c.arguments).join(''));
  ctx.body = toMessage(result, usage, bill, { ...meta, provider: route.provider.id });
});

/**
 * Streams one message, as chat's streamChat does: failures before the first event are ordinary
 * JSON errors (with fallback inside openStream); after it, an `event: error` frame and the end.
 * What was produced is billed whether the stream finished, failed midway, or the caller left.
 */
async function streamMessage(ctx: Context, call: InferenceCall, meta: MessageMeta): Promise<void> {
  const abort = new AbortController();
  const onClientGone = () => abort.abort(new Error('client disconnected'));
  ctx.res.once('close', onClientGone);
  let opened;
  try {
    opened = await call.openStream(abort.signal);
  } catch (err) {
    ctx.res.off('close', onClientGone);
    await call.fail((err as { code?: string }).code ?? 'error');
    throw err;
  }
  ctx.res.off('close', onClientGone);
  const sse = new SseWriter(ctx);
  sse.signal.addEventListener('abort', () => abort.abort(new Error('client disconnected')));
  const streamer = new MessageStreamer({ ...meta, provider: opened.route.provider.id });
  const send = async (frames: Frame[]) => {
    for (const [event, data] of frames) await sse.data(data, event);
  };
  const errorFrame = (err: RequestError) => renderError(asApiError(err), 'message');

  let produced = '';
  let finish: FinishReason = 'stop';
  let usage: Usage | null = null;
  let failure: unknown;
  const take = async (e: StreamEvent) => {
    if (e.type === 'text' || e.type === 'reasoning') produced += e.text;
    else if (e.type === 'tool_call') produced += e.argumentsDelta;
    else if (e.type === 'finish') finish = e.reason;
    else if (e.type === 'usage') usage = e.usage;
    await send(streamer.event(e));
  };
  await send(streamer.start(call.ctx.promptTokenEstimate));
  try {
    if (opened.first) await take(opened.first);
    for (;;) {
      const next = await opened.rest.next();
      if (next.done) break;
      await take(next.value);
    }
  } catch (err) {
    failure = err;
  }

  if (!produced && !failure && !sse.closed) {
    await call.fail('empty_response');
    await send(streamer.abort());
    await sse.data(errorFrame(new RequestError(502, 'empty_response', 'The provider returned an empty response. Nothing was charged; retry the request.')), 'error');
    sse.end();
    return;
  }
  const status = sse.closed ? 'client_closed' : failure ? 'failed_midway' : 'completed';
  // A caller who left, or an upstream that broke, still consumed what was produced; a provider's
  // usage for a cut stream is unknown, so it is estimated from the text (as on chat).
  const { usage: billed, bill } = await call.settle(failure || sse.closed ? null : usage, produced, status);
  if (failure && !sse.closed) {
    await send(streamer.abort());
    await sse.data(errorFrame(failure instanceof RequestError ? failure
      : new RequestError(502, (failure as UpstreamError).opts?.code ?? 'upstream_error', `The stream broke after it began: ${(failure as Error).message}`)), 'error');
    sse.end();
    return;
  }
  await send(streamer.end(finish, billed, bill));
  sse.end();
}

/**
 * count_tokens: the prompt's input tokens, not billed. The local model counts with its real
 * tokenizer; a model routed to Anthropic asks Anthropic's counter when a key is configured; any
 * other route (or a failed upstream count) answers the gateway's documented estimate
 * (likelyPromptTokens: about 4 bytes of UTF-8 a token, plus per-message framing and images).
 */
messagesRouter.post(v1('/messages/count_tokens'), surface('message'), authenticate, validateBody(countTokensRequestSchema), async (ctx) => {
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
    if (target.apiKey) tokens = await anthropicCountTokens(request, target, clientAbortSignal(ctx)).catch(() => undefined);
  }
  ctx.body = { input_tokens: tokens ?? likelyPromptTokens(request) };
});
