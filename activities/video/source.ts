// Extending a video of the caller's own (spec "Video": an extend model plus a source video, at
// most 120 seconds long). A model whose catalog options say `extends_source: true` continues the
// source it is given; before anything is reserved, the source is read (its data URL, or its URL
// through the SSRF-guarded fetch) and its length taken from the file itself. A source that is too
// long, or whose length cannot be read, is refused: the limit is never skipped.
import type { ModelInfo } from '../catalog/catalog.js';
import { RequestError } from '../core/errors.js';
import { MediaFetchError, safeFetch } from '../core/safeFetch.js';
import { videoSeconds } from '../media/videoDuration.js';

/** The spec's longest source video an extension takes, in seconds (a model may set less: `max_source_seconds`). */
const MAX_SOURCE_SECONDS = 120;
/** The largest source fetched by URL to read its length; a larger one is refused. */
const MAX_SOURCE_BYTES = 64 * 1024 * 1024;

/** Does this model extend a source video (and so need its length checked)? */
export const extendsSource = (model: ModelInfo) => model.options.extends_source === true;

/**
 * Refuse (400, naming the field) a source video longer than the model's limit, or one whose length
 * cannot be read. `source` is the plan's video input: a data URL or an http(s) URL.
 */
export async function checkSourceLength(
  model: ModelInfo,
  source: string,
  field: string,
  signal?: AbortSignal,
): Promise<number> {
  const limit = Math.min(MAX_SOURCE_SECONDS, Number(model.options.max_source_seconds) || MAX_SOURCE_SECONDS);
  const bad = (message: string) => new RequestError(400, 'invalid_parameter_value', message, { param: field });
  let data: Buffer;
  if (source.startsWith('data:')) {
    data = Buffer.from(source.slice(source.indexOf(',') + 1), 'base64');
  } else {
    try {
      data = (await safeFetch(source, { signal, maxBytes: MAX_SOURCE_BYTES, errorCode: 'invalid_parameter_value' }))
        .data;
    } catch (err) {
      if (!(err instanceof MediaFetchError)) throw err;
      throw bad(
        err.reason === 'too_large'
          ? `The source video at '${field}' is over ${MAX_SOURCE_BYTES / 1048576} MB; its length cannot be checked. Send a smaller file.`
          : `The source video at '${field}' could not be fetched (${err.message}).`,
      );
    }
  }
  const seconds = videoSeconds(data);
  if (seconds === undefined)
    throw bad(
      `The length of the source video at '${field}' cannot be read (an MP4 or QuickTime file is needed to check the ${limit} s limit).`,
    );
  if (seconds > limit)
    throw bad(
      `The source video at '${field}' is ${Math.round(seconds * 10) / 10} s long; '${model.id}' extends videos of at most ${limit} s. Trim it first.`,
    );
  return seconds;
}
