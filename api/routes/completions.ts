// POST /api/v1/completions (and /v1/...): OpenAI's legacy text completions, streaming or not, in
// the OpenAI error envelope. The same path as chat: validate → resolveModel → translate (to the
// one internal request, with `prompt` set) → prepareCall (plan + reserve) → InferenceCall
// (complete with fallback, or openStream) → settle / fail. Only the wire shapes differ.
import Router from '@koa/router';
import { textRoute } from '../textRoute.js';
import { v1 } from '../paths.js';
import { completionsRequestSchema } from '../../activities/surfaces/schemas/completions.js';
import { completeOnce, streamOnce } from '../inference.js';
import { asRequestError, renderError } from '../errors.js';
import {
  CompletionChunker,
  completionsToInternal,
  toTextCompletion,
  type CompletionMeta,
} from '../../activities/surfaces/completions.js';
import type { AppState } from '../state.js';

export const completionsRouter = new Router<AppState>();

textRoute(
  completionsRouter,
  {
    paths: v1('/completions'),
    envelope: 'openai',
    schema: completionsRequestSchema,
    surface: 'completions',
    redaction: true,
    x402: true,
    translate: completionsToInternal,
  },
  async ({ ctx, body, model, input, prepare }) => {
    const forcePaygo =
      ctx.state.forcePaygo === true || body.billing_mode !== undefined || body.billingMode !== undefined;
    const call = await prepare({ forcePaygo });
    const meta: CompletionMeta = {
      id: `cmpl-${String(ctx.state.requestId).slice(4)}`,
      created: Math.floor(Date.now() / 1000),
      model: model.id,
      provider: '',
      topLogprobs: input.request.sampling.logprobs ? (input.request.sampling.topLogprobs ?? 0) : undefined,
      promptLength: input.prompt.length,
    };
    if (body.stream) {
      return streamOnce(ctx, call, (sse, route) => {
        const chunker = new CompletionChunker({ ...meta, provider: route.provider.id });
        return {
          // A completion shows only text: reasoning (from a reasoning model) and tool calls cannot be
          // shown here, but what was produced is still billed, as on chat.
          async event(e) {
            if (e.type === 'text') await sse.data(chunker.text(e.text, e.logprobs));
          },
          empty: (err) => sse.data(renderError(asRequestError(err), 'openai')),
          async end({ finish, usage, bill, failure }) {
            if (failure) await sse.data(renderError(asRequestError(failure), 'openai'));
            for (const frame of chunker.final(finish, usage, bill, input.includeUsage)) await sse.data(frame);
            await sse.data('[DONE]');
          },
        };
      });
    }
    const { result, route, usage, bill } = await completeOnce(ctx, call, (r) => !!r.content);
    ctx.body = toTextCompletion(result, usage, bill, { ...meta, provider: route.provider.id });
  },
);
