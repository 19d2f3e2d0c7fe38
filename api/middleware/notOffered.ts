// Request headers that ask for features this gateway does not offer (yet) on the route called: the
// paid input-safety preflight (`moderation`) outside chat completions (activities/moderation/), and PII redaction (`redaction`, recommended,
// and its aliases `redacted`, `piiredaction`, `piiredacted`) outside the routes that offer it (the
// text routes: activities/redaction/). Ignoring them would fail open: a caller who
// asked for redaction would have their request sent unredacted. So a request carrying one is refused
// with a 400 before anything is reserved or sent (as the `:redaction` model suffixes are there),
// unless its value turns the feature off: the spec lets a falsy value opt out without listing the
// values, so these are the usual spellings. A key's or account's redaction default of `always` asks
// as the header does, so these run after authentication, and such a request is refused too unless
// it says `redaction: false`.
import type { Middleware } from 'koa';
import { RequestError } from '../../activities/core/errors.js';
import { REDACTION_HEADERS, redactionDecision } from '../../activities/redaction/policy.js';
import type { AppState } from '../state.js';

// the falsy values of the redaction header (activities/redaction/policy.ts), so both read a value alike
const OFF = new Set(['false', '0', 'no', 'off', 'never', 'disabled', 'disable', 'none']);

const MODERATION: Array<[header: string, feature: string]> = [['moderation', 'an input moderation preflight']];
const REDACTION: Array<[header: string, feature: string]> = REDACTION_HEADERS.map((h) => [h, 'PII redaction']);

/** `callerDefault`: also refuse when the caller's redaction default asks for it (after authentication). */
function refuse(features: Array<[header: string, feature: string]>, callerDefault = false): Middleware<AppState> {
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
    if (callerDefault) {
      // the headers said nothing or said off: the caller's default decides
      const caller = ctx.state.caller;
      if (!caller) throw new Error('a route that refuses PII redaction checks it after authentication');
      redactionDecision(
        false,
        { headers: ctx.headers, suffix: undefined, callerDefault: caller.redaction },
        'this route',
      );
    }
    return next();
  };
}

/** Every route that offers neither feature (after authentication). */
export const refuseUnofferedFeatures = refuse([...REDACTION, ...MODERATION], true);

/** Routes that send caller text but do not offer PII redaction (after authentication). */
export const refuseUnofferedRedaction = refuse(REDACTION, true);

/**
 * The text routes: each refuses the headers of the features it does not offer, before authentication
 * (the headers of those it does are its own to read; textRoute decides on redaction defaults itself).
 */
export function refuseUnofferedBeside(offers: { redaction?: boolean; moderation?: boolean }): Middleware<AppState> {
  return refuse([...(offers.redaction ? [] : REDACTION), ...(offers.moderation ? [] : MODERATION)]);
}
