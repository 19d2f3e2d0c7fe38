// POST /api/v1/messages (and /v1/messages): the message-style API (Anthropic Messages wire
// format), streaming or not, answered by the text pipeline through its codec
// (activities/surfaces/codecs/messages.ts); POST /api/v1/messages/count_tokens. `anthropic-version`
// and `anthropic-beta` headers are accepted and not required.
import Router from '@koa/router';
import { textRoute } from '../textRoute.js';
import { messagesCodec } from '../../activities/surfaces/codecs/messages.js';
import { surface } from '../middleware/surface.js';
import { refuseUnofferedFeatures } from '../middleware/notOffered.js';
import { authenticate } from '../middleware/auth.js';
import { validateBody } from '../validate.js';
import { v1 } from '../paths.js';
import { countTokensRequestSchema } from '../../activities/surfaces/schemas/messages.js';
import { clientAbortSignal } from '../clientAbort.js';
import { messagesToInternal } from '../../activities/surfaces/messages.js';
import { resolveModel } from '../../activities/catalog/resolve.js';
import { targetFor } from '../../activities/providers/registry.js';
import type { InferenceRequest } from '../../activities/core/types.js';
import { catalog } from '../../activities/catalog/catalog.js';
import { planRoute } from '../../activities/routing/planRoute.js';
import { likelyPromptTokens } from '../../activities/billing/pricing.js';
import { countPromptTokens } from '../../activities/providers/local/index.js';
import { countTokens as anthropicCountTokens } from '../../activities/providers/anthropic/index.js';
import type { AppState } from '../state.js';

export const messagesRouter = new Router<AppState>();

textRoute(messagesRouter, v1('/messages'), messagesCodec);

/**
 * count_tokens: the prompt's input tokens, not billed. The local model counts with its real
 * tokenizer; a model routed to Anthropic asks Anthropic's counter when a key is configured; any
 * other route (or a failed upstream count) answers the gateway's documented estimate
 * (likelyPromptTokens: about 4 bytes of UTF-8 a token, plus per-message framing and images).
 */
messagesRouter.post(
  v1('/messages/count_tokens'),
  surface('message'),
  refuseUnofferedFeatures,
  authenticate,
  validateBody(countTokensRequestSchema),
  async (ctx) => {
    // biome-ignore lint/suspicious/noExplicitAny: wire JSON
    const body = ctx.request.body as Record<string, any>;
    const caller = ctx.state.caller;
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
