// People. A user has an e-mail address (their sign-in name), a display name, optionally an argon2id
// password hash, and a personal account of their own (balances, API keys) made with them in one
// transaction. `id` is the spec's numeric `sessionId`, `uuid` its `sessionUUID`. Plain SQL (not
// Prisma) because sessions resolve users on the request path (see keys.ts for why that matters).
import { randomUUID } from 'node:crypto';
import { db, isUniqueViolation } from '../db.js';
import { CURRENCIES } from '../core/money.js';
import { hashSecret, verifySecret } from './passwords.js';

export interface User {
  id: number;
  uuid: string;
  email: string;
  displayName: string;
  accountId: string;
  passwordHash: string | null;
  createdAt: Date;
}

/** The address a user signs in with, however it was typed: trimmed and lower-cased. */
export function normalizeEmail(raw: string): string {
  return raw.trim().toLowerCase();
}

/** Loose on purpose (the mail server is the judge): something@something.tld, no spaces, at most 254. */
export function looksLikeEmail(raw: string): boolean {
  const e = raw.trim();
  return e.length <= 254 && /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(e);
}

/** The name a user gets when they gave none (e-mail code sign-up, the bootstrap login): the address's local part. */
export function defaultDisplayName(email: string): string {
  return email.split('@')[0]!.slice(0, 100) || email;
}

export class EmailTaken extends Error {
  constructor(email: string) {
    super(`a user with the e-mail address ${email} already exists`);
  }
}

const USER_COLUMNS = `id, uuid, email, display_name AS "displayName", account_id AS "accountId",
  password_hash AS "passwordHash", created_at AS "createdAt"`;

/**
 * A new user and their personal account (named by the address, so `npm run ops -- accounts show
 * <email>` finds it), or EmailTaken. `accountId` makes an existing account theirs instead (the
 * bootstrap login); `password` null means e-mail-code sign-in only.
 */
export async function createUser(input: {
  email: string;
  name: string;
  password?: string | null;
  accountId?: string;
}): Promise<User> {
  const email = normalizeEmail(input.email);
  // hashed before the transaction: no connection is held while argon2 works
  const passwordHash = input.password ? await hashSecret(input.password) : null;
  const client = await db().pool.connect();
  try {
    await client.query('BEGIN');
    let accountId = input.accountId;
    if (!accountId) {
      accountId = randomUUID();
      await client.query('INSERT INTO accounts (id, name) VALUES ($1, $2)', [accountId, email]);
      await client.query('INSERT INTO balances (account_id, currency) SELECT $1, unnest($2::"Currency"[])', [
        accountId,
        CURRENCIES,
      ]);
    }
    const { rows } = await client.query<User>(
      `INSERT INTO users (uuid, email, display_name, password_hash, account_id) VALUES ($1, $2, $3, $4, $5)
       RETURNING ${USER_COLUMNS}`,
      [randomUUID(), email, input.name, passwordHash, accountId],
    );
    await client.query('COMMIT');
    return rows[0]!;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    if (isUniqueViolation(err) && (err as { constraint?: string }).constraint === 'users_email_key')
      throw new EmailTaken(email);
    throw err;
  } finally {
    client.release();
  }
}

export async function findUserByEmail(email: string): Promise<User | null> {
  const { rows } = await db().pool.query<User>(`SELECT ${USER_COLUMNS} FROM users WHERE email = $1`, [
    normalizeEmail(email),
  ]);
  return rows[0] ?? null;
}

async function findUserByAccount(accountId: string): Promise<User | null> {
  const { rows } = await db().pool.query<User>(`SELECT ${USER_COLUMNS} FROM users WHERE account_id = $1`, [accountId]);
  return rows[0] ?? null;
}

export async function listUsers(): Promise<User[]> {
  const { rows } = await db().pool.query<User>(`SELECT ${USER_COLUMNS} FROM users ORDER BY id`);
  return rows;
}

export async function setPassword(userId: number, password: string): Promise<void> {
  await db().pool.query('UPDATE users SET password_hash = $2 WHERE id = $1', [userId, await hashSecret(password)]);
}

export async function recordLogin(userId: number): Promise<void> {
  await db().pool.query('UPDATE users SET last_login_at = now() WHERE id = $1', [userId]);
}

/**
 * Make the bootstrap account (`accountId`) the user `email` signs in as, with `password`: the
 * operator's own login (SWITCHYARD_BOOTSTRAP_EMAIL / _PASSWORD). Run at every start-up: a changed
 * password replaces the stored one, a changed address renames the account's user. An address that
 * already belongs to another account's user is refused rather than moved.
 */
export async function ensureBootstrapUser(
  accountId: string,
  email: string,
  password: string | undefined,
): Promise<{ user: User; created: boolean }> {
  if (!looksLikeEmail(email)) throw new Error(`SWITCHYARD_BOOTSTRAP_EMAIL is not an e-mail address: "${email}"`);
  const address = normalizeEmail(email);
  const byEmail = await findUserByEmail(address);
  if (byEmail && byEmail.accountId !== accountId) {
    throw new Error(`SWITCHYARD_BOOTSTRAP_EMAIL ${address} already belongs to another account's user`);
  }
  let user = byEmail ?? (await findUserByAccount(accountId));
  let created = false;
  if (!user) {
    user = await createUser({ email: address, name: defaultDisplayName(address), password, accountId });
    created = true;
  } else {
    if (user.email !== address) {
      await db().pool.query('UPDATE users SET email = $2 WHERE id = $1', [user.id, address]);
      user = { ...user, email: address };
    }
    if (password && !(await verifySecret(user.passwordHash, password))) await setPassword(user.id, password);
  }
  return { user, created };
}
