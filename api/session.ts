// The session cookie and the CSRF rule that goes with it.
//
// Cookie `switchyard_session`: HttpOnly (scripts cannot read it), SameSite=Lax (browsers leave it
// off cross-site subrequests and POSTs), Path=/, Max-Age = the session's lifetime, and Secure when
// the request came over HTTPS: directly, or through a proxy that says so in X-Forwarded-Proto when
// SWITCHYARD_TRUST_PROXY=1 (or when SWITCHYARD_PUBLIC_URL is https). Only the row behind it
// decides whether it is valid (activities/accounts/sessions.ts).
//
// CSRF: a cookie is sent by the browser whoever made the page, so a request that changes state
// (any method but GET, HEAD, OPTIONS) and is authenticated by the cookie must show it comes from
// the gateway's own pages: its Origin header (or, without one, its Referer) must be the gateway's
// origin: SWITCHYARD_PUBLIC_URL's, or the one the request was addressed to (scheme://Host).
// Without either header it is refused too (browsers send Origin on every cross-origin POST and on
// same-origin ones). Requests with an API key carry no ambient credential and are not checked.
import type { AppContext } from './state.js';
import { RequestError } from '../activities/core/errors.js';
import { config } from '../activities/config.js';
import { publicOrigin } from './paths.js';

const SESSION_COOKIE = 'switchyard_session';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

function isStateChanging(ctx: AppContext): boolean {
  return !SAFE_METHODS.has(ctx.method);
}

export function sessionToken(ctx: AppContext): string | undefined {
  return ctx.cookies.get(SESSION_COOKIE) || undefined;
}

function configuredOrigin(): string | undefined {
  const url = process.env.SWITCHYARD_PUBLIC_URL;
  if (!url) return undefined;
  try {
    return new URL(url).origin;
  } catch {
    return undefined;
  }
}

function secure(ctx: AppContext): boolean {
  return ctx.secure || configuredOrigin()?.startsWith('https:') === true;
}

// Written by hand rather than with ctx.cookies.set, which refuses a Secure cookie on a request it
// does not itself see as HTTPS (a proxy's TLS with SWITCHYARD_PUBLIC_URL but no trusted proxy).
function writeCookie(ctx: AppContext, value: string, maxAgeSeconds: number): void {
  const attributes = [`${SESSION_COOKIE}=${value}`, 'Path=/', `Max-Age=${maxAgeSeconds}`, 'HttpOnly', 'SameSite=Lax'];
  if (secure(ctx)) attributes.push('Secure');
  ctx.append('Set-Cookie', attributes.join('; '));
}

export function setSessionCookie(ctx: AppContext, token: string): void {
  writeCookie(ctx, token, config.sessionTtlSeconds);
}

export function clearSessionCookie(ctx: AppContext): void {
  writeCookie(ctx, '', 0);
}

/** The origin a browser request says it came from (Origin, else Referer's), or undefined. */
function requestOrigin(ctx: AppContext): string | undefined {
  const origin = ctx.get('origin');
  if (origin) return origin;
  const referer = ctx.get('referer');
  if (!referer) return undefined;
  try {
    return new URL(referer).origin;
  } catch {
    return 'null';
  }
}

function isOwnOrigin(ctx: AppContext, origin: string): boolean {
  return origin === publicOrigin(ctx) || origin === configuredOrigin();
}

/** Refuse a state-changing request that rides on the session cookie from another origin (or none). */
export function checkSessionOrigin(ctx: AppContext): void {
  if (!isStateChanging(ctx)) return;
  const origin = requestOrigin(ctx);
  if (origin && isOwnOrigin(ctx, origin)) return;
  throw new RequestError(
    403,
    'csrf_origin_mismatch',
    origin
      ? `This request carries the session cookie but comes from ${origin}, not from this gateway ` +
          `(${publicOrigin(ctx)}). Scripts and servers should use an API key.`
      : 'This request carries the session cookie but no Origin or Referer header, so it cannot be told apart ' +
          'from a forged one. Send Origin, or use an API key.',
    { details: { reason: 'csrf_origin_mismatch' } },
  );
}

/**
 * For the sign-in routes themselves (no session yet): a browser's Origin, when sent, must be ours,
 * so another site cannot sign a visitor into an account of its choosing. Clients without a
 * browser send no Origin and are let through.
 */
export function checkSignInOrigin(ctx: AppContext): void {
  const origin = requestOrigin(ctx);
  if (origin === undefined || isOwnOrigin(ctx, origin)) return;
  throw new RequestError(
    403,
    'csrf_origin_mismatch',
    `Sign-in requests must come from this gateway's own pages (${publicOrigin(ctx)}), not from ${origin}.`,
    { details: { reason: 'csrf_origin_mismatch' } },
  );
}
