// Legacy text completions as a text surface (POST /api/v1/completions): the body through
// completionsToInternal (with `prompt` set), a whole answer as a `text_completion`, a stream of
// its chunks. Only text is shown: reasoning and tool calls cannot be, but what was produced is
// still billed, as on chat.
import type { TextCodec } from '../../inference/codec.js';
import type { TextRun } from '../../inference/codec.js';
import { CompletionChunker, type CompletionMeta, completionsToInternal, toTextCompletion } from '../completions.js';
import { asRequestError, renderError } from '../errors.js';
import { completionsRequestSchema } from '../schemas/completions.js';

type Run = TextRun<ReturnType<typeof completionsToInternal>>;

function meta(run: Run, provider: string): CompletionMeta {
  const { request } = run.input;
  return {
    id: `cmpl-${run.ex.requestId.slice(4)}`,
    created: Math.floor(Date.now() / 1000),
    model: run.model.id,
    provider,
    topLogprobs: request.sampling.logprobs ? (request.sampling.topLogprobs ?? 0) : undefined,
    promptLength: run.input.prompt.length,
  };
}

const errorFrame = (err: unknown) => renderError(asRequestError(err), 'openai');

export const completionsCodec: TextCodec<ReturnType<typeof completionsToInternal>> = {
  surface: 'completions',
  envelope: 'openai',
  schema: completionsRequestSchema,
  redaction: true,
  x402: true,
  translate: completionsToInternal,
  prepareExtra: ({ ex, body }) => ({
    forcePaygo: ex.forcePaygo || body.billing_mode !== undefined || body.billingMode !== undefined,
  }),
  answered: (r) => !!r.content,
  whole: (run, _call, { result, route, usage, bill }) =>
    toTextCompletion(result, usage, bill, meta(run, route.provider.id)),
  stream(run, _call, sse, route) {
    const chunker = new CompletionChunker(meta(run, route.provider.id));
    return {
      async event(e) {
        if (e.type === 'text') await sse.data(chunker.text(e.text, e.logprobs));
      },
      empty: (err) => sse.data(errorFrame(err)),
      async end({ finish, usage, bill, failure }) {
        if (failure) await sse.data(errorFrame(failure));
        for (const frame of chunker.final(finish, usage, bill, run.input.includeUsage)) await sse.data(frame);
        await sse.data('[DONE]');
      },
    };
  },
};
