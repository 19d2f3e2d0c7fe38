// The one preamble of every billed text route (chat, messages, responses, completions,
// talk-to-gpt), so they cannot drift apart: the surface's envelope and body, the refusal of
// features not offered yet (middleware/notOffered.ts), the API key,
// X-Billing-Mode, the Ajv schema; then the model (suffixes included), the surface's translation
// into the one internal request, the X-Provider header, and a `prepare()` that plans the routes and
// reserves the worst case (activities/inference/prepare.ts). A `:memory` suffix compresses the
// conversation before the latest user turn first (activities/memory/memory.ts; charged on its own,
// and given back with the rest if the answer never reaches the caller); the compressed request is
// then translated, never passed through. The handler only answers. Whatever
// the handler does, an answer the caller never receives is not charged: a failure after the
// money moved releases or refunds it, and so does a caller gone before the answer was written.
import type Router from '@koa/router';
import type { Schema } from 'ajv';
import type { ModelInfo } from '../activities/catalog/catalog.js';
import type { InferenceCall } from '../activities/inference/execute.js';
import { type PrepareInput, prepareCall, resolveModel } from '../activities/inference/prepare.js';
import type { ModelName } from '../activities/routing/suffixes.js';
import { withMemory } from '../activities/memory/memory.js';
import { clientAbortSignal } from './clientAbort.js';
import type { Envelope } from './errors.js';
import { chargeOnDelivery } from './inference.js';
import { authenticate } from './middleware/auth.js';
import { billingMode } from './middleware/billingMode.js';
import { refuseUnofferedFeatures } from './middleware/notOffered.js';
import { surface } from './middleware/surface.js';
import type { AppContext, AppState } from './state.js';
import { validateBody } from './validate.js';

/** A text request body once its schema has passed: wire JSON, read field by field by its surface. */
// biome-ignore lint/suspicious/noExplicitAny: the surface's translation checks every field it reads
export type TextBody = Record<string, any>;

/** What a surface's translation yields: the internal request and what planning needs. */
type Translated = Pick<PrepareInput, 'request' | 'needs' | 'prefs'>;

export interface TextRequest<T extends Translated> {
  ctx: AppContext;
  body: TextBody;
  model: ModelInfo;
  input: T;
  /**
   * plan and reserve: the caller, request id, surface, model, input and billing mode are filled in.
   * A request answered by several calls (chat's `n`) prepares each with its `part` (1, 2, ...): its
   * own request id (`<id>:<part>`), reservation and charge; the first call keeps the plain id.
   */
  prepare(
    extra?: Pick<PrepareInput, 'holdTtlSeconds' | 'passHeaders' | 'native' | 'forcePaygo'> & { part?: number },
  ): Promise<InferenceCall>;
}

export interface TextRouteSpec<T extends Translated> {
  paths: string | string[];
  envelope: Envelope;
  schema: Schema;
  /** what request records and ledger reasons call it */
  surface: string;
  /** the body in internal form (may look things up, e.g. a stored conversation) */
  translate(body: TextBody, model: ModelInfo, name: ModelName, ctx: AppContext): T | Promise<T>;
}

export function textRoute<T extends Translated>(
  router: Router<AppState>,
  spec: TextRouteSpec<T>,
  answer: (t: TextRequest<T>) => Promise<void>,
): void {
  const preamble = [
    surface(spec.envelope),
    refuseUnofferedFeatures,
    authenticate,
    billingMode,
    validateBody(spec.schema),
  ];
  router.post(spec.paths, ...preamble, async (ctx) => {
    const body = ctx.request.body as TextBody;
    const { model, name } = resolveModel(body.model);
    // the /api/v1thinking/ base path asks what `:thinking` asks, unless the name turns reasoning off
    if (ctx.state.thinkingPath && name.reasoningEffort !== 'none') name.thinking = true;
    const input = await spec.translate(body, model, name, ctx);
    const provider = ctx.get('x-provider').trim();
    if (provider) input.prefs.explicit = provider;
    const calls: InferenceCall[] = [];
    const memory = name.memory
      ? await withMemory(
          ctx.state.caller,
          ctx.state.requestId,
          input.request.messages,
          model.contextLength,
          clientAbortSignal(ctx),
        )
      : undefined;
    if (memory) input.request.messages = memory.messages;
    try {
      await answer({
        ctx,
        body,
        model,
        input,
        prepare: async ({ part, ...extra } = {}) => {
          const call = await prepareCall({
            caller: ctx.state.caller,
            requestId: part ? `${ctx.state.requestId}:${part}` : ctx.state.requestId,
            surface: spec.surface,
            model,
            request: input.request,
            needs: input.needs,
            prefs: input.prefs,
            ...extra,
            // the caller's own body still holds the whole conversation
            native: memory ? undefined : extra.native,
            forcePaygo: extra.forcePaygo || ctx.state.forcePaygo === true,
          });
          calls.push(call);
          return call;
        },
      });
    } catch (err) {
      // Whatever failed once the money had moved (storing the answer, shaping it), the caller gets
      // this error instead of the answer: release the reservation or refund the charge.
      for (const metered of [...calls.map((c) => c.metered), memory?.call.metered])
        await metered
          ?.abandon((err as { code?: string }).code ?? 'error')
          .catch((e) => console.error(`[api] ${ctx.state.requestId}: could not give back the money:`, e));
      throw err;
    }
    for (const call of calls) chargeOnDelivery(ctx, call.metered);
    // The memory went into the answer, so it is charged when the answer is: a stream has already
    // delivered (and ended the response) by now, so the memory is delivered with it; a whole answer
    // is delivered once written out, with the same check as the answer's own charge.
    if (memory) {
      if (calls.some((c) => c.metered.isDelivered)) memory.call.metered.delivered();
      else chargeOnDelivery(ctx, memory.call.metered);
    }
  });
}
