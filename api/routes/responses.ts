// POST /api/v1/responses (and /v1/responses): the OpenAI Responses API, streaming or not, with
// stored responses (GET / DELETE /api/v1/responses/{id}) and previous_response_id chaining. Built
// like chat: the input becomes chat-form messages and goes through chatToInternal, then the same
// resolveModel → prepareCall → InferenceCall → settle path, so planning and money are shared; only
// the wire shapes differ. Background mode (`background: true`) reserves and stores the response as
// `queued`, then hands it to the `backgroundResponse` Temporal workflow (workflow id = response id)
// and answers at once; POST /responses/{id}/cancel cancels that workflow.
import Router from '@koa/router';
import type { ModelInfo } from '../../activities/catalog/catalog.js';
import type { ModelName } from '../../activities/routing/suffixes.js';
import { type TextBody, textRoute } from '../textRoute.js';
import { responsesQuestions } from '../questionsFormat.js';
import type { Context } from 'koa';
import { surface } from '../middleware/surface.js';
import { authenticate } from '../middleware/auth.js';
import { v1 } from '../paths.js';
import { validateQuery } from '../validate.js';
import { responsesRequestSchema } from '../schemas/responses.js';
import { completeOnce, streamOnce } from '../inference.js';
import {
  assistantTurn,
  inputItemsOf,
  newId,
  responsesToInternal,
  ResponseStreamer,
  toResponse,
  type ChatMessage,
  type Frame,
  type ResponseMeta,
  type ResponseObject,
} from '../../activities/surfaces/responses.js';
import { deleteResponse, loadResponse, saveResponse } from '../../activities/surfaces/responsesStore.js';
import { withBill } from '../../activities/surfaces/chatResponse.js';
import { startBackgroundResponse } from '../../activities/responses/background.js';
import { cancelJobAndWait } from '../../activities/jobs/jobs.js';
import type { InferenceCall } from '../../activities/inference/execute.js';
import { RequestError } from '../../activities/core/errors.js';
import type { AppContext, AppState } from '../state.js';
import { citationsIn, responsesAnnotations, type UrlCitation } from '../../activities/search/context.js';

function setAnnotations(item: { content?: unknown }, cites: UrlCitation[]): void {
  for (const part of (item.content ?? []) as Array<{ type: string; annotations?: unknown[] }>)
    if (part.type === 'output_text') part.annotations = responsesAnnotations(cites);
}

export const responsesRouter = new Router<AppState>();

const notFound = (id: string) =>
  new RequestError(
    404,
    'response_not_found',
    `No response with id '${id}' (it may belong to another account, have expired, or have been stored with store: false).`,
    { param: 'response_id' },
  );

/**
 * A Responses body in internal form: background mode's own rules first, then the stored
 * conversation `previous_response_id` continues (the caller's own, unexpired).
 */
async function translateResponses(body: TextBody, model: ModelInfo, name: ModelName, ctx: AppContext) {
  if (body.background === true && body.stream === true) {
    throw new RequestError(
      400,
      'invalid_parameter_value',
      'Background responses are not streamed here: send background without stream, then GET /v1/responses/{id}.',
      { param: 'stream' },
    );
  }
  if (body.background === true && body.store === false) {
    throw new RequestError(
      400,
      'invalid_parameter_value',
      'A background response must be stored (store: false cannot be retrieved later).',
      { param: 'store' },
    );
  }
  let history: ChatMessage[] = [];
  if (body.previous_response_id) {
    const prev = await loadResponse(ctx.state.caller.accountId, body.previous_response_id);
    if (!prev)
      throw new RequestError(
        404,
        'previous_response_not_found',
        `Previous response '${body.previous_response_id}' was not found (unknown, expired, deleted, not stored, or another account's).`,
        { param: 'previous_response_id' },
      );
    history = prev.request.conversation;
  }
  return responsesToInternal(body, model, name, history);
}

