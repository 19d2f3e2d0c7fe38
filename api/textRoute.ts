// The one preamble of every billed text route (chat, messages, responses, completions,
// talk-to-gpt), so they cannot drift apart: the surface's envelope and body, the refusal of
// features not offered yet (middleware/notOffered.ts), the API key,
// X-Billing-Mode, the Ajv schema; then, unless the body asks for the `questions` format (a decision
// model answers instead: questionsFormat.ts), the model (suffixes included), the surface's translation
// into the one internal request, the X-Provider header, and a `prepare()` that plans the routes and
// reserves the worst case (activities/inference/prepare.ts). A `:memory` suffix compresses the
// conversation before the latest user turn first (activities/memory/memory.ts; charged on its own,
// and given back with the rest if the answer never reaches the caller); the compressed request is
// then translated, never passed through. Web search (`:online`, `web_search`, `web_search_options`)
// then searches for the latest user message and puts the results before it (activities/search/
// online.ts; charged on its own, given back likewise); the handler gets the results to cite. PII
// redaction (asked for by the `redaction` header, a `:redaction` suffix, or the key's or account's
// default) masks the request before anything is reserved or sent, and refuses it if masking fails
// (activities/redaction/); a route that does not offer it refuses a request that asked
// (policy.ts: redactionDecision); a redacted request is translated too, and its answer restored.
// On chat completions the `moderation` header runs the paid input-safety preflight
// (api/moderationPreflight.ts) once every answer's worst case is reserved, so a request that could
// not be answered or paid for is refused with nothing charged; the preflight is charged
// whatever it finds, and a flagged request (`content_policy_violation`) gives the answers'
// reservations back. The handler only answers. Whatever the handler does, an answer the caller
// never receives is not charged: a failure after the money moved releases or refunds it, and so
// does a caller gone before the answer was written.
import type Router from '@koa/router';
import type { Schema } from 'ajv';
import type { ModelInfo } from '../activities/catalog/catalog.js';
import type { InferenceCall } from '../activities/inference/execute.js';
import type { InferenceRequest } from '../activities/core/types.js';
import { type PrepareInput, planCall, prepareCall, resolveModel } from '../activities/inference/prepare.js';
import type { ModelName } from '../activities/routing/suffixes.js';
import { withMemory } from '../activities/memory/memory.js';
import { bothBalanceError, OnlineSearch } from '../activities/search/online.js';
import { nativeSearch } from '../activities/search/native.js';
import { webSearchSettings } from '../activities/search/settings.js';
import { clientAbortSignal } from './clientAbort.js';
import { RequestError } from '../activities/core/errors.js';
import type { Envelope } from './errors.js';
import { chargeOnDelivery } from './inference.js';
import { authenticate } from './middleware/auth.js';
import { billingMode } from './middleware/billingMode.js';
import { refuseUnofferedBeside } from './middleware/notOffered.js';
import { moderationPreflight, moderationWanted } from './moderationPreflight.js';
import { config } from '../activities/config.js';
import { redactRequest } from '../activities/redaction/mask.js';
import {
  REDACTION_FEE_NANO_USD,
  redactionDecision,
  redactionSuffix,
  redactionWanted,
} from '../activities/redaction/policy.js';
import { surface } from './middleware/surface.js';
import type { AppContext, AppState } from './state.js';
import { validateBody } from './validate.js';
import compose from 'koa-compose';
import type { Middleware } from 'koa';
import { admitX402, authenticateOrX402, finishPaid, unclaimPaid } from './x402.js';
import type { QuestionsFormat } from './questionsFormat.js';

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
  /** the request was masked before it leaves (PII redaction); its answer is restored */
  redacted: boolean;
  /** the web search before the model call (undefined: none); its `hits` and `fee` are known once prepare() returned */
  search?: OnlineSearch;
  /**
   * plan and reserve: the caller, request id, surface, model, input and billing mode are filled in.
   * A request answered by several calls (chat's `n`) prepares each with its `part` (1, 2, ...): its
   * own request id (`<id>:<part>`), reservation and charge; the first call keeps the plain id.
   */
  prepare(
    extra?: Pick<PrepareInput, 'holdTtlSeconds' | 'passHeaders' | 'native' | 'forcePaygo'> & {
      part?: number;
      /**
       * one phase of a request answered by several models (chat's advisor: api/advisor.ts): its own
       * model, request, needs and preferences instead of the caller's; translated, never passed through
       */
      phase?: Pick<PrepareInput, 'model' | 'request' | 'needs' | 'prefs'>;
    },
  ): Promise<InferenceCall>;
}

export interface TextRouteSpec<T extends Translated> {
  paths: string | string[];
  envelope: Envelope;
  schema: Schema;
  /** what request records and ledger reasons call it */
  surface: string;
  /** the route offers PII redaction; where it does not, asking for it (any way) is refused */
  redaction?: boolean;
  /** the route offers the `moderation` header's paid preflight (chat completions); elsewhere it is refused */
  moderation?: boolean;
  /** web search (`:online`, `web_search`) is offered here (chat, responses, talk-to-gpt); elsewhere refused */
  webSearch?: boolean;
  /** the body in internal form (may look things up, e.g. a stored conversation) */
  translate(body: TextBody, model: ModelInfo, name: ModelName, ctx: AppContext): T | Promise<T>;
  /** accountless x402 payment is offered (non-streaming requests; api/x402.ts) */
  x402?: boolean;
  /** the surface's form of a decision request (questionsFormat.ts): answered by a decision model instead */
  questions?: QuestionsFormat;
}

