// POST /api/v1/chat/completions (and /v1/...): OpenAI-style chat, streaming or not. The route
// only translates and streams; planning, money and provider calls are activities.
import Router from '@koa/router';
import { textRoute } from '../textRoute.js';
import { chatQuestions } from '../questionsFormat.js';
import { v1 } from '../paths.js';
import { chatRequestSchema } from '../schemas/chat.js';
import { completeOnce, streamOnce } from '../inference.js';
import { asRequestError, renderError } from '../errors.js';
import { chatToInternal } from '../../activities/surfaces/chat.js';
import {
  ChatChunker,
  mergeCompletions,
  toChatCompletion,
  type ChatMeta,
  type WebSearchShown,
  withSearchCitations,
} from '../../activities/surfaces/chatResponse.js';
import { citationsIn } from '../../activities/search/context.js';
import { ChatRelay, chatPassThroughBody, passedThroughCompletion } from '../../activities/surfaces/chatPassthrough.js';
import type { ModelInfo } from '../../activities/catalog/catalog.js';
import type { InferenceCall } from '../../activities/inference/execute.js';
import { RequestError } from '../../activities/core/errors.js';
import type { TextBody, TextRequest } from '../textRoute.js';
import type { AppContext, AppState } from '../state.js';
import { attests, verifyAnswer } from '../../activities/tee/tee.js';
import { clientAbortSignal } from '../clientAbort.js';
import { advisorWanted, answerWithAdvisor } from '../advisor.js';

export const chatRouter = new Router<AppState>();

textRoute(
  chatRouter,
  {
    // the subscription's path is the same route: the allowance applies on both (README, Subscriptions)
    paths: [...v1('/chat/completions'), '/api/subscription/v1/chat/completions'],
    envelope: 'openai',
    schema: chatRequestSchema,
    surface: 'chat',
    redaction: true,
    moderation: true,
    webSearch: true,
    x402: true,
    // the advisor's checks first (api/advisor.ts): a refused request costs nothing
    async translate(body, model, name, ctx) {
      const advisor = await advisorWanted(ctx, body, model, name);
      // the translation's own object, completed rather than copied
      if (!advisor) return Object.assign(chatToInternal(body, model, name), { advisor });
      const { advisor: _, ...rest } = body;
      return { ...chatToInternal(rest, model, name), advisor };
    },
    questions: {
      // the `questions` format is structured output, which the advisor does not combine with
      find(body) {
        const questions = chatQuestions.find(body);
        if (questions !== undefined && body.advisor !== undefined && body.advisor !== null)
          throw new RequestError(
            400,
            'invalid_parameter_value',
            "'advisor' cannot be combined with structured output (response_format questions). Remove one of them.",
            { param: 'response_format' },
          );
        return questions;
      },
      answer: chatQuestions.answer,
    },
  },
  async ({ ctx, body, model, input, search, prepare }) => {
    if (input.advisor) return answerWithAdvisor({ ctx, model, input, prepare }, input.advisor);
    if (body.n > 1) return answerChoices(ctx, body, model, input, prepare, !!search || !!input.request.webSearch);
    // web search on: citations of the answer's [n] markers (external) or the upstream's own (native)
    const web = (text: string, native?: WebSearchShown['citations']): WebSearchShown | undefined =>
      search?.hits
        ? { citations: citationsIn(text, search.hits), sourceUrls: search.hits.map((h) => h.url), fee: search.fee }
        : input.request.webSearch
          ? { citations: native ?? [], sourceUrls: [] }
          : undefined;
    // routes to an OpenAI-compatible upstream get the caller's own body (pass-through); others the translation
    const call = await prepare({ native: chatPassThroughBody(body) });
    // what translated answers show (a passed-through one shows the upstream's own)
    const created = Math.floor(Date.now() / 1000);
    const meta = (provider: string): ChatMeta => ({
      id: `chatcmpl-${String(ctx.state.requestId).slice(4)}`,
      created,
      model: model.id,
      provider,
      showReasoning: !call.ctx.request.reasoning?.exclude,
      maxToolCalls: input.maxToolCalls,
    });
    if (body.stream) {
      return streamOnce(ctx, call, (sse, route, passedThrough) => {
        if (passedThrough) {
          const relay = new ChatRelay({ model: model.id, provider: route.provider.id }, input.includeUsage);
          return {
            event(e) {
              const data = e.type === 'native' ? relay.chunk(e) : null;
              return data === null ? undefined : sse.data(data);
            },
            empty: (err) => sse.data(renderError(asRequestError(err), 'openai')),
            // a stream that broke still says what it cost: the error frame, then the bill, as translated
            async end({ usage, bill, failure }) {
              if (failure) await sse.data(renderError(asRequestError(failure), 'openai'));
              for (const data of relay.final(usage, bill)) await sse.data(data);
              await sse.data('[DONE]');
            },
          };
        }
        const chunker = new ChatChunker(meta(route.provider.id));
        return {
          start: () => sse.data(chunker.first()),
          event(e) {
            const frame = chunker.event(e);
            return frame ? sse.data(frame) : undefined;
          },
          empty: (err) => sse.data(renderError(asRequestError(err), 'openai')),
          async end({ finish, usage, bill, failure }) {
            if (failure) await sse.data(renderError(asRequestError(failure), 'openai'));
            const shown = web(chunker.content);
            for (const frame of chunker.final(finish, usage, bill, input.includeUsage, shown)) await sse.data(frame);
            await sse.data('[DONE]');
          },
        };
      });
    }
    const { result, route, usage, bill } = await completeOnce(ctx, call);
    let answer: Record<string, unknown>;
    if (result.native) {
      answer = passedThroughCompletion(result.native, usage, bill, { model: model.id, provider: route.provider.id });
    } else {
      const completion = toChatCompletion(result, usage, bill, meta(route.provider.id));
      const shown = web(result.content, result.citations);
      answer = shown ? withSearchCitations(completion, shown, 'message') : completion;
    }
    // a TEE model's answer says whether the gateway verified its signature against a fresh attestation;
    // its `id` is the upstream's, the one GET /api/v1/tee/signature/{requestId} takes
    const chatId = (result.native?.id as string | undefined) ?? result.upstreamId;
    if (attests(route) && chatId) {
      const { verification } = await verifyAnswer(route, chatId, clientAbortSignal(ctx), {
        digests: result.bodyDigests,
      });
      answer.id = chatId;
      answer.tee_verification = verification;
      ctx.set('X-TEE-Verified', String(verification.verified));
    }
    ctx.body = answer;
  },
);

