// Image generation and editing: the images capability's contract.
import type { ProviderTarget } from './target.js';

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
