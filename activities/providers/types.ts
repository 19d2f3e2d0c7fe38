// The fixed shape of a provider (one folder per upstream protocol under activities/providers/,
// one entry per protocol in registry.ts). A provider declares what it can do through typed
// capabilities (chat, speech, video, embeddings, images, web search, moderation; later attestation).
// Routing, billing and streaming never special-case a vendor: they only see these interfaces and
// RequestError (made by `upstreamError` for an upstream's failures, core/errors.ts).
import type { RequestError } from '../core/errors.js';
import type { WireDigests } from './http.js';
import type { InferenceRequest, InferenceResult, NativeFormat, NativeRequest, StreamEvent } from '../core/types.js';

/** Everything an adapter needs to reach one route of one provider. */
export interface ProviderTarget {
  providerId: string;
  /** base URL, already resolved: `<PROVIDER>_BASE_URL`, else the catalog's */
  baseUrl: string;
  apiKey?: string;
  /** vendor quirks and protocol options from the catalog (provider options merged with route options) */
  options: Record<string, unknown>;
  /** extra headers to pass to the upstream (e.g. `anthropic-beta`) */
  headers?: Record<string, string>;
  /** where the OpenAI adapter records the sha256 of a chat call's exact bodies (the TEE provider asks) */
  wire?: WireDigests;
}

/** One upstream protocol and what it can do. */
export interface Provider {
  /** the `protocol` value in the catalog this provider serves */
  readonly protocol: string;
  readonly chat?: ChatAdapter;
  readonly speech?: SpeechAdapter;
  readonly video?: VideoAdapter;
  readonly embeddings?: EmbeddingsAdapter;
  readonly images?: ImagesAdapter;
  readonly transcription?: TranscriptionAdapter;
  readonly search?: SearchAdapter;
  readonly scoring?: ScoringAdapter;
  readonly attestation?: AttestationAdapter;
  readonly moderation?: ModerationAdapter;
}

export type Capability =
  | 'chat'
  | 'speech'
  | 'video'
  | 'embeddings'
  | 'images'
  | 'transcription'
  | 'search'
  | 'scoring'
  | 'attestation'
  | 'moderation';

/** Text generation: the one internal request in, a result or a stream of events out. */
export interface ChatAdapter {
  complete(req: InferenceRequest, target: ProviderTarget, signal: AbortSignal): Promise<InferenceResult>;
  /**
   * Streams events. The upstream call is made on the first `next()`, and any failure to get a
   * successful response (connection error, non-2xx status, a stream that ends before its first
   * event) is thrown from THAT call, so the router can still fall back to another provider.
   * Later failures are thrown from later `next()` calls. Aborting `signal` ends the upstream call.
   */
  stream(req: InferenceRequest, target: ProviderTarget, signal: AbortSignal): AsyncIterable<StreamEvent>;
  /** the caller's own wire format, sent as it is (pass-through), when this upstream speaks it */
  native?: NativePassThrough;
}

/**
 * Pass-through for an upstream that speaks a surface's wire format. Same contract as complete()
 * and stream(), with the caller's body instead of a translation; `req` is the translated request,
 * for what the gateway decides (upstream model, output cap, reasoning from suffixes). The result
 * carries `native` (the upstream's answer as it came); the stream yields each upstream frame as a
 * `native` event followed by the events derived from it (for billing), and yields nothing until
 * the first content arrives, so a failure before it can still fall back.
 */
export interface NativePassThrough {
  readonly format: NativeFormat;
  /** whether this request can go as written (false: the translated path serves it) */
  accepts(req: InferenceRequest, target: ProviderTarget): boolean;
  complete(
    native: NativeRequest,
    req: InferenceRequest,
    target: ProviderTarget,
    signal: AbortSignal,
  ): Promise<InferenceResult>;
  stream(
    native: NativeRequest,
    req: InferenceRequest,
    target: ProviderTarget,
    signal: AbortSignal,
  ): AsyncIterable<StreamEvent>;
}

// --- speech -------------------------------------------------------------------------------

export type SpeechFormat = 'mp3' | 'opus' | 'aac' | 'flac' | 'wav' | 'pcm';

export const FORMAT_CONTENT_TYPES: Record<SpeechFormat, string> = {
  mp3: 'audio/mpeg',
  opus: 'audio/ogg',
  aac: 'audio/aac',
  flac: 'audio/flac',
  wav: 'audio/wav',
  pcm: 'audio/pcm',
};

