// The fixed shape of a provider (one folder per upstream protocol under activities/providers/,
// one entry per protocol in protocols.ts). A provider declares what it can do through typed
// capabilities, each one contract in contract/ with its failure rules written down: chat, speech,
// video, embeddings, images, transcription, web search, scoring, moderation, attestation, token
// counting and availability. Routing, billing, the catalog and the routes never special-case a
// vendor: they ask the registry for a capability, and see only these interfaces and RequestError
// (made by `upstreamError` for an upstream's failures, core/errors.ts).
import type { AttestationAdapter } from './contract/attestation.js';
import type { AvailabilityAdapter } from './contract/availability.js';
import type { ChatAdapter } from './contract/chat.js';
import type { EmbeddingsAdapter } from './contract/embeddings.js';
import type { ImagesAdapter } from './contract/images.js';
import type { ModerationAdapter } from './contract/moderation.js';
import type { ScoringAdapter } from './contract/scoring.js';
import type { SearchAdapter } from './contract/search.js';
import type { SpeechAdapter } from './contract/speech.js';
import type { TokenCountAdapter } from './contract/tokenCount.js';
import type { TranscriptionAdapter } from './contract/transcription.js';
import type { VideoAdapter } from './contract/video.js';

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
  /** a confidential-inference upstream: its models are the TEE models */
  readonly attestation?: AttestationAdapter;
  readonly moderation?: ModerationAdapter;
  /** exact input-token counts; without it the gateway's estimate answers */
  readonly tokenCount?: TokenCountAdapter;
  /** when it can serve; without it, once its key (keyless: its base URL) is set */
  readonly availability?: AvailabilityAdapter;
}

export type Capability = Exclude<keyof Provider, 'protocol'>;

// Every contract from here, so an adapter imports its vocabulary from one place.
export type { ProviderTarget } from './contract/target.js';
export type { ChatAdapter, NativePassThrough } from './contract/chat.js';
export type { SpeechAdapter, SpeechAudio, SpeechFormat, SpeechRequest, VoiceSettings } from './contract/speech.js';
export { FORMAT_CONTENT_TYPES } from './contract/speech.js';
export type {
  VideoAdapter,
  VideoInput,
  VideoJobFailure,
  VideoResult,
  VideoState,
  VideoStatusReply,
} from './contract/video.js';
export type { EmbeddingResult, EmbeddingsAdapter } from './contract/embeddings.js';
export type { ModerationAdapter, ModerationVerdict } from './contract/moderation.js';
export type { ImageReference, ImageRequest, ImageResult, ImagesAdapter, OutputImage } from './contract/images.js';
export type { Transcript, TranscriptionAdapter, TranscriptSegment } from './contract/transcription.js';
export type {
  SearchAdapter,
  SearchAnswer,
  SearchDepth,
  SearchHit,
  SearchOutputType,
  SearchRequest,
} from './contract/search.js';
export type { ScoringAdapter, ScoringResult, ScoringRow } from './contract/scoring.js';
export type { AttestationAdapter } from './contract/attestation.js';
export type { TokenCountAdapter } from './contract/tokenCount.js';
export type { AvailabilityAdapter, RouteSetup } from './contract/availability.js';
