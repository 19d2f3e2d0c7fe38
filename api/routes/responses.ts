// POST /api/v1/responses (and /v1/responses): the OpenAI Responses API, streaming or not, with
// stored responses (GET / DELETE /api/v1/responses/{id}) and previous_response_id chaining. Built
// like chat: the input becomes chat-form messages and goes through chatToInternal, then the same
// resolveModel → prepareCall → InferenceCall → settle path, so planning and money are shared; only
// the wire shapes differ. Background mode (`background: true`) reserves and stores the response as
// `queued`, then hands it to the `backgroundResponse` Temporal workflow (workflow id = response id)
// and answers at once; POST /responses/{id}/cancel cancels that workflow.
import Router from '@koa/router';
import type { Context } from 'koa';
import { surface } from '../middleware/surface.js';
import { authenticate } from '../middleware/auth.js';
import { refuseUnofferedFeatures } from '../middleware/notOffered.js';
import { validateBody } from '../validate.js';
import { v1 } from './paths.js';
import { responsesRequestSchema } from '../schemas/responses.js';
import { completeOnce, streamOnce } from '../inference.js';
import { ApiError } from '../errors.js';
import type { Caller } from '../../activities/accounts/keys.js';
import {
  assistantTurn,
  newId,
  responsesToInternal,
  responseShell,
  ResponseStreamer,
  toResponse,
  type ChatMessage,
  type Frame,
  type ResponseMeta,
  type ResponseObject,
} from '../../activities/surfaces/responses.js';
import { deleteResponse, loadResponse, retentionDays, saveResponse } from '../../activities/surfaces/responsesStore.js';
import { withBill } from '../../activities/surfaces/chatResponse.js';
import type { BackgroundJob } from '../../activities/responses/background.js';
import { temporal } from '../../activities/temporalClient.js';
import { config } from '../../activities/config.js';
import { db } from '../../activities/db.js';
import { prepareCall, resolveModel } from '../../activities/inference/prepare.js';
import { billingMode } from '../middleware/billingMode.js';
import type { InferenceCall } from '../../activities/inference/execute.js';

export const responsesRouter = new Router();

const notFound = (id: string) =>
  new ApiError(
    404,
    'response_not_found',
    `No response with id '${id}' (it may belong to another account, have expired, or have been stored with store: false).`,
    { param: 'response_id' },
  );

responsesRouter.post(
  v1('/responses'),
  surface('openai'),
  authenticate,
  refuseUnofferedFeatures,
  billingMode,
  validateBody(responsesRequestSchema),
  async (ctx) => {
    const body = ctx.request.body as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
    const caller = ctx.state.caller as Caller;
    if (body.background === true && body.stream === true) {
      throw new ApiError(
        400,
        'invalid_parameter_value',
        'Background responses are not streamed here: send background without stream, then GET /v1/responses/{id}.',
        { param: 'stream' },
      );
    }
    if (body.background === true && body.store === false) {
      throw new ApiError(
        400,
        'invalid_parameter_value',
        'A background response must be stored (store: false cannot be retrieved later).',
        { param: 'store' },
      );
    }
    const { model, name } = resolveModel(body.model);
    let history: ChatMessage[] = [];
    if (body.previous_response_id) {
      const prev = await loadResponse(caller.accountId, body.previous_response_id);
      if (!prev)
        throw new ApiError(
          404,
          'previous_response_not_found',
          `Previous response '${body.previous_response_id}' was not found (unknown, expired, deleted, not stored, or another account's).`,
          { param: 'previous_response_id' },
        );
      history = prev.request.conversation;
    }
    const input = responsesToInternal(body, model, name, history);
    const header = ctx.get('x-provider').trim();
    if (header) input.prefs.explicit = header;

    const call = await prepareCall({
      forcePaygo: ctx.state.forcePaygo === true,
      caller,
      requestId: ctx.state.requestId,
      surface: 'responses',
      model,
      request: input.request,
      needs: input.needs,
      prefs: input.prefs,
      holdTtlSeconds: body.background === true ? BACKGROUND_HOLD_SECONDS : undefined,
    });
    const meta: ResponseMeta = {
      id: newId('resp'),
      createdAt: Math.floor(Date.now() / 1000),
      model: model.id,
      provider: '',
      showReasoning: !call.ctx.request.reasoning?.exclude,
      body,
    };
    const store = async (response: ResponseObject, turn: ChatMessage | null) => {
      if (body.store === false) return;
      await saveResponse(caller.accountId, response, {
        conversation: turn ? [...input.conversation, turn] : input.conversation,
      });
    };
    if (body.stream) return streamResponse(ctx, call, meta, store);
    if (body.background === true) {
      ctx.body = await startBackground(call, meta, input.conversation, caller);
      return;
    }

    const { result, route, usage, bill } = await completeOnce(ctx, call);
    const response = toResponse(result, usage, { ...meta, provider: route.provider.id });
    await store(response, assistantTurn(result));
    ctx.body = withBill({ ...response }, bill);
  },
);

