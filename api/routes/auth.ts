// Sign-up, sign-in and sessions for people (issue 14; the spec shows no paths, so these are small
// and conventional). Teams-style envelope {code, message, details, status}, like the teams API that
// these sessions are for; validation failures are 422 INVALID_INPUT, as there.
//   POST /api/auth/signup             {email, password, name}  201 {user}, signed in
//   POST /api/auth/login              {email, password}        200 {user}, signed in
//   POST /api/auth/email-code         {email, name?}           202 {ok, expires_in_seconds}, whoever asks
//   POST /api/auth/email-code/verify  {email, code}            200 {user, created}, signed in
//   POST /api/auth/logout                                      200 {ok}, the session revoked
//   GET  /api/auth/session                                     200 {user, session} or 401
// Guessing is bounded per e-mail address and per client address (activities/accounts/throttle.ts)
// before any secret is checked; an unknown address costs the same argon2id work as a known one.
import Router from '@koa/router';
import { surface } from '../middleware/surface.js';
import { requireSession } from '../middleware/auth.js';
import { validateBody } from '../validate.js';
import {
  emailCodeSchema,
  emailCodeVerifySchema,
  loginSchema,
  logoutSchema,
  signupSchema,
} from '../../activities/surfaces/schemas/auth.js';
import { checkSignInOrigin, clearSessionCookie, sessionToken, setSessionCookie } from '../session.js';
import { bucketOf } from '../authFailures.js';
import type { AppContext, AppState } from '../state.js';
import { RequestError } from '../../activities/core/errors.js';
import { config } from '../../activities/config.js';
import { admitAttempt } from '../../activities/accounts/throttle.js';
import { createSession, resolveSession, revokeSession, type SignInMethod } from '../../activities/accounts/sessions.js';
import {
  createUser,
  EmailTaken,
  findUserByEmail,
  normalizeEmail,
  recordLogin,
} from '../../activities/accounts/users.js';
import type { User } from '../../activities/accounts/users.js';
import { verifySecret } from '../../activities/accounts/passwords.js';
import { issueEmailCode, verifyEmailCode } from '../../activities/accounts/emailCodes.js';
import { signupRefusalFor } from '../../activities/accounts/signupPolicy.js';

export const authRouter = new Router<AppState>();

/** What the API shows of a user: the spec's member names for the ids. */
function userView(u: Pick<User, 'id' | 'uuid' | 'email' | 'displayName' | 'accountId'>) {
  return { sessionId: u.id, sessionUUID: u.uuid, email: u.email, displayName: u.displayName, accountId: u.accountId };
}

/**
 * Count one attempt at `action` against the client address and the e-mail address, or 429.
 * The address first: a flood from one client stops there without using up a victim's allowance.
 * With `perClient`, the e-mail's allowance is kept per (e-mail, client address) pair: wrong
 * passwords sent from elsewhere then cannot lock the owner out, while one client still gets only
 * that many guesses at an account, and the per-address limit still stops spraying across accounts.
 */
async function throttle(ctx: AppContext, action: string, email?: string, perClient = false): Promise<void> {
  const window = config.authAttemptWindowSeconds;
  const client = bucketOf(ctx.ip);
  const checks: Array<[string, string, number, string]> = [
    [`${action}:ip`, client, config.authAttemptsPerIp, 'from this address'],
  ];
  if (email && perClient)
    checks.push([
      `${action}:email+client`,
      `${normalizeEmail(email)} ${client}`,
      config.authAttemptsPerEmail,
      'for this e-mail address from this address',
    ]);
  else if (email)
    checks.push([`${action}:email`, normalizeEmail(email), config.authAttemptsPerEmail, 'for this e-mail address']);
  for (const [scope, subject, limit, per] of checks) {
    const verdict = await admitAttempt(scope, subject, limit, window);
    if (!verdict.ok) {
      throw new RequestError(
        429,
        'rate_limit_exceeded',
        `Too many attempts ${per} (at most ${limit} per ${Math.round(window / 60)} minutes). ` +
          `Retry in ${verdict.retryAfterSeconds} s.`,
        { retryAfterSeconds: verdict.retryAfterSeconds, details: { reason: 'rate_limit_exceeded' } },
      );
    }
  }
}

/** Open a session for `user` and hand the browser its cookie. */
async function signIn(ctx: AppContext, user: User, method: SignInMethod): Promise<void> {
  const session = await createSession(user.id, { method, userAgent: ctx.get('user-agent'), ip: ctx.ip });
  await recordLogin(user.id);
  setSessionCookie(ctx, session.token);
  ctx.set('Cache-Control', 'no-store');
}

