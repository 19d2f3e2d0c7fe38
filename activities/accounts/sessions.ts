// Web sessions. Signing in gives the browser a random 256-bit token (the session cookie); the
// database keeps only its sha256, in a `sessions` row that is the session: revoking it (sign-out,
// or an operator) ends the session on every API process at once, because each request with the
// cookie reads the row (one indexed query; no cache, so nothing to invalidate). A session unused for
// config.sessionTtlSeconds expires; each use pushes the expiry back (written at most once a minute).
// A session resolves to the same Caller an API key of the user's personal account does (keys.ts).
import { randomBytes, randomUUID } from 'node:crypto';
import { db, retryOnLostConnection } from '../db.js';
import { config } from '../config.js';
import { sessionCaller } from './keys.js';
import type { Caller } from '../core/caller.js';
import { sha256Hex } from '../core/hash.js';
import type { RedactionDefault } from '../../prisma/generated/client.js';

/** How a session was opened. */
export type SignInMethod = 'password' | 'email_code' | 'signup';

export interface SessionView {
  id: string;
  method: SignInMethod;
  createdAt: Date;
  expiresAt: Date;
  user: { id: number; uuid: string; email: string; displayName: string; accountId: string };
}

/** Tokens are 43 base64url characters; anything else is refused before it is hashed or looked up. */
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;
/** Expiry is pushed back when a session is used, but written at most this often. */
const TOUCH_EVERY_MS = 60_000;

function hashToken(token: string): string {
  return sha256Hex(token);
}

/** Open a session for `userId`; the token goes into the cookie and is not kept anywhere. */
export async function createSession(
  userId: number,
  meta: { method: SignInMethod; userAgent?: string; ip?: string },
): Promise<{ token: string; id: string; expiresAt: Date }> {
  const token = randomBytes(32).toString('base64url');
  const id = randomUUID();
  const expiresAt = new Date(Date.now() + config.sessionTtlSeconds * 1000);
  await db().pool.query(
    `INSERT INTO sessions (id, user_id, token_hash, method, user_agent, ip, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [id, userId, hashToken(token), meta.method, meta.userAgent?.slice(0, 500) || null, meta.ip ?? null, expiresAt],
  );
  return { token, id, expiresAt };
}

const RESOLVE_SESSION_SQL = `SELECT s.id, s.method, s.created_at AS "createdAt", s.expires_at AS "expiresAt",
    s.last_seen_at AS "lastSeenAt", u.id AS "userId", u.uuid, u.email, u.display_name AS "displayName",
    u.account_id AS "accountId", a.status::text AS "accountStatus", a.provider_allow AS "providerAllow",
    a.provider_deny AS "providerDeny", a.zdr_only AS "zdrOnly", a.redaction::text AS redaction
  FROM sessions s JOIN users u ON u.id = s.user_id JOIN accounts a ON a.id = u.account_id
  WHERE s.token_hash = $1 AND s.revoked_at IS NULL AND s.expires_at > now()`;

interface SessionRow {
  id: string;
  method: SignInMethod;
  createdAt: Date;
  expiresAt: Date;
  lastSeenAt: Date;
  userId: number;
  uuid: string;
  email: string;
  displayName: string;
  accountId: string;
  accountStatus: string;
  providerAllow: string[];
  providerDeny: string[];
  zdrOnly: boolean;
  redaction: RedactionDefault;
}

/**
 * The caller and session behind a cookie's token, or why there is none: "invalid" (unknown,
 * signed out, expired) or "inactive" (the account is suspended).
 */
export async function resolveSession(
  token: string,
): Promise<{ caller: Caller; session: SessionView } | { caller: null; reason: 'invalid' | 'inactive' }> {
  if (!TOKEN_SHAPE.test(token)) return { caller: null, reason: 'invalid' };
  // every signed-in request starts here: a pooled connection that just died must not fail it
  const { rows } = await retryOnLostConnection(() =>
    db().pool.query<SessionRow>({ name: 'resolve-session', text: RESOLVE_SESSION_SQL, values: [hashToken(token)] }),
  );
  const s = rows[0];
  if (!s) return { caller: null, reason: 'invalid' };
  if (s.accountStatus !== 'active') return { caller: null, reason: 'inactive' };
  let expiresAt = s.expiresAt;
  if (Date.now() - s.lastSeenAt.getTime() > TOUCH_EVERY_MS) {
    expiresAt = new Date(Date.now() + config.sessionTtlSeconds * 1000);
    await retryOnLostConnection(() =>
      db().pool.query('UPDATE sessions SET last_seen_at = now(), expires_at = $2 WHERE id = $1', [s.id, expiresAt]),
    );
  }
  return {
    caller: sessionCaller({ webSessionId: s.id, userId: s.userId, accountId: s.accountId }, s),
    session: {
      id: s.id,
      method: s.method,
      createdAt: s.createdAt,
      expiresAt,
      user: { id: s.userId, uuid: s.uuid, email: s.email, displayName: s.displayName, accountId: s.accountId },
    },
  };
}

/** End one session. Returns whether it was still open. */
export async function revokeSession(sessionId: string): Promise<boolean> {
  const { rowCount } = await db().pool.query(
    'UPDATE sessions SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL',
    [sessionId],
  );
  return (rowCount ?? 0) > 0;
}

/** End every session of a user (the CLI's `users sign-out`, a password change). Returns how many. */
export async function revokeUserSessions(userId: number): Promise<number> {
  const { rowCount } = await db().pool.query(
    'UPDATE sessions SET revoked_at = now() WHERE user_id = $1 AND revoked_at IS NULL AND expires_at > now()',
    [userId],
  );
  return rowCount ?? 0;
}
