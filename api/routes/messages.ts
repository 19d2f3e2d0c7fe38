// POST /api/v1/messages (and /v1/messages): the message-style API (Anthropic Messages wire
// format), streaming or not, answered by the text pipeline through its codec
// (activities/surfaces/codecs/messages.ts); POST /api/v1/messages/count_tokens. `anthropic-version`
// and `anthropic-beta` headers are accepted and not required.
import Router from '@koa/router';
import { textRoute } from '../textRoute.js';
import { messagesCodec } from '../../activities/surfaces/codecs/messages.js';
import { surface } from '../middleware/surface.js';
import { refuseUnofferedBeside } from '../middleware/notOffered.js';
import { redactRequest } from '../../activities/redaction/mask.js';
import { redactionDecision, redactionSuffix } from '../../activities/redaction/policy.js';
import { config } from '../../activities/config.js';
import { authenticate } from '../middleware/auth.js';
import { validateBody } from '../validate.js';
import { v1 } from '../paths.js';
import { countTokensRequestSchema } from '../../activities/surfaces/schemas/messages.js';
import { clientAbortSignal } from '../clientAbort.js';
import { messagesToInternal } from '../../activities/surfaces/messages.js';
import { resolveModel } from '../../activities/catalog/resolve.js';
import { optionalCapability, targetFor } from '../../activities/providers/registry.js';
import type { InferenceRequest } from '../../activities/core/types.js';
import { catalog } from '../../activities/catalog/catalog.js';
import { planRoute } from '../../activities/routing/planRoute.js';
import { likelyPromptTokens } from '../../activities/billing/pricing.js';
import type { AppState } from '../state.js';

export const messagesRouter = new Router<AppState>();

textRoute(messagesRouter, v1('/messages'), messagesCodec);

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