const body = <T>(ctx: AppContext) => ctx.request.body as T;

authRouter.post('/api/auth/signup', surface('teams'), validateBody(signupSchema), async (ctx) => {
  checkSignInOrigin(ctx);
  const { email, password, name } = body<{ email: string; password: string; name: string }>(ctx);
  const refusal = await signupRefusalFor(email);
  if (refusal) throw new RequestError(403, 'signup_closed', refusal, { details: { reason: 'signup_closed' } });
  await throttle(ctx, 'signup');
  let user: User;
  try {
    user = await createUser({ email, name: name.trim(), password });
  } catch (err) {
    if (!(err instanceof EmailTaken)) throw err;
    throw new RequestError(
      409,
      'email_taken',
      'An account with this e-mail address already exists. Sign in, or ask for a sign-in code by e-mail.',
      { details: { reason: 'email_taken' } },
    );
  }
  await signIn(ctx, user, 'signup');
  ctx.status = 201;
  ctx.body = { user: userView(user) };
});

authRouter.post('/api/auth/login', surface('teams'), validateBody(loginSchema), async (ctx) => {
  checkSignInOrigin(ctx);
  const { email, password } = body<{ email: string; password: string }>(ctx);
  // per pair, so wrong passwords from another client cannot lock the owner out (README, People and sign-in)
  await throttle(ctx, 'login', email, true);
  const user = await findUserByEmail(email);
  // unknown address or no password: the same argon2id work and the same answer as a wrong password
  if (!(await verifySecret(user?.passwordHash, password)) || !user) {
    throw new RequestError(401, 'invalid_credentials', 'Wrong e-mail address or password.', {
      details: { reason: 'invalid_credentials' },
    });
  }
  await signIn(ctx, user, 'password');
  ctx.body = { user: userView(user) };
});

authRouter.post('/api/auth/email-code', surface('teams'), validateBody(emailCodeSchema), async (ctx) => {
  checkSignInOrigin(ctx);
  const { email, name } = body<{ email: string; name?: string }>(ctx);
  await throttle(ctx, 'email-code', email);
  // Not awaited: the answer must not wait on (and so reveal) whether there was anyone to write to.
  // A failure to send is the operator's to see in the log.
  issueEmailCode(email, name?.trim()).catch((err: Error) =>
    console.error(`[auth] ${ctx.state.requestId} could not send a sign-in code: ${err.message}`),
  );
  ctx.status = 202;
  ctx.body = { ok: true, expires_in_seconds: config.emailCodeTtlSeconds };
});

authRouter.post('/api/auth/email-code/verify', surface('teams'), validateBody(emailCodeVerifySchema), async (ctx) => {
  checkSignInOrigin(ctx);
  const { email, code } = body<{ email: string; code: string }>(ctx);
  await throttle(ctx, 'email-code-verify', email);
  const verdict = await verifyEmailCode(email, code);
  if (!verdict.ok) {
    throw new RequestError(
      401,
      'invalid_code',
      verdict.attemptsLeft > 0
        ? `That code is wrong. ${verdict.attemptsLeft} more ${verdict.attemptsLeft === 1 ? 'try' : 'tries'} ` +
            'before it stops working.'
        : 'That code is wrong, used, expired, or out of tries. Ask for a new one.',
      { details: { reason: 'invalid_code', attempts_left: verdict.attemptsLeft } },
    );
  }
  await signIn(ctx, verdict.user, 'email_code');
  ctx.body = { user: userView(verdict.user), created: verdict.created };
});

authRouter.post('/api/auth/logout', surface('teams'), validateBody(logoutSchema), async (ctx) => {
  const token = sessionToken(ctx);
  if (token) {
    const resolved = await resolveSession(token);
    if (resolved.caller) {
      // signing someone out from another site is a nuisance worth refusing too
      checkSignInOrigin(ctx);
      await revokeSession(resolved.session.id);
    }
  }
  clearSessionCookie(ctx);
  ctx.body = { ok: true };
});

authRouter.get('/api/auth/session', surface('teams'), requireSession, async (ctx) => {
  const s = ctx.state.session!;
  ctx.set('Cache-Control', 'no-store');
  ctx.body = {
    user: userView(s.user),
    session: { id: s.id, method: s.method, created_at: s.createdAt, expires_at: s.expiresAt },
  };
});