/**
 * The x402 routes by surface (the payment's `route`), each as validation + handler: POST
 * /api/x402/complete/{id} runs the quoted request through it with the stored body.
 */
export const x402Routes = new Map<string, Middleware<AppState>>();

/**
 * A decision model answers the `questions` format (questionsFormat.ts), with neither PII redaction nor
 * the moderation preflight: a request asking for either (by header, or by its key's or account's
 * redaction default) is refused before anything is reserved or sent, rather than answered without
 * it. Model suffixes on a decision model are refused by resolveModel (inference/prepare.ts).
 */
function refuseAddOnsWithQuestions(ctx: AppContext, spec: { redaction?: boolean; moderation?: boolean }): void {
  if (redactionWanted({ headers: ctx.headers, suffix: false, callerDefault: ctx.state.caller.redaction }))
    throw new RequestError(
      400,
      'invalid_parameter_value',
      "The questions format is answered by a decision model, which is not offered with PII redaction. Send the request with the header 'redaction: false' (it overrides a key's or account's default) to have it answered unredacted, or leave out the questions format.",
      { param: 'redaction' },
    );
  if (spec.moderation && moderationWanted(ctx))
    throw new RequestError(
      400,
      'invalid_parameter_value',
      "The questions format is answered by a decision model, which is not offered with the moderation preflight. Remove the 'moderation' header (or set it to false), or leave out the questions format.",
      { param: 'moderation' },
    );
}

