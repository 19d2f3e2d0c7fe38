// What a text surface (chat, completions, messages, responses, talk-to-gpt) tells the one pipeline
// (pipeline.ts) and the one handler (handler.ts): how its body becomes the internal request, which
// add-ons it offers, and how it renders a whole answer, a stream and a stream passed through
// untouched. Each surface is one codec (activities/surfaces/codecs/); api/ mounts them.
import type { Schema } from 'ajv';
import type { Route } from '../catalog/catalog.js';
import type { TextBody } from '../core/types.js';
import type { ModelInfo } from '../catalog/catalog.js';
import type { ModelName } from '../routing/suffixes.js';
import type { DecisionsBody } from '../decisions/decide.js';
import type { Decided } from './decide.js';
import type { Envelope } from '../surfaces/errors.js';
import type { Completed, StreamSurface } from './answer.js';
import type { Exchange, StreamSink } from './exchange.js';
import type { InferenceCall } from './execute.js';
import type { InferenceResult } from '../core/types.js';
import type { PrepareInput } from './prepare.js';
import type { OnlineSearch } from '../search/online.js';

/** What a surface's translation yields: the internal request and what planning needs. */
export type Translated = Pick<PrepareInput, 'request' | 'needs' | 'prefs'>;

/** What a surface may ask of `prepare` besides the request itself. */
export type PrepareExtra = Pick<PrepareInput, 'holdTtlSeconds' | 'passHeaders' | 'native' | 'forcePaygo'> & {
  /** chat's `n`, the advisor's phases: its own request id (`<id>:<part>`), reservation and charge */
  part?: number;
  /** one phase of a request answered by several models (the advisor): its own model and request, never passed through */
  phase?: Pick<PrepareInput, 'model' | 'request' | 'needs' | 'prefs'>;
};

/** What a codec sees of a request on its way through the pipeline (inference/textRun.ts). */
export interface TextRun<T extends Translated = Translated> {
  readonly ex: Exchange;
  readonly body: TextBody;
  readonly model: ModelInfo;
  readonly input: T;
  /** the request was masked (PII redaction) */
  readonly redaction?: PrepareInput['redaction'];
  /** the gateway's own web search, once reserved; its `hits` once searched */
  readonly search?: OnlineSearch;
  /** plan and reserve one call of the answer */
  prepare(extra?: PrepareExtra): Promise<InferenceCall>;
}

/** How one text surface carries a request for a decision model (the `questions` format) and its answer. */
export interface QuestionsFormat {
  /** the questions, when the body asks for the `questions` format (undefined: it does not) */
  find(body: TextBody): unknown;
  /** the decision request it stands for (refuses what the format does not take) */
  decision(body: TextBody, questions: unknown): DecisionsBody;
  /** the decision as this surface's answer */
  render(decided: Decided, body: TextBody, requestId: string): object;
}

export interface TextCodec<T extends Translated = Translated> {
  /** what request records and ledger reasons call it */
  surface: string;
  envelope: Envelope;
  schema: Schema;
  /** PII redaction is offered (chat, completions, responses); elsewhere asking for it is refused */
  redaction?: boolean;
  /** the `moderation` header's paid preflight is offered (chat completions) */
  moderation?: boolean;
  /** web search (`:online`, `web_search`) is offered (chat, responses, talk-to-gpt) */
  webSearch?: boolean;
  /** accountless x402 payment is offered (non-streaming requests) */
  x402?: boolean;
  /** the advisor is offered (chat completions) */
  advisor?: boolean;
  /** the surface's form of a decision request (the questions add-on answers it) */
  questions?: QuestionsFormat;
  /** the body in internal form (may look things up, e.g. a stored conversation) */
  translate(body: TextBody, model: ModelInfo, name: ModelName, ex: Exchange): T | Promise<T>;
  /** refusals of the surface's own, and answers that take another way (chat's `n` choices, a background response); undefined: the handler answers */
  answerOther?(run: TextRun<T>): Promise<void> | undefined;
  /** what `prepare` is told besides the request (the body to pass through, a hold, headers) */
  prepareExtra?(run: TextRun<T>): PrepareExtra;
  /** what counts as an answer on this surface (default: any text, tool call or reasoning) */
  answered?(result: InferenceResult): boolean;
  /** the whole answer's body (the surface's shape, or the upstream's own passed through) */
  whole(run: TextRun<T>, call: InferenceCall, done: Completed): unknown | Promise<unknown>;
  /** the whole answer's media type, when not JSON */
  contentType?: string;
  /** a stream in the surface's frames, made from the internal events */
  stream?(run: TextRun<T>, call: InferenceCall, sse: StreamSink, route: Route): StreamSurface;
  /** a stream whose frames the upstream wrote in this surface's own format, relayed */
  relay?(run: TextRun<T>, call: InferenceCall, sse: StreamSink, route: Route): StreamSurface;
}
