// POST /api/v1/responses (and /v1/responses): the OpenAI Responses API, streaming or not, answered
// by the text pipeline through its codec (activities/surfaces/codecs/responses.ts), with stored
// responses (GET / DELETE /api/v1/responses/{id}) and previous_response_id chaining. Background
// mode (`background: true`) hands the call to the `backgroundResponse` Temporal workflow (workflow
// id = response id) and answers at once; POST /responses/{id}/cancel cancels that workflow.
import Router from '@koa/router';
import { RequestError } from '../../activities/core/errors.js';
import { cancelJobAndWait } from '../../activities/jobs/jobs.js';
import { responsesCodec } from '../../activities/surfaces/codecs/responses.js';
import { deleteResponse, loadResponse } from '../../activities/surfaces/responsesStore.js';
import { authenticate } from '../middleware/auth.js';
import { surface } from '../middleware/surface.js';
import { v1 } from '../paths.js';
import type { AppState } from '../state.js';
import { textRoute } from '../textRoute.js';
import { validateQuery } from '../validate.js';

export const responsesRouter = new Router<AppState>();

const notFound = (id: string) =>
  new RequestError(
    404,
    'response_not_found',
    `No response with id '${id}' (it may belong to another account, have expired, or have been stored with store: false).`,
    { param: 'response_id' },
  );

textRoute(responsesRouter, v1('/responses'), responsesCodec);

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