export function textRoute<T extends Translated>(
  router: Router<AppState>,
  spec: TextRouteSpec<T>,
  answer: (t: TextRequest<T>) => Promise<void>,
): void {
  const preamble = [
    surface(spec.envelope),
    refuseUnofferedBeside(spec),
    spec.x402 ? authenticateOrX402 : authenticate,
    billingMode,
  ];
  const handler: Middleware<AppState> = async (ctx) => {
    const body = ctx.request.body as TextBody;
    const questions = spec.questions?.find(body);
    if (questions !== undefined) {
      refuseAddOnsWithQuestions(ctx, spec);
      return spec.questions?.answer(ctx, body, questions);
    }
    const { model, name } = resolveModel(body.model);
    // applied where the route offers it, refused (400) where it does not: never ignored
    const redact =
      redactionDecision(
        spec.redaction === true,
        {
          headers: ctx.headers,
          suffix: redactionSuffix(name),
          callerDefault: ctx.state.caller.redaction,
        },
        `this endpoint (${spec.surface})`,
      ) === 'apply';
    // the /api/v1thinking/ base path asks what `:thinking` asks, unless the name turns reasoning off
    if (ctx.state.thinkingPath && name.reasoningEffort !== 'none') name.thinking = true;
    const moderation = spec.moderation ? moderationWanted(ctx) : undefined;
    const input = await spec.translate(body, model, name, ctx);
    const web = webSearchSettings(name, body);
    if (web && !spec.webSearch)
      throw new RequestError(
        400,
        'invalid_parameter_value',
        `Web search (asked for by ${web.source}) is offered on chat completions, responses and talk-to-gpt, not on this endpoint. Remove it, or use one of those.`,
        { param: web.source.startsWith('the') ? 'model' : web.source.replace(/'/g, '') },
      );
    // native search: the model's provider searches (routes with `native_web_search`), billed with the call
    const nativeWeb = web ? nativeSearch(web, model, body.max_tool_calls) : undefined;
    const native = nativeWeb !== undefined;
    if (nativeWeb) {
      input.request.webSearch = nativeWeb.request;
      input.needs.nativeWebSearch = true;
    }
    const provider = ctx.get('x-provider').trim();
    if (provider) input.prefs.explicit = provider;
    let paid: string | undefined;
    if (ctx.state.x402) {
      if (name.memory)
        throw new RequestError(400, 'invalid_parameter_value', 'x402 payments do not cover the :memory suffix.', {
          param: 'model',
        });
      if (web)
        throw new RequestError(400, 'invalid_parameter_value', 'x402 payments do not cover web search.', {
          param: web.source.startsWith('the') ? 'model' : web.source.replace(/'/g, ''),
        });
      // a quote keeps the body, not the headers: a redaction header would be lost at completion
      // (the ':redaction' suffix is part of the body, so it is quoted with the fee and applied)
      if (redact && !name.redaction)
        throw new RequestError(
          400,
          'invalid_parameter_value',
          "x402 payments do not carry the 'redaction' header to the paid request. Ask for PII redaction with the model suffix ':redaction' instead, or leave the header out.",
          { param: 'redaction' },
        );
      // priced as it would be reserved: the dearest route's worst case
      const worst = () =>
        planCall({
          caller: ctx.state.caller,
          requestId: ctx.state.requestId,
          surface: spec.surface,
          model,
          request: input.request,
          needs: input.needs,
          prefs: input.prefs,
        }).metered.worstCase() + (redact ? REDACTION_FEE_NANO_USD : 0n);
      paid = await admitX402(ctx, spec.surface, body, worst);
    }
    const calls: InferenceCall[] = [];
    let searched: Promise<InferenceRequest['messages']> | undefined;
    // The preflight runs once, when the first call is sent, so after every call of the request is
    // reserved: a request that cannot be planned or afforded is refused before it is charged, and
    // a flagged one gives its reservations back (below). It reads the masked messages, so its
    // upstream sees no more personal data than the answer's.
    let moderated: Promise<void> | undefined;
    const preflight = moderation
      ? () => {
          moderated ??= moderationPreflight(ctx, moderation, input.request);
          return moderated;
        }
      : undefined;
    // Masked first: the memory's model, the search provider (its query is the latest user message)
    // and the moderation preflight read the masked text, as the answer's upstream does.
    let redaction: PrepareInput['redaction'];
    if (redact) {
      const masked = await redactRequest(input.request, config.redactionTimeoutMs);
      input.request = masked.request;
      redaction = { redactor: masked.redactor, feeUsd: REDACTION_FEE_NANO_USD };
      const { masked: byCategory, credentials } = masked.redactor.counts;
      const count = Object.values(byCategory).reduce((n, c) => n + c, 0);
      ctx.set('X-Redaction', `applied; pii=${count}; credentials=${credentials}`);
    }
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
    let search: OnlineSearch | undefined;
    try {
      // the search's fee first: a balance that cannot pay it spends nothing (activities/search/online.ts)
      search =
        web && !native
          ? new OnlineSearch(ctx.state.caller, ctx.state.requestId, input.request.messages, web)
          : undefined;
      await search?.reserve();
    } catch (err) {
      await memory?.call.metered.abandon((err as { code?: string }).code ?? 'error');
      throw err;
    }
    // the caller's own body no longer is what is sent: translate, never pass through
    const rewritten = !!memory || !!search || native;
    try {
      await answer({
        ctx,
        body,
        model,
        input,
        redacted: redaction !== undefined,
        search,
        prepare: async ({ part, phase, ...extra } = {}) => {
          if (phase && (search || nativeWeb))
            throw new Error('a phase of its own is not combined with web search (refused before this)');
          const call = await prepareCall({
            caller: ctx.state.caller,
            requestId: part ? `${ctx.state.requestId}:${part}` : ctx.state.requestId,
            surface: spec.surface,
            model,
            // with a web search: reserved with room for its results, which are searched for after
            request: search ? { ...input.request, messages: search.withRoom(input.request.messages) } : input.request,
            needs: input.needs,
            prefs: input.prefs,
            ...extra,
            // the caller's own body still holds the whole conversation, no search results, and the personal data
            native: rewritten || redaction ? undefined : extra.native,
            redaction,
            searchFee: nativeWeb?.fee,
            forcePaygo: extra.forcePaygo || ctx.state.forcePaygo === true,
            ...phase,
          });
          calls.push(call);
          call.beforeSend = preflight;
          // one search for the request, however many calls answer it (chat's `n`), after the
          // preflight: a flagged request is not searched for
          if (search) {
            await preflight?.();
            searched ??= search.run(input.request.messages, clientAbortSignal(ctx));
            call.ctx.request.messages = await searched;
          }
          return call;
        },
      });
    } catch (err) {
      // Whatever failed once the money had moved (storing the answer, shaping it), the caller gets
      // this error instead of the answer: release the reservation or refund the charge.
      for (const metered of [...calls.map((c) => c.metered), memory?.call.metered, search?.call.metered])
        await metered
          ?.abandon((err as { code?: string }).code ?? 'error')
          .catch((e) => console.error(`[api] ${ctx.state.requestId}: could not give back the money:`, e));
      // a paid x402 request that failed stays paid, to be completed again
      if (paid) await unclaimPaid(paid);
      throw search ? bothBalanceError(err) : err;
    }
    // a search reserved for an answer that never called the model is released
    if (search && !search.outcome) await search.call.metered.abandon('unused');
    for (const call of calls) chargeOnDelivery(ctx, call.metered);
    // The memory and the search went into the answer, so they are charged when the answer is: a
    // stream has already delivered (and ended the response) by now, so they are delivered with it;
    // a whole answer is delivered once written out, with the same check as the answer's own charge.
    for (const addOn of [memory?.call.metered, search?.call.metered]) {
      if (!addOn) continue;
      if (calls.some((c) => c.metered.isDelivered)) addOn.delivered();
      else chargeOnDelivery(ctx, addOn);
    }
    if (paid) await finishPaid(paid);
  };
  router.post(spec.paths, ...preamble, validateBody(spec.schema), handler);
  if (spec.x402) x402Routes.set(spec.surface, compose([validateBody(spec.schema), handler]));
}