export interface VoiceSettings {
  stability?: number;
  similarity_boost?: number;
  style?: number;
}

export interface SpeechRequest {
  /** the upstream model name */
  model: string;
  input: string;
  /** the upstream's voice (already mapped from our voice name) */
  voice: string;
  format: SpeechFormat;
  speed?: number;
  instructions?: string;
  /** 'music': `input` is a music prompt, `voice` is unused, `durationSeconds` is the length asked for */
  kind?: 'speech' | 'music';
  durationSeconds?: number;
  /** ElevenLabs-style voice controls (0..1 each), for models that have them */
  voiceSettings?: VoiceSettings;
}

export interface SpeechAudio {
  contentType: string;
  /**
   * The audio bytes. The upstream call has been answered successfully when synthesize()
   * resolves; a failure while reading (a cut stream) is thrown from the iterator.
   */
  audio: AsyncIterable<Buffer>;
}

/** Text to speech (and music): text in, audio bytes out. Failures are RequestErrors, as for chat. */
export interface SpeechAdapter {
  synthesize(req: SpeechRequest, target: ProviderTarget, signal: AbortSignal): Promise<SpeechAudio>;
}

// --- video --------------------------------------------------------------------------------

/** A video job as every video protocol gets it; the adapter maps it to its own field names. */
export interface VideoInput {
  prompt: string | null;
  /** seconds of each output video */
  durationSeconds: number;
  aspectRatio?: string;
  resolution?: string;
  seed?: number;
  /** optional parameters the model's catalog entry lists, by their spec names */
  params: Record<string, unknown>;
  /** media inputs, each an http(s) URL or a data URL */
  media: { image?: string; audio?: string; video?: string };
  /** continue one variant of an earlier job of the same provider (Midjourney-style) */
  extend?: { providerRequestId: string; index: number };
}

/** The spec's normalized video states, as a provider reports them. */
export type VideoState = 'queued' | 'processing' | 'completed' | 'failed' | 'cancelled' | 'unknown';

export interface VideoStatusReply {
  state: VideoState;
  /** the provider's own label (IN_QUEUE, IN_PROGRESS, …), shown by the legacy status route */
  label: string;
  queuePosition: number | null;
  /** the runner's log lines, newest last */
  logs: string[];
  /** a failure the provider reports on its status */
  error: string | null;
  errorType: string | null;
}

/** A refusal or failure of the job itself (not of our call): recorded on the job, never retried. */
export interface VideoJobFailure {
  message: string;
  type: string | null;
  nsfw: boolean;
}

interface OutputVideo {
  url: string;
  contentType?: string;
  /** seconds, when the provider says */
  duration?: number;
}

export type VideoResult =
  | { ok: true; videos: OutputVideo[]; details?: Record<string, unknown> }
  | { ok: false; failure: VideoJobFailure };

/**
 * A queue-style video protocol: submit a job, ask its status, fetch its result, cancel it.
 * Transport trouble and our own credentials' refusal throw RequestErrors (retryable or not); the
 * job's own refusal (content policy, bad input the provider checks) is `jobFailure` data.
 */
export interface VideoAdapter {
  /** returns the provider's request id; a 4xx refusal of the job throws (see `jobFailure`) */
  submit(target: ProviderTarget, model: string, input: VideoInput, signal: AbortSignal): Promise<string>;
  status(target: ProviderTarget, model: string, requestId: string, signal: AbortSignal): Promise<VideoStatusReply>;
  result(target: ProviderTarget, model: string, requestId: string, signal: AbortSignal): Promise<VideoResult>;
  cancel(
    target: ProviderTarget,
    model: string,
    requestId: string,
    signal: AbortSignal,
  ): Promise<'requested' | 'already_completed' | 'not_found'>;
  /** how a refusal of `submit` reads as the job's own failure (NSFW or not) */
  jobFailure(err: RequestError): VideoJobFailure;
}

// --- embeddings ---------------------------------------------------------------------------

interface EmbeddingRequest {
  /** the upstream model name */
  model: string;
  /** texts, or token arrays in the upstream's own tokenizer (only for models that take them) */
  input: string[] | number[][];
  /** fewer dimensions than the model's own (only for models that can reduce them) */
  dimensions?: number;
  /** the caller's end-user id, passed on for the upstream's abuse monitoring */
  user?: string;
}

