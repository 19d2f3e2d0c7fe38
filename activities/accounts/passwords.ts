// Password and sign-in-code hashing: argon2id through @node-rs/argon2 (a maintained native
// binding; it hashes on libuv's thread pool, so the event loop never waits on it). Its defaults are
// OWASP's argon2id minimum (19 MiB, 2 passes, 1 lane) and its default algorithm is argon2id; the
// PHC string stored carries the parameters, so raising them later still verifies old hashes.
import { hash, verify } from '@node-rs/argon2';

/** Shortest and longest password accepted (argon2 takes any length; the cap bounds the work per request). */
export const PASSWORD_MIN = 8;
export const PASSWORD_MAX = 256;

export function hashSecret(secret: string): Promise<string> {
  return hash(secret);
}

/** A stored hash of nothing anyone knows, verified against when there is no real hash (see below). */
let decoy: Promise<string> | undefined;

/**
 * Whether `secret` matches `stored`. With no stored hash (an unknown e-mail address, a user who
 * has no password) it still does one full argon2id verification against a decoy and answers
 * false, so the answer takes as long whether or not the address has an account.
 */
export async function verifySecret(stored: string | null | undefined, secret: string): Promise<boolean> {
  if (!stored) {
    decoy ??= hash(`decoy-${process.pid}-${Date.now()}`);
    await verify(await decoy, secret).catch(() => false);
    return false;
  }
  return verify(stored, secret).catch(() => false);
}
