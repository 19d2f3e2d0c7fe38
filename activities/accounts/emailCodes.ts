// Sign-in by e-mailed one-time code. A code is 8 random digits, valid for
// config.emailCodeTtlSeconds (10 minutes), good once, and refused after config.emailCodeAttempts
// (5) wrong tries; only its argon2id hash is stored. An address has one live code at a time:
// issuing a new one retires the older ones, so waiting for several codes buys no extra guesses.
// Every try is counted before the code is compared (one conditional UPDATE), so parallel guesses
// cannot exceed the limit, and using a code is a second conditional UPDATE, so two requests with
// the right code cannot both sign in. For an address with no user, open sign-up (signupPolicy.ts)
// sends a code too, and the right code creates the user: "e-mail me a code" signs up or signs in.
import { randomInt } from 'node:crypto';
import { db } from '../db.js';
import { config } from '../config.js';
import { sendMail } from '../mail/mailer.js';
import { hashSecret, verifySecret } from './passwords.js';
import { createUser, defaultDisplayName, EmailTaken, findUserByEmail, normalizeEmail, type User } from './users.js';
import { signupRefusalFor } from './signupPolicy.js';

const CODE_DIGITS = 8;

/** What people type: spaces and dashes ("1234 5678", "1234-5678") are ignored. */
function cleanCode(raw: string): string {
  return raw.replace(/[\s-]/g, '');
}

/**
 * Send `email` a new sign-in code, if there is someone to sign in: a user with that address, or
 * anyone while sign-up is open (`name` is then the new user's display name). Returns whether a code
 * was sent; the API answers the same either way, so the answer does not tell who has an account.
 */
export async function issueEmailCode(rawEmail: string, name?: string): Promise<boolean> {
  const email = normalizeEmail(rawEmail);
  const user = await findUserByEmail(email);
  if (!user && (await signupRefusalFor(email))) return false;
  const code = String(randomInt(0, 10 ** CODE_DIGITS)).padStart(CODE_DIGITS, '0');
  const codeHash = await hashSecret(code);
  const ttl = config.emailCodeTtlSeconds;
  const client = await db().pool.connect();
  try {
    await client.query('BEGIN');
    // one issuer per address at a time, so two concurrent requests cannot leave two live codes
    await client.query(`SELECT pg_advisory_xact_lock(hashtext('email-code:' || $1))`, [email]);
    await client.query(`UPDATE email_codes SET used_at = now() WHERE email = $1 AND used_at IS NULL`, [email]);
    await client.query(
      `INSERT INTO email_codes (id, email, code_hash, name, expires_at)
       VALUES (gen_random_uuid(), $1, $2, $3, now() + make_interval(secs => $4))`,
      [email, codeHash, user ? null : (name ?? null), ttl],
    );
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
  const minutes = Math.round(ttl / 60);
  const lifetime = minutes >= 1 ? `${minutes} minute${minutes === 1 ? '' : 's'}` : `${ttl} seconds`;
  await sendMail({
    to: email,
    subject: `Your sign-in code: ${code}`,
    text: [
      `Your ${config.serviceName} gateway sign-in code is:`,
      '',
      `    ${code}`,
      '',
      `It is valid for ${lifetime} and works once.`,
      user ? '' : 'Entering it creates your account.',
      'If you did not ask for it, ignore this message: nobody can sign in without the code.',
    ].join('\n'),
  });
  return true;
}

export type CodeVerdict = { ok: true; user: User; created: boolean } | { ok: false; attemptsLeft: number };

/**
 * Check a code for `email`. Right: the user (made now if sign-up is open and there was none).
 * Wrong, expired, used, or out of tries: `ok: false` (the same answer for an address with no code,
 * after the same argon2id work, so it tells nothing).
 */
export async function verifyEmailCode(rawEmail: string, rawCode: string): Promise<CodeVerdict> {
  const email = normalizeEmail(rawEmail);
  const code = cleanCode(rawCode);
  // count the try first: only a live code with tries left is compared at all
  const { rows } = await db().pool.query<{ id: string; codeHash: string; name: string | null; attempts: number }>(
    `UPDATE email_codes SET attempts = attempts + 1
     WHERE id = (SELECT id FROM email_codes WHERE email = $1 AND used_at IS NULL AND expires_at > now()
                 ORDER BY created_at DESC LIMIT 1)
       AND attempts < $2 AND used_at IS NULL AND expires_at > now()
     RETURNING id, code_hash AS "codeHash", name, attempts`,
    [email, config.emailCodeAttempts],
  );
  const row = rows[0];
  const right = await verifySecret(row?.codeHash, code);
  if (!row || !right) return { ok: false, attemptsLeft: row ? config.emailCodeAttempts - row.attempts : 0 };
  const used = await db().pool.query('UPDATE email_codes SET used_at = now() WHERE id = $1 AND used_at IS NULL', [
    row.id,
  ]);
  if (used.rowCount !== 1) return { ok: false, attemptsLeft: 0 };
  const user = await findUserByEmail(email);
  if (user) return { ok: true, user, created: false };
  // a code sent for sign-up; the policy may have changed since
  if (await signupRefusalFor(email)) return { ok: false, attemptsLeft: 0 };
  try {
    const created = await createUser({ email, name: row.name ?? defaultDisplayName(email), password: null });
    return { ok: true, user: created, created: true };
  } catch (err) {
    if (!(err instanceof EmailTaken)) throw err;
    // signed up by password meanwhile: the code still proves the address
    const existing = await findUserByEmail(email);
    if (!existing) throw err;
    return { ok: true, user: existing, created: false };
  }
}
