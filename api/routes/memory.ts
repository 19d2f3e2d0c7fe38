// POST /api/v1/memory (and /v1/...): a conversation compressed into one system message, without a
// model (activities/memory/). Errors are plain `{error: "..."}` bodies (the legacy envelope), as
// the spec gives them: 400 `messages must be a non-empty array`, 401, 402 `Insufficient balance`,
// 429. The `memory_expiration_days` header (1-365) overrides the body's `expiration_days`.
import Router from '@koa/router';
import { clientAbortSignal } from '../clientAbort.js';
import { chargeOnDelivery } from '../delivery.js';
import { authenticate } from '../middleware/auth.js';
import { refuseUnofferedRedaction } from '../middleware/notOffered.js';
import { surface } from '../middleware/surface.js';
import { v1 } from '../paths.js';
import { memoryRequestSchema } from '../../activities/surfaces/schemas/memory.js';
import { validateBody } from '../validate.js';
import { RequestError } from '../../activities/core/errors.js';
import { MemoryCall, memoryRequest } from '../../activities/memory/memory.js';
import { billOf } from '../../activities/metering/meteredCall.js';
import type { AppState } from '../state.js';

export const memoryRouter = new Router<AppState>();

/** The header's days (1-365), or undefined when it is absent. */
function headerDays(raw: string): number | undefined {
  if (raw.trim() === '') return undefined;
  const days = Number(raw.trim());
  if (!Number.isInteger(days) || days < 1 || days > 365)
    throw new RequestError(
      400,
      'invalid_parameter_value',
      `The memory_expiration_days header must be a whole number of days from 1 to 365; it is '${raw}'.`,
      { param: 'memory_expiration_days' },
    );
  return days;
}

const preamble = [surface('legacy'), authenticate, refuseUnofferedRedaction, validateBody(memoryRequestSchema)];

memoryRouter.post(v1('/memory'), ...preamble, async (ctx) => {
  const req = memoryRequest(ctx.request.body as object, headerDays(ctx.get('memory_expiration_days')));
  const call = new MemoryCall(ctx.state.caller, ctx.state.requestId, req);
  const { compressed, cachedTokens, charge } = await call.run(clientAbortSignal(ctx));
  chargeOnDelivery(ctx, call.metered);
  const bill = billOf(charge);
  ctx.body = {
    messages: [{ role: 'system', content: compressed.content }],
    usage: {
      prompt_tokens: compressed.inputTokens,
      completion_tokens: compressed.outputTokens,
      total_tokens: compressed.inputTokens + compressed.outputTokens,
      prompt_tokens_details: { cached_tokens: cachedTokens },
    },
    expiration_days: req.expirationDays,
    cost: bill.cost,
    paymentSource: bill.paymentSource,
    remainingBalance: bill.remainingBalance,
  };
});
