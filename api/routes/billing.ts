// GET /api/v1/billing/{requestId}: what one request cost, for 24 hours and to the API key that
// made it only (activities/billing/lookup.ts). Another key, an older or unknown id: 404.
import Router from '@koa/router';
import { lookUpBilledRequest } from '../../activities/billing/lookup.js';
import { formatAmount } from '../../activities/core/money.js';
import { RequestError } from '../../activities/core/errors.js';
import { authenticate } from '../middleware/auth.js';
import { surface } from '../middleware/surface.js';
import { v1 } from '../paths.js';
import type { AppState } from '../state.js';

export const billingRouter = new Router<AppState>();

billingRouter.get(v1('/billing/:requestId'), surface('openai'), authenticate, async (ctx) => {
  const keyId = ctx.state.caller.keyId;
  const found = keyId ? await lookUpBilledRequest(ctx.params.requestId, keyId) : null;
  if (!found)
    throw new RequestError(
      404,
      'not_found',
      'No request with this id was made with this API key in the last 24 hours.',
      { param: 'requestId' },
    );
  ctx.body = {
    object: 'billing.request',
    request_id: found.id,
    surface: found.surface,
    model: found.model,
    provider: found.providerId,
    status: found.status,
    cost: found.cost === null || found.currency === null ? '0' : formatAmount(found.cost, found.currency),
    currency: found.currency ?? 'USD',
    input_tokens: found.inputTokens,
    output_tokens: found.outputTokens,
    error_code: found.errorCode,
    created_at: found.startedAt.toISOString(),
    finished_at: found.finishedAt?.toISOString() ?? null,
  };
});
