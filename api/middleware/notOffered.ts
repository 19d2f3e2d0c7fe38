// Request headers that ask for features this gateway does not offer yet: PII redaction (`redaction`,
// recommended, and its aliases `redacted`, `piiredaction`, `piiredacted`) and the paid input-safety
// preflight (`moderation`). Ignoring them would fail open: a caller who asked for redaction would
// have their request sent unredacted. So a request carrying one is refused with a 400 before
// anything is reserved or sent (as the `:redaction` model suffixes are, activities/routing/suffixes.ts),
// unless its value turns the feature off: the spec lets a falsy value opt out without listing the
// values, so these are the usual spellings.
import type { Middleware } from 'koa';
import { RequestError } from '../../activities/core/errors.js';

const OFF = new Set(['false', '0', 'no', 'off', 'never', 'disabled']);

const FEATURE_HEADERS: Array<[header: string, feature: string]> = [
  ['redaction', 'PII redaction'],
  ['redacted', 'PII redaction'],
  ['piiredaction', 'PII redaction'],
  ['piiredacted', 'PII redaction'],
  ['moderation', 'an input moderation preflight'],
];

export const refuseUnofferedFeatures: Middleware = async (ctx, next) => {
  for (const [header, feature] of FEATURE_HEADERS) {
    const value = ctx.headers[header]; // Node lower-cases header names
    if (value === undefined) continue;
    if (OFF.has(String(value).trim().toLowerCase())) continue;
    throw new RequestError(
      400,
      'invalid_parameter_value',
      `The '${header}' header asks for ${feature}, which this gateway does not offer yet. The request was refused rather than sent without it; remove the header (or set it to false) to send the request as it is.`,
      { param: header },
    );
  }
  await next();
};
