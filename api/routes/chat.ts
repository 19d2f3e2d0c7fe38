// POST /api/v1/chat/completions (and /v1/...): OpenAI-style chat, streaming or not. The route
// only translates and streams; planning, money and provider calls are activities.
import Router from '@koa/router';
import type { Context } from 'koa';
import { surface } from '../middleware/surface.js';
import { authenticate } from '../middleware/auth.js';
import { validateBody } from '../validate.js';
import { v1 } from './paths.js';
import { chatRequestSchema } from '../schemas/chat.js';
import { clientAbortSignal } from './clientAbort.js';
import { SseWriter } from '../sse.js';
import { asApiError, renderError } from '../errors.js';
import type { Caller } from '../../activities/accounts/keys.js';
import { chatToInternal } from '../../activities/surfaces/chat.js';
import { ChatChunker, toChatCompletion, type ChatMeta } from '../../activities/surfaces/chatResponse.js';
import { prepareCall, resolveModel } from '../../activities/inference/prepare.js';
import { RequestError } from '../../activities/inference/errors.js';
import type { InferenceCall } from '../../activities/inference/execute.js';
import type { FinishReason, StreamEvent, Usage } from '../../activities/inference/types.js';
import type { UpstreamError } from '../../activities/providers/types.js';

export const chatRouter = new Router();

chatRouter.post(v1('/chat/completions'), surface('openai'), authenticate, validateBody(chatRequestSchema), async (ctx) => {
  const body = ctx.request.body as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
  const caller = ctx.state.caller as Caller;
  const { model, name } = resolveModel(body.model);
  const input = chatToInternal(body, model, name);
  const header = ctx.get('x-provider').trim();
  if (header) input.prefs.explicit = header;

  const call = await prepareCall({ caller, requestId: ctx.state.requestId, surface: 'chat', model, request: input.request, needs: input.needs, prefs: input.prefs });
  const meta: ChatMeta = {
    id: `chatcmpl-${String(ctx.state.requestId).slice(4)}`,
    created: Math.floor(Date.now() / 1000),
    model: model.id,
    provider: '',
    showReasoning: !call.ctx.request.reasoning?.exclude,
    maxToolCalls: input.maxToolCalls,
  };
  if (body.stream) return streamChat(ctx, call, meta, input.includeUsage);

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
  ctx.body = toChatCompletion(result, usage, bill, { ...meta, provider: route.provider.id });
});

/**
 * Streams one completion. Failures before the first event are ordinary JSON errors (and fall
 * back to other providers inside openStream); after it, an error frame and a clean end. What was
 * produced is billed whether the stream finished, failed midway, or the caller left.
 */
async function streamChat(ctx: Context, call: InferenceCall, meta: ChatMeta, includeUsage: boolean): Promise<void> {
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
  const chunker = new ChatChunker({ ...meta, provider: opened.route.provider.id });

  let produced = '';
  let finish: FinishReason = 'stop';
  let usage: Usage | null = null;
  let failure: unknown;
  const take = async (e: StreamEvent) => {
    if (e.type === 'text' || e.type === 'reasoning') produced += e.text;
    else if (e.type === 'tool_call') produced += e.argumentsDelta;
    else if (e.type === 'finish') finish = e.reason;
    else if (e.type === 'usage') usage = e.usage;
    const frame = chunker.event(e);
    if (frame) await sse.data(frame);
  };
  await sse.data(chunker.first());
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
    await sse.data(renderError(asApiError(new RequestError(502, 'empty_response', 'The provider returned an empty response. Nothing was charged; retry the request.')), 'openai'));
    sse.end();
    return;
  }
  const status = sse.closed ? 'client_closed' : failure ? 'failed_midway' : 'completed';
  // A caller who left, or an upstream that broke, still consumed what was produced; a
  // provider's usage for a cut stream is unknown, so it is estimated from the text.
  const { usage: billed, bill } = await call.settle(failure || sse.closed ? null : usage, produced, status);
  if (failure && !sse.closed) {
    const e = asApiError(
      failure instanceof RequestError ? failure
        : new RequestError(502, (failure as UpstreamError).opts?.code ?? 'upstream_error', `The stream broke after it began: ${(failure as Error).message}`),
    );
    await sse.data(renderError(e, 'openai'));
  }
  await sse.data(chunker.final(finish, billed, bill, includeUsage));
  await sse.data('[DONE]');
  sse.end();
}
