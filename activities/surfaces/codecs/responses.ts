// The Responses API as a text surface: the input becomes chat-form messages (continuing the
// stored conversation `previous_response_id` names), a whole answer as a `response` (stored unless
// `store: false`), a stream of typed events with sequence numbers ending in response.completed /
// .incomplete, or response.failed when it breaks after it began. Background mode reserves and
// hands the call to the `backgroundResponse` workflow, answering at once.
import { RequestError } from '../../core/errors.js';
import type { TextBody } from '../../core/types.js';
import type { ModelInfo } from '../../catalog/catalog.js';
import type { Completed } from '../../inference/answer.js';
import type { TextCodec } from '../../inference/codec.js';
import type { Exchange } from '../../inference/exchange.js';
import type { InferenceCall } from '../../inference/execute.js';
import type { TextRun } from '../../inference/codec.js';
import { startBackgroundResponse } from '../../responses/backgroundStart.js';
import type { ModelName } from '../../routing/suffixes.js';
import { citationsIn, responsesAnnotations, type UrlCitation } from '../../search/context.js';
import { withBill } from '../chatResponse.js';
import { responsesQuestions } from '../questions.js';
import { assistantTurn, type ChatMessage, inputItemsOf, responsesToInternal } from '../responses.js';
import {
  type Frame,
  type ResponseMeta,
  type ResponseObject,
  ResponseStreamer,
  toResponse,
} from '../responsesResponse.js';
import { newId } from '../../core/ids.js';
import { loadResponse, saveResponse } from '../responsesStore.js';
import { responsesRequestSchema } from '../schemas/responses.js';

type Input = ReturnType<typeof responsesToInternal>;
type Run = TextRun<Input>;

/** A background response waits at most this long (queue + run) before its reservation lapses. */
const BACKGROUND_HOLD_SECONDS = 24 * 3600;

/**
 * A Responses body in internal form: background mode's own rules first, then the stored
 * conversation `previous_response_id` continues (the caller's own, unexpired).
 */
async function translateResponses(body: TextBody, model: ModelInfo, name: ModelName, ex: Exchange): Promise<Input> {
  if (body.background === true && body.stream === true) {
    throw new RequestError(
      400,
      'invalid_parameter_value',
      'Background responses are not streamed here: send background without stream, then GET /v1/responses/{id}.',
      { param: 'stream' },
    );
  }
  if (body.background === true && body.store === false) {
    throw new RequestError(
      400,
      'invalid_parameter_value',
      'A background response must be stored (store: false cannot be retrieved later).',
      { param: 'store' },
    );
  }
  let history: ChatMessage[] = [];
  if (body.previous_response_id) {
    const prev = await loadResponse(ex.caller.accountId, body.previous_response_id);
    if (!prev)
      throw new RequestError(
        404,
        'previous_response_not_found',
        `Previous response '${body.previous_response_id}' was not found (unknown, expired, deleted, not stored, or another account's).`,
        { param: 'previous_response_id' },
      );
    history = prev.request.conversation;
  }
  return responsesToInternal(body, model, name, history);
}

function meta(run: Run, call: InferenceCall): ResponseMeta {
  const hits = run.search?.hits;
  return {
    id: newId('resp'),
    createdAt: Math.floor(Date.now() / 1000),
    model: run.model.id,
    provider: '',
    showReasoning: !call.ctx.request.reasoning?.exclude,
    body: run.body,
    annotate: hits ? (text) => responsesAnnotations(citationsIn(text, hits)) : undefined,
  };
}

/** Stores the response as it ended (unless `store: false`), with the turn it added. */
async function store(run: Run, response: ResponseObject, turn: ChatMessage | null): Promise<void> {
  const { body, input } = run;
  if (body.store === false) return;
  await saveResponse(run.ex.caller.accountId, response, {
    conversation: turn ? [...input.conversation, turn] : input.conversation,
    inputItems: inputItemsOf(body.input),
  });
}

function setAnnotations(item: { content?: unknown }, cites: UrlCitation[]): void {
  for (const part of (item.content ?? []) as Array<{ type: string; annotations?: unknown[] }>)
    if (part.type === 'output_text') part.annotations = responsesAnnotations(cites);
}

async function answerBackground(run: Run): Promise<void> {
  const call = await run.prepare({ holdTtlSeconds: BACKGROUND_HOLD_SECONDS });
  run.ex.send(await startBackgroundResponse(call, meta(run, call), run.input.conversation, run.ex.caller));
}

async function whole(run: Run, call: InferenceCall, { result, route, usage, bill }: Completed): Promise<unknown> {
  const response = toResponse(result, usage, { ...meta(run, call), provider: route.provider.id });
  // web search: the answer's [n] markers (or a native search's own citations) as url_citation annotations
  const cites = run.search?.hits ? citationsIn(result.content, run.search.hits) : result.citations;
  if (cites) for (const item of response.output) if (item.type === 'message') setAnnotations(item, cites);
  await store(run, response, assistantTurn(result));
  return withBill({ ...response }, bill);
}

const ZERO_USAGE = { promptTokens: 0, cachedTokens: 0, cacheWriteTokens: 0, completionTokens: 0, reasoningTokens: 0 };
const NO_BILL = {
  amount: 0,
  currency: 'USD' as const,
  cost: 0,
  paymentSource: 'USD' as const,
  remainingBalance: 0,
  inputTokens: 0,
  outputTokens: 0,
};

export const responsesCodec: TextCodec<Input> = {
  surface: 'responses',
  envelope: 'openai',
  schema: responsesRequestSchema,
  redaction: true,
  webSearch: true,
  questions: responsesQuestions,
  translate: translateResponses,
  answerOther(run) {
    if (run.body.background !== true) return undefined;
    if (run.redaction)
      // the answer is made by a worker, and restoring it there would put the personal data into the
      // workflow's history: refused rather than answered with placeholders
      throw new RequestError(
        400,
        'invalid_parameter_value',
        'PII redaction is not offered for background responses. Send the request without background, or turn redaction off (header redaction: false) to send it as it is.',
        { param: 'background' },
      );
    return answerBackground(run);
  },
  whole,
  stream(run, call, sse, route) {
    const streamer = new ResponseStreamer({ ...meta(run, call), provider: route.provider.id });
    const send = async (frames: Frame[]) => {
      for (const [event, data] of frames) await sse.data(data, event);
    };
    return {
      start: () => send(streamer.start()),
      event: (e) => send(streamer.event(e)),
      async empty(err) {
        await send(streamer.fail(err.code, err.message, ZERO_USAGE, NO_BILL).frames);
        await sse.data('[DONE]');
      },
      async end({ finish, usage, bill, failure }) {
        if (failure) {
          const { frames, response } = streamer.fail(failure.code, failure.message, usage, bill);
          await store(run, response, null);
          await send(frames);
        } else {
          const { frames, response } = streamer.end(finish, usage, bill);
          await store(run, response, assistantTurn({ content: streamer.outputText, toolCalls: streamer.toolCalls }));
          await send(frames);
        }
        await sse.data('[DONE]');
      },
    };
  },
};
