// POST /api/v1/completions (and /v1/...): OpenAI's legacy text completions, streaming or not, in
// the OpenAI error envelope. The same path as chat: validate → resolveModel → translate (to the
// one internal request, with `prompt` set) → prepareCall (plan + reserve) → InferenceCall
// (complete with fallback, or openStream) → settle / fail. Only the wire shapes differ.
import Router from '@koa/router';
import type { Context } from 'koa';
import { surface } from '../middleware/surface.js';
import { authenticate } from '../middleware/auth.js';
import { validateBody } from '../validate.js';
import { v1 } from './paths.js';
import { completionsRequestSchema } from '../schemas/completions.js';
import { clientAbortSignal } from './clientAbort.js';
import { SseWriter } from '../sse.js';
import { asApiError, renderError } from '../errors.js';
import type { Caller } from '../../activities/accounts/keys.js';
import { CompletionChunker, completionsToInternal, toTextCompletion, type CompletionMeta } from '../../activities/surfaces/completions.js';
import { prepareCall, resolveModel } from '../../activities/inference/prepare.js';
import { RequestError } from '../../activities/inference/errors.js';
import type { InferenceCall } from '../../activities/inference/execute.js';
import type { FinishReason, StreamEvent, Usage } from '../../activities/inference/types.js';
import type { UpstreamError } from '../../activities/providers/types.js';

export const completionsRouter = new Router();

completionsRouter.post(v1('/completions'), surface('openai'), authenticate, validateBody(completionsRequestSchema), async (ctx) => {
  const body = ctx.request.body as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
  const caller = ctx.state.caller as Caller;
  const { model, name } = resolveModel(body.model);
  const input = completionsToInternal(body, model, name);
  const header = ctx.get('x-provider').trim();
  if (header) input.prefs.explicit = header;

  const call = await prepareCall({ caller, requestId: ctx.state.requestId, surface: 'completions', model, request: input.request, needs: input.needs, prefs: input.prefs });
  const meta: CompletionMeta = {
    id: `cmpl-${String(ctx.state.requestId).slice(4)}`,
    created: Math.floor(Date.now() / 1000),
    model: model.id,
    provider: '',
    topLogprobs: input.request.sampling.logprobs ? input.request.sampling.topLogprobs ?? 0 : undefined,
    promptLength: input.prompt.length,
  };
  if (body.stream) return streamCompletion(ctx, call, meta, input.includeUsage);

  let outcome;
  try {
    outcome = await call.complete(clientAbortSignal(ctx));
  } catch (err) {
    await call.fail((err as { code?: string }).code ?? 'error');
    throw err;
  }
  const { result, route } = outcome;
  if (!result.content) {
    await call.fail('empty_response');
    throw new RequestError(502, 'empty_response', `${route.provider.id} returned an empty completion. Nothing was charged; retry the request.`);
  }
  const { usage, bill } = await call.settle(result.usage, result.content);
  ctx.body = toTextCompletion(result, usage, bill, { ...meta, provider: route.provider.id });
});

/**
 * Streams one completion, as chat does: failures before the first event are ordinary JSON errors
 * (with fallback inside openStream); after it, an error frame and a clean end. What was produced
 * is billed whether the stream finished, broke midway, or the caller left.
 */
async function streamCompletion(ctx: Context, call: InferenceCall, meta: CompletionMeta, includeUsage: boolean): Promise<void> {
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
  const chunker = new CompletionChunker({ ...meta, provider: opened.route.provider.id });

  let produced = '';
  let finish: FinishReason = 'stop';
  let usage: Usage | null = null;
  let failure: unknown;
  // A completion has only text: reasoning (a reasoning model asked for a completion) and tool
  // calls cannot be shown here, but reasoning is still produced, and billed, like on chat.
  const take = async (e: StreamEvent) => {
    if (e.type === 'text') {
      produced += e.text;
      await sse.data(chunker.text(e.text, e.logprobs));
    } else if (e.type === 'reasoning') produced += e.text;
    else if (e.type === 'finish') finish = e.reason;
    else if (e.type === 'usage') usage = e.usage;
  };
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
    await sse.data(renderError(asApiError(new RequestError(502, 'empty_response', 'The provider returned an empty completion. Nothing was charged; retry the request.')), 'openai'));
    sse.end();
    return;
  }
  const status = sse.closed ? 'client_closed' : failure ? 'failed_midway' : 'completed';
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
