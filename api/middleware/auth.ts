// Authentication: an API key (`Authorization: Bearer <key>` or `x-api-key`; header names are
// case-insensitive) or, without one, the session cookie (api/session.ts). Both resolve to the same
// Caller (activities/accounts/keys.ts), left on ctx.state.caller for the route; a key's daily caps
// are enforced here. A key wins over a cookie sent with it. Failed key authentications are limited
// per client address (authFailures.ts), checked before a key is looked up; a session token is 256
// random bits, so a bad cookie is simply refused. A state-changing request authenticated by the
// cookie must pass the CSRF origin check (api/session.ts).
import type Koa from 'koa';
import type { Context, Middleware } from 'koa';
import { knownKey, resolveKey } from '../../activities/accounts/keys.js';
import type { Caller } from '../../activities/core/caller.js';
import { admitRequest, hasDailyCap } from '../../activities/accounts/limits.js';
import type { AppContext, AppState } from '../state.js';
import { config } from '../../activities/config.js';
import { RequestError } from '../../activities/core/errors.js';
import { FailedAuthentications } from '../authFailures.js';
import { resolveSession } from '../../activities/accounts/sessions.js';
import { checkSessionOrigin, sessionToken } from '../session.js';

const REASONS: Record<string, string> = {
  revoked: 'This API key has been revoked. Create a new key.',
  inactive: 'This API key (or its account) is inactive.',
  expired: 'This API key has expired. Create a new key.',
};

function presentedKey(ctx: Context): string | undefined {
  const auth = ctx.get('authorization');
  const bearer = /^\s*bearer\s+(\S+)\s*$/i.exec(auth);
  if (bearer) return bearer[1];
  const header = ctx.get('x-api-key').trim();
  return header || undefined;
}

/** Did the request bring any credential (a key, or the session cookie)? */
export function hasCredentials(ctx: AppContext): boolean {
  return presentedKey(ctx) !== undefined || sessionToken(ctx) !== undefined;
}

// Each app its own count (tests run several apps in one process; production runs one).
const failuresByApp = new WeakMap<Koa, FailedAuthentications>();

function failedAuthentications(app: Koa): FailedAuthentications {
  let failures = failuresByApp.get(app);
  if (!failures) {
    failures = new FailedAuthentications();
    failuresByApp.set(app, failures);
  }
  return failures;
}

const SESSION_REASONS: Record<string, string> = {
  invalid: 'Your session has ended (signed out, revoked or expired). Sign in again.',
  inactive: 'This account is inactive.',
};

/** Authenticate by the session cookie, if one was sent: true when ctx.state.caller is now set. */
async function bySession(ctx: AppContext): Promise<boolean> {
  const token = sessionToken(ctx);
  if (!token) return false;
  const resolved = await resolveSession(token);
  if (!resolved.caller) {
    throw new RequestError(401, 'invalid_session', SESSION_REASONS[resolved.reason]!, {
      details: { reason: 'invalid_session' },
    });
  }
  checkSessionOrigin(ctx);
  ctx.state.caller = resolved.caller;
  ctx.state.session = resolved.session;
  return true;
}

/** Routes for people, not programs (managing API keys): the session cookie only; an API key is not enough. */
export const requireSession: Middleware<AppState> = async (ctx, next) => {
  if (!(await bySession(ctx))) {
    throw new RequestError(
      401,
      'not_signed_in',
      'Sign in first: this route takes the session cookie, not an API key.',
      {
        details: { reason: 'not_signed_in' },
      },
    );
  }
  await next();
};

export const authenticate: Middleware<AppState> = async (ctx, next) => {
  const raw = presentedKey(ctx);
  if (!raw) {
    if (await bySession(ctx)) return next();
    throw new RequestError(
      401,
      'missing_api_key',
      "Missing API key. Send it as 'Authorization: Bearer <key>' or in the 'x-api-key' header.",
    );
  }
  const failures = failedAuthentications(ctx.app);
  const limit = config.authFailuresPerMinute;
  const blockedFor = failures.retryAfterSeconds(ctx.ip, limit);
  // A blocked address may still use a key this process knows to be good; anything else would
  // cost a database lookup for what is most likely another guess.
  const resolved = knownKey(raw) ?? (await resolveKey(raw, blockedFor === 0));
  if (!resolved.caller) {
    if (blockedFor > 0) {
      throw new RequestError(
        429,
        'rate_limit_exceeded',
        `Too many failed authentications from this address (at most ${limit} per minute). Retry in ${blockedFor} s.`,
        { type: 'rate_limit_error', retryAfterSeconds: blockedFor },
      );
    }
    failures.record(ctx.ip, limit);
    const why =
      REASONS[resolved.reason] ??
      `Invalid API key. Check the key you are sending; keys look like sk-${config.serviceName}-<uuid>.`;
    throw new RequestError(401, 'invalid_api_key', why);
  }
  // Most keys have no daily cap: then nothing to count, and no await on the way to the route.
  if (hasDailyCap(resolved.caller)) await admit(resolved.caller);
  ctx.state.caller = resolved.caller;
  await next();
};

/** Count the request against its key's daily caps, or refuse it with 429 (counting nothing). */
async function admit(caller: Caller): Promise<void> {
  const verdict = await admitRequest(caller);
  if (!verdict.ok) {
    const what = verdict.code === 'daily_rpd_limit_exceeded' ? 'daily request limit' : 'daily spending limit';
    throw new RequestError(429, verdict.code, `This API key has reached its ${what}. It resets at 00:00 UTC.`, {
      type: 'rate_limit_error',
      headers: { 'Retry-After': String(verdict.retryAfterSeconds) },
    });
  }
}