export interface EmbeddingResult {
  /** one float vector per input, in input order */
  vectors: number[][];
  /** the input tokens the upstream counted; null = it did not say */
  promptTokens: number | null;
}

/**
 * Inputs in, one vector per input out. The whole batch answers or fails together (a partial
 * answer is a failure: nothing is billed for it). Failures are RequestErrors, as for chat.
 */
export interface EmbeddingsAdapter {
  embed(req: EmbeddingRequest, target: ProviderTarget, signal: AbortSignal): Promise<EmbeddingResult>;
}

// --- moderation ---------------------------------------------------------------------------

/** One input's verdict, as OpenAI's moderations API words it (category names are the upstream's). */
export interface ModerationVerdict {
  flagged: boolean;
  categories: Record<string, boolean>;
  category_scores: Record<string, number>;
  /** which input types each category was judged on (omni models); passed through when present */
  category_applied_input_types?: Record<string, string[]>;
}

/**
 * Texts in, one verdict per text out, in order. A partial or malformed answer is the route's
 * failure (retryable: the next route is tried), never a verdict of "not flagged".
 */
export interface ModerationAdapter {
  classify(
    req: { model: string; input: string[] },
    target: ProviderTarget,
    signal: AbortSignal,
  ): Promise<ModerationVerdict[]>;
}

// --- images -------------------------------------------------------------------------------

/** A reference image, already fetched and checked by the gateway (never a caller's URL). */
export interface ImageReference {
  data: Buffer;
  /** image/png, image/jpeg, image/webp or image/gif */
  mediaType: string;
}

/** An image request as every image protocol gets it; the adapter maps it to its own field names. */
export interface ImageRequest {
  /** the upstream model name */
  model: string;
  prompt: string;
  /** images wanted (the route's own limit already checked) */
  n: number;
  /** `WIDTHxHEIGHT`, or the model's own name for a size (fal's `square_hd`) */
  resolution?: string;
  aspectRatio?: string;
  quality?: string;
  outputFormat?: string;
  seed?: number;
  negativePrompt?: string;
  /** images to edit or condition on; a mask (white = edit area) for inpainting */
  references: ImageReference[];
  mask?: ImageReference;
  /** optional model parameters the catalog lets through (strength, guidance_scale, …), by their spec names */
  params: Record<string, unknown>;
  /** the caller's end-user id, passed on for the upstream's abuse monitoring */
  user?: string;
}

/** One output image: its bytes inline, or a URL on the provider's storage that the gateway downloads. */
export type OutputImage = { b64: string; mediaType?: string } | { url: string; mediaType?: string };

export interface ImageResult {
  /** what came back (fewer than asked is billed as fewer) */
  images: OutputImage[];
  /** a seed the provider reports, when it does */
  seed?: number;
}

/**
 * Prompt (and references) in, images out, in one call (a queue protocol polls inside it). A
 * refusal of the content is a RequestError with code `content_policy_violation` (400, not
 * retried); other failures are RequestErrors, as for chat. Nothing is billed for a failure.
 */
export interface ImagesAdapter {
  generate(req: ImageRequest, target: ProviderTarget, signal: AbortSignal): Promise<ImageResult>;
}

// --- transcription (speech to text) -------------------------------------------------------

interface TranscriptionRequest {
  /** the upstream model name */
  model: string;
  /** `transcribe` keeps the spoken language; `translate` answers in English */
  task: 'transcribe' | 'translate';
  audio: { data: Buffer; filename: string; mediaType: string };
  /** ISO-639-1 language of the audio, when the caller knows it */
  language?: string;
  /** text to guide the style or continue a previous segment */
  prompt?: string;
  temperature?: number;
  /** timed segments wanted (subtitles, verbose answers) */
  segments: boolean;
}

/** A timed piece of the text; the upstream's own fields beside these (whisper: seek, tokens, avg_logprob, ...) are kept. */
export interface TranscriptSegment {
  start: number;
  end: number;
  text: string;
  [field: string]: unknown;
}

export interface Transcript {
  text: string;
  /** the audio's length as the upstream measured it, when it says */
  durationSeconds?: number;
  language?: string;
  segments?: TranscriptSegment[];
}