textRoute(
  responsesRouter,
  {
    paths: v1('/responses'),
    envelope: 'openai',
    schema: responsesRequestSchema,
    surface: 'responses',
    redaction: true,
    webSearch: true,
    translate: translateResponses,
    questions: responsesQuestions,
  },
  async ({ ctx, body, model, input, redacted, search, prepare }) => {
    const caller = ctx.state.caller;
    if (redacted && body.background === true)
      // the answer is made by a worker, and restoring it there would put the personal data into the
      // workflow's history: refused rather than answered with placeholders
      throw new RequestError(
        400,
        'invalid_parameter_value',
        'PII redaction is not offered for background responses. Send the request without background, or turn redaction off (header redaction: false) to send it as it is.',
        { param: 'background' },
      );
    const call = await prepare({ holdTtlSeconds: body.background === true ? BACKGROUND_HOLD_SECONDS : undefined });
    const meta: ResponseMeta = {
      id: newId('resp'),
      createdAt: Math.floor(Date.now() / 1000),
      model: model.id,
      provider: '',
      showReasoning: !call.ctx.request.reasoning?.exclude,
      body,
      annotate: search?.hits ? (text) => responsesAnnotations(citationsIn(text, search.hits!)) : undefined,
    };
    const store = async (response: ResponseObject, turn: ChatMessage | null) => {
      if (body.store === false) return;
      await saveResponse(caller.accountId, response, {
        conversation: turn ? [...input.conversation, turn] : input.conversation,
        inputItems: inputItemsOf(body.input),
      });
    };
    if (body.stream) return streamResponse(ctx, call, meta, store);
    if (body.background === true) {
      ctx.body = await startBackgroundResponse(call, meta, input.conversation, caller);
      return;
    }

    const { result, route, usage, bill } = await completeOnce(ctx, call);
    const response = toResponse(result, usage, { ...meta, provider: route.provider.id });
    // web search: the answer's [n] markers (or a native search's own citations) as url_citation annotations
    const cites = search?.hits ? citationsIn(result.content, search.hits) : result.citations;
    if (cites) for (const item of response.output) if (item.type === 'message') setAnnotations(item, cites);
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

responsesRouter.post(v1('/responses/:id/cancel'), surface('openai'), authenticate, async (ctx) => {
  const caller = ctx.state.caller;
  const row = await loadResponse(caller.accountId, ctx.params.id);
  if (!row) throw notFound(ctx.params.id);
  if (!row.response.background)
    throw new RequestError(400, 'invalid_request', 'Only background responses can be cancelled.', {
      param: 'response_id',
    });
  // the workflow releases the reservation and marks the response; its `ended` update answers once it has
  if (row.status === 'queued' || row.status === 'in_progress')
    await cancelJobAndWait(ctx.params.id, 5_000, {
      code: 'background_unavailable',
      message:
        'The response could not be reached just now (the workflow engine is unavailable). Nothing changed; retry.',
    });
  ctx.body = (await loadResponse(caller.accountId, ctx.params.id))?.response ?? row.response;
});

responsesRouter.get(v1('/responses/:id'), surface('openai'), authenticate, async (ctx) => {
  const caller = ctx.state.caller;
  const row = await loadResponse(caller.accountId, ctx.params.id);
  if (!row) throw notFound(ctx.params.id);
  ctx.body = row.response;
});

// The caller's input to a stored response, a page at a time, as OpenAI lists it: `order` desc
// (newest first) by default, `after` an item id, `limit` 1-100.
responsesRouter.get(
  v1('/responses/:id/input_items'),
  surface('openai'),
  validateQuery({
    type: 'object',
    properties: {
      limit: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
      order: { enum: ['asc', 'desc'], default: 'desc' },
      after: { type: 'string', maxLength: 200 },
      before: { type: 'string', maxLength: 200 },
    },
  }),
  authenticate,
  async (ctx) => {
    const row = await loadResponse(ctx.state.caller.accountId, ctx.params.id);
    if (!row) throw notFound(ctx.params.id);
    const { limit, order, after, before } = ctx.state.query as {
      limit: number;
      order: 'asc' | 'desc';
      after?: string;
      before?: string;
    };
    const all = row.request.inputItems ?? [];
    const items = order === 'desc' ? [...all].reverse() : all;
    const at = (id: string, param: string) => {
      const i = items.findIndex((x) => x.id === id);
      if (i < 0)
        throw new RequestError(400, 'invalid_parameter_value', `No input item '${id}' in this response.`, { param });
      return i;
    };
    const end = before ? at(before, 'before') : items.length;
    const start = after ? at(after, 'after') + 1 : 0;
    const page = items.slice(start, Math.min(end, start + limit));
    ctx.body = {
      object: 'list',
      data: page,
      first_id: page[0]?.id ?? null,
      last_id: page.at(-1)?.id ?? null,
      has_more: start + page.length < end,
    };
  },
);

responsesRouter.delete(v1('/responses/:id'), surface('openai'), authenticate, async (ctx) => {
  const caller = ctx.state.caller;
  if (!(await deleteResponse(caller.accountId, ctx.params.id))) throw notFound(ctx.params.id);
  ctx.body = { id: ctx.params.id, object: 'response', deleted: true };
});
