import { RequestError } from '../../core/errors.js';
import type { Completed } from '../../inference/answer.js';
import type { TextCodec } from '../../inference/codec.js';
import type { InferenceCall } from '../../inference/execute.js';
import type { TextRun } from '../../inference/codec.js';
import { citationsIn } from '../../search/context.js';
import { attests, verifyAnswer } from '../../tee/tee.js';
import { type ChatPlanInput, chatToInternal } from '../chat.js';
import { ChatRelay, chatPassThroughBody } from '../chatPassthrough.js';
import { ChatChunker, type toChatCompletion, type WebSearchShown, withSearchCitations } from '../chatResponse.js';
import { asRequestError, renderError } from '../errors.js';
import { chatQuestions } from '../questions.js';
import { chatRequestSchema } from '../schemas/chat.js';
import { answerChoices, chatCompletionOf, chatMeta } from './chatChoices.js';

type Run = TextRun<ChatPlanInput>;

/** Web search on: citations of the answer's [n] markers (external) or the upstream's own (native). */
function shownSearch(run: Run, text: string, native?: WebSearchShown['citations']): WebSearchShown | undefined {
  const search = run.search;
  if (search?.hits)
    return { citations: citationsIn(text, search.hits), sourceUrls: search.hits.map((h) => h.url), fee: search.fee };
  return run.input.request.webSearch ? { citations: native ?? [], sourceUrls: [] } : undefined;
}

const errorFrame = (err: unknown) => renderError(asRequestError(err), 'openai');

export const chatCodec: TextCodec<ChatPlanInput> = {
  surface: 'chat',
  envelope: 'openai',
  schema: chatRequestSchema,
  redaction: true,
  moderation: true,
  webSearch: true,
  x402: true,
  advisor: true,
  questions: {
    ...chatQuestions,
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
  },
  translate: (body, model, name) => chatToInternal(body, model, name),
  answerOther: (run) => (run.body.n > 1 ? answerChoices(run) : undefined),
  // routes to an OpenAI-compatible upstream get the caller's own body (pass-through); others the translation
  prepareExtra: (run) => ({ native: chatPassThroughBody(run.body) }),
  whole: wholeChat,
  stream(run, call, sse, route) {
    const chunker = new ChatChunker(chatMeta(run, call, route.provider.id, Math.floor(Date.now() / 1000)));
    return {
      start: () => sse.data(chunker.first()),
      event(e) {
        const frame = chunker.event(e);
        return frame ? sse.data(frame) : undefined;
      },
      empty: (err) => sse.data(errorFrame(err)),
      async end({ finish, usage, bill, failure }) {
        if (failure) await sse.data(errorFrame(failure));
        const shown = shownSearch(run, chunker.content);
        for (const frame of chunker.final(finish, usage, bill, run.input.includeUsage, shown)) await sse.data(frame);
        await sse.data('[DONE]');
      },
    };
  },
  relay(run, _call, sse, route) {
    const relay = new ChatRelay({ model: run.model.id, provider: route.provider.id }, run.input.includeUsage);
    return {
      event(e) {
        const data = e.type === 'native' ? relay.chunk(e) : null;
        return data === null ? undefined : sse.data(data);
      },
      empty: (err) => sse.data(errorFrame(err)),
      // a stream that broke still says what it cost: the error frame, then the bill, as translated
      async end({ usage, bill, failure }) {
        if (failure) await sse.data(errorFrame(failure));
        for (const data of relay.final(usage, bill)) await sse.data(data);
        await sse.data('[DONE]');
      },
    };
  },
};

async function wholeChat(run: Run, call: InferenceCall, done: Completed): Promise<unknown> {
  const { result, route } = done;
  let answer = chatCompletionOf(run, call, done, Math.floor(Date.now() / 1000)) as Record<string, unknown>;
  if (!result.native) {
    const shown = shownSearch(run, result.content, result.citations);
    if (shown) answer = withSearchCitations(answer as ReturnType<typeof toChatCompletion>, shown, 'message');
  }
  // a TEE model's answer says whether the gateway verified its signature against a fresh attestation;
  // its `id` is the upstream's, the one GET /api/v1/tee/signature/{requestId} takes
  const chatId = (result.native?.id as string | undefined) ?? result.upstreamId;
  if (attests(route) && chatId) {
    const { verification } = await verifyAnswer(route, chatId, run.ex.signal(), { digests: result.bodyDigests });
    answer.id = chatId;
    answer.tee_verification = verification;
    run.ex.setHeader('X-TEE-Verified', String(verification.verified));
  }
  return answer;
}
