// Request headers that ask for features this gateway does not offer (yet) on the route called: the
// paid input-safety preflight (`moderation`) outside chat completions (activities/moderation/), and PII redaction (`redaction`, recommended,
// and its aliases `redacted`, `piiredaction`, `piiredacted`) outside the routes that offer it (chat,
// completions and responses: activities/redaction/). Ignoring them would fail open: a caller who
// asked for redaction would have their request sent unredacted. So a request carrying one is refused
// with a 400 before anything is reserved or sent (as the `:redaction` model suffixes are there),
// unless its value turns the feature off: the spec lets a falsy value opt out without listing the
// values, so these are the usual spellings.
import type { Middleware } from 'koa';
import { RequestError } from '../../activities/core/errors.js';
import { REDACTION_HEADERS } from '../../activities/redaction/policy.js';

const OFF = new Set(['false', '0', 'no', 'off', 'never', 'disabled']);

const MODERATION: Array<[header: string, feature: string]> = [['moderation', 'an input moderation preflight']];
const REDACTION: Array<[header: string, feature: string]> = REDACTION_HEADERS.map((h) => [h, 'PII redaction']);

function refuse(features: Array<[header: string, feature: string]>): Middleware {
  return (ctx, next) => {
    for (const [header, feature] of features) {
      const value = ctx.headers[header]; // Node lower-cases header names
      if (value === undefined) continue;
      if (OFF.has(String(value).trim().toLowerCase())) continue;
      throw new RequestError(
        400,
        'invalid_parameter_value',
        `The '${header}' header asks for ${feature}, which this gateway does not offer yet on this route. The request was refused rather than sent without it; remove the header (or set it to false) to send the request as it is.`,
        { param: header },
      );
    }
    return next();
  };
}

/** Every route that offers neither feature. */
export const refuseUnofferedFeatures = refuse([...REDACTION, ...MODERATION]);

/** The text routes: each refuses the features it does not offer (the headers of those it does are its own to read). */
export function refuseUnofferedBeside(offers: { redaction?: boolean; moderation?: boolean }): Middleware {
  return refuse([...(offers.redaction ? [] : REDACTION), ...(offers.moderation ? [] : MODERATION)]);
}