/**
 * Chat's `n` > 1: n calls, one per choice, each planned, reserved, charged and given back on its
 * own (request ids `<id>:1` ... `<id>:n-1` beside the plain one), answered as one completion with n
 * choices. Every reservation is made before any call runs, so an account that can pay for fewer
 * than n is refused up front; if any call fails the request fails and the calls that did answer
 * are given back (textRoute abandons every prepared call), so a caller is charged for n choices
 * or none. Not streamed: interleaving n streams' chunks is left out (the request says so).
 */
async function answerChoices(
  ctx: AppContext,
  body: TextBody,
  model: ModelInfo,
  input: ReturnType<typeof chatToInternal>,
  prepare: TextRequest<ReturnType<typeof chatToInternal>>['prepare'],
  searching: boolean,
): Promise<void> {
  if (body.stream)
    throw new RequestError(400, 'invalid_parameter_value', 'n > 1 is answered without streaming: send stream: false.', {
      param: 'n',
    });
  // one search, n answers citing it: not offered yet (the citations are per answer)
  if (searching)
    throw new RequestError(400, 'invalid_parameter_value', 'n > 1 is not combined with web search here: send n: 1.', {
      param: 'n',
    });
  const { n: _n, ...one } = body;
  const calls: InferenceCall[] = [];
  for (let part = 0; part < body.n; part++) calls.push(await prepare({ native: chatPassThroughBody(one), part }));
  const created = Math.floor(Date.now() / 1000);
  // every call ends (answered or given back) before the request answers or fails
  const settled = await Promise.allSettled(
    calls.map(async (call) => {
      const { result, route, usage, bill } = await completeOnce(ctx, call);
      const meta: ChatMeta = {
        id: `chatcmpl-${String(ctx.state.requestId).slice(4)}`,
        created,
        model: model.id,
        provider: route.provider.id,
        showReasoning: !call.ctx.request.reasoning?.exclude,
        maxToolCalls: input.maxToolCalls,
      };
      const out = result.native
        ? passedThroughCompletion(result.native, usage, bill, { model: model.id, provider: route.provider.id })
        : toChatCompletion(result, usage, bill, meta);
      return { body: out as Record<string, unknown>, usage, bill };
    }),
  );
  const failed = settled.find((s) => s.status === 'rejected');
  if (failed) throw failed.reason;
  ctx.body = mergeCompletions(settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : [])));
}
