// What the catalog says of an image model, read once per lookup: its sizes, qualities, limits,
// reference constraints (prisma/catalog.yaml, "Image models"), and the price of one image of a
// size and quality on a route (upstream list price plus the route's markup, nano-USD).
import type { ModelInfo, Route } from '../catalog/catalog.js';
import { applyMarkup, parseAmount } from '../core/money.js';

/** The formats a reference may have, by the names the catalog and discovery use. */
export type ImageFormat = 'png' | 'jpeg' | 'webp' | 'gif';

export interface ReferenceConstraints {
  maxItems: number;
  minWidth: number;
  minHeight: number;
  maxBytes: number;
  formats: ImageFormat[];
  /** the model cannot run without one (an image-to-image model) */
  required: boolean;
}

export interface ImageModelOptions {
  resolutions: string[];
  qualities: string[];
  maxImages: number;
  aspectRatios: string[];
  outputFormats: string[];
  params: string[];
  references?: ReferenceConstraints;
  mask: boolean;
}

/** The spec's upload limit: an image sent inline is 4 MB or smaller (after encoding). */
export const MAX_UPLOAD_BYTES = 4 * 1024 * 1024;

const strings = (x: unknown): string[] => (Array.isArray(x) ? x.filter((s) => typeof s === 'string') : []);
const int = (x: unknown, fallback: number) => (Number.isInteger(x) && (x as number) > 0 ? (x as number) : fallback);

export function imageOptions(m: ModelInfo): ImageModelOptions {
  const o = m.options;
  const ref = o.input_references as Record<string, unknown> | undefined;
  return {
    resolutions: strings(o.resolutions),
    qualities: strings(o.qualities),
    maxImages: int(o.max_images, 1),
    aspectRatios: strings(o.aspect_ratios),
    outputFormats: strings(o.output_formats),
    params: strings(o.params),
    mask: o.mask === true,
    references: ref && {
      maxItems: int(ref.max_items, 1),
      minWidth: int(ref.min_width, 1),
      minHeight: int(ref.min_height, 1),
      maxBytes: Math.min(int(ref.max_bytes, MAX_UPLOAD_BYTES), MAX_UPLOAD_BYTES),
      formats: (strings(ref.formats).length ? strings(ref.formats) : ['png', 'jpeg', 'webp']) as ImageFormat[],
      required: ref.required === true,
    },
  };
}

/**
 * What the caller pays for one image of `resolution` and `quality` on `route`: the route's
 * `image_prices` entry for `quality/resolution`, else for `resolution`, else its `per_image`
 * (already marked up by the catalog loader).
 */
export function imagePrice(route: Route, resolution: string | undefined, quality: string | undefined): bigint {
  const table = route.options.image_prices as Record<string, string> | undefined;
  const listed =
    (quality && resolution && table?.[`${quality}/${resolution}`]) || (resolution && table?.[resolution]) || undefined;
  return listed === undefined ? route.price.input : applyMarkup(parseAmount(listed, 'USD'), route.markupBps);
}