/** Audio in, text out, in one call. Failures are RequestErrors, as for chat; nothing is billed for them. */
export interface TranscriptionAdapter {
  transcribe(req: TranscriptionRequest, target: ProviderTarget, signal: AbortSignal): Promise<Transcript>;
}

// --- web search ---------------------------------------------------------------------------

export type SearchDepth = 'standard' | 'deep';
export type SearchOutputType = 'searchResults' | 'sourcedAnswer' | 'structured';

/** A web search as every search protocol gets it; the adapter maps it to its own field names. */
export interface SearchRequest {
  query: string;
  depth: SearchDepth;
  outputType: SearchOutputType;
  /** a JSON schema (as text, root of type object) for `structured` */
  structuredOutputSchema?: string;
  includeImages?: boolean;
  /** YYYY-MM-DD, inclusive */
  fromDate?: string;
  toDate?: string;
  /** bare host names (`example.com` also admits its subdomains) */
  includeDomains?: string[];
  excludeDomains?: string[];
  /** results wanted (an upstream may give fewer) */
  maxResults: number;
}

/** One result, in the spec's `searchResults` shape. */
export interface SearchHit {
  type: 'text' | 'image';
  title: string;
  url: string;
  /** the text the provider returned for it (a snippet, or the page's text for a fetched page) */
  content: string;
  imageUrl?: string;
  /** YYYY-MM-DD or an ISO timestamp, when the provider says */
  publishedDate?: string;
}

export interface SearchAnswer {
  /** what was found, best first */
  results: SearchHit[];
  /** `sourcedAnswer`: the provider's answer (its sources are `results`) */
  answer?: string;
  /** `structured`: the object the provider filled in */
  structured?: unknown;
}

/**
 * Query in, results out, in one call. A provider that cannot give the output type asked for (an
 * answer, a structured object) refuses with a RequestError (400, not retried) before calling its
 * upstream; other failures are RequestErrors, as for chat. Nothing is billed for a failure.
 */
export interface SearchAdapter {
  /** the output types this protocol can give */
  readonly outputTypes: readonly SearchOutputType[];
  search(req: SearchRequest, target: ProviderTarget, signal: AbortSignal): Promise<SearchAnswer>;
}

// --- scoring (decision models, family A) ---------------------------------------------------

/** One scoring row: its whole prompt (ending as the adapter's `slot` says) and its option letters. */
export interface ScoringRow {
  prompt: string;
  /** the valid answers, in option order: 'A', 'B', … */
  letters: string[];
}

export interface ScoringResult {
  /** per row, the next-token log probability of each letter, in option order */
  scores: number[][];
  /** the prompt tokens evaluated (every row's whole prompt, as an upstream would bill them) */
  inputTokens: number;
  /** tokens generated: 0 from a model read in-process, 1 a row from an upstream that must sample one */
  outputTokens: number;
}

/**
 * Next-token scores of option letters, nothing generated (wire-details "Decisions"). `slot`: how
 * the rows' prompts must end for this protocol: 'completion' at the letter itself (`Answer: (`),
 * 'chat' with an instruction to answer with the letter (the reply's first token is read).
 * The whole request answers or fails together; failures are RequestErrors, as for chat.
 */
export interface ScoringAdapter {
  readonly slot: 'completion' | 'chat';
  score(
    req: { model: string; rows: ScoringRow[] },
    target: ProviderTarget,
    signal: AbortSignal,
  ): Promise<ScoringResult>;
}

// --- attestation (TEE models) ---------------------------------------------------------------

/**
 * A confidential-inference upstream's proofs (wire-details "TEE verification"): the attestation
 * report of the enclave serving `model` (echoing `nonce`, naming the `signing_address` its key
 * signs with) and the signature record of one of its answers (`{text, signature,
 * signing_address}`). Both are the upstream's JSON as it came: the gateway passes them through and
 * checks them itself (activities/tee/verify.ts). Failures are RequestErrors, as for chat.
 */
export interface AttestationAdapter {
  report(
    target: ProviderTarget,
    model: string,
    nonce: string,
    signingAlgo: string,
    signal: AbortSignal,
  ): Promise<Record<string, unknown>>;
  signature(
    target: ProviderTarget,
    model: string,
    chatId: string,
    signingAlgo: string,
    signal: AbortSignal,
  ): Promise<Record<string, unknown>>;
}