/**
 * Streams one response: typed events with sequence numbers, ending in response.completed /
 * .incomplete, or response.failed when the stream breaks after it began; then [DONE]. The
 * response is stored as it ended.
 */
function streamResponse(
  ctx: Context,
  call: InferenceCall,
  meta: ResponseMeta,
  store: (r: ResponseObject, turn: ChatMessage | null) => Promise<void>,
): Promise<void> {
  return streamOnce(ctx, call, (sse, route) => {
    const streamer = new ResponseStreamer({ ...meta, provider: route.provider.id });
    const send = async (frames: Frame[]) => {
      for (const [event, data] of frames) await sse.data(data, event);
    };
    return {
      start: () => send(streamer.start()),
      event: (e) => send(streamer.event(e)),
      async empty(err) {
        const zero = { promptTokens: 0, cachedTokens: 0, cacheWriteTokens: 0, completionTokens: 0, reasoningTokens: 0 };
        const noBill = {
          amount: 0,
          currency: 'USD' as const,
          cost: 0,
          paymentSource: 'USD' as const,
          remainingBalance: 0,
          inputTokens: 0,
          outputTokens: 0,
        };
        await send(streamer.fail(err.code, err.message, zero, noBill).frames);
        await sse.data('[DONE]');
      },
      async end({ finish, usage, bill, failure }) {
        if (failure) {
          const { frames, response } = streamer.fail(failure.code, failure.message, usage, bill);
          await store(response, null);
          await send(frames);
        } else {
          const { frames, response } = streamer.end(finish, usage, bill);
          await store(response, assistantTurn({ content: streamer.outputText, toolCalls: streamer.toolCalls }));
          await send(frames);
        }
        await sse.data('[DONE]');
      },
    };
  });
}

/** A background response waits at most this long (queue + run) before its reservation lapses. */
const BACKGROUND_HOLD_SECONDS = 24 * 3600;

async function startBackground(
  call: InferenceCall,
  meta: ResponseMeta,
  conversation: ChatMessage[],
  caller: Caller,
): Promise<ResponseObject> {
  const queued = responseShell(meta, 'queued');
  const job: BackgroundJob = {
    caller: { ...caller, dailyUsdLimit: caller.dailyUsdLimit?.toString() ?? null },
    requestId: call.ctx.requestId,
    modelId: call.ctx.modelId,
    routeIds: call.ctx.routes.map((r) => r.id),
    request: call.ctx.request,
    promptTokenEstimate: call.ctx.promptTokenEstimate,
    holdId: call.reservation ?? null,
    meta,
  };
  await db().prisma.storedResponse.create({
    data: {
      id: meta.id,
      accountId: caller.accountId,
      status: 'queued',
      request: { conversation, job } as object,
      response: queued as object,
      expiresAt: new Date(Date.now() + Math.max(1, retentionDays()) * 86_400_000),
    },
  });
  try {
    const client = await temporal();
    await client.workflow.start('backgroundResponse', {
      workflowId: meta.id,
      taskQueue: config.taskQueue,
      args: [meta.id],
      searchAttributes: { SwitchyardAccountId: [caller.accountId] },
    });
  } catch (err) {
    await call.fail('background_unavailable');
    await db().prisma.storedResponse.deleteMany({ where: { id: meta.id } });
    console.error(`[responses] could not start background response ${meta.id}:`, err);
    throw new ApiError(
      503,
      'background_unavailable',
      'Background responses are unavailable right now (the workflow engine did not accept the job). Nothing was charged; retry, or send the request without background.',
    );
  }
  return queued;
}

responsesRouter.post(v1('/responses/:id/cancel'), surface('openai'), authenticate, async (ctx) => {
  const caller = ctx.state.caller as Caller;
  const row = await loadResponse(caller.accountId, ctx.params.id);
  if (!row) throw notFound(ctx.params.id);
  if (!row.response.background)
    throw new ApiError(400, 'invalid_request', 'Only background responses can be cancelled.', { param: 'response_id' });
  if (row.status === 'queued' || row.status === 'in_progress') {
    await (await temporal()).workflow.getHandle(ctx.params.id).cancel();
    // The workflow releases the reservation and marks the response; wait briefly to answer with it.
    for (let i = 0; i < 50; i++) {
      const now = await loadResponse(caller.accountId, ctx.params.id);
      if (now && now.status !== 'queued' && now.status !== 'in_progress') {
        ctx.body = now.response;
        return;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  ctx.body = (await loadResponse(caller.accountId, ctx.params.id))?.response ?? row.response;
});

responsesRouter.get(v1('/responses/:id'), surface('openai'), authenticate, async (ctx) => {
  const caller = ctx.state.caller as Caller;
  const row = await loadResponse(caller.accountId, ctx.params.id);
  if (!row) throw notFound(ctx.params.id);
  ctx.body = row.response;
});

responsesRouter.delete(v1('/responses/:id'), surface('openai'), authenticate, async (ctx) => {
  const caller = ctx.state.caller as Caller;
  if (!(await deleteResponse(caller.accountId, ctx.params.id))) throw notFound(ctx.params.id);
  ctx.body = { id: ctx.params.id, object: 'response', deleted: true };
});
