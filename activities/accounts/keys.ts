// API keys: `sk-<service>-<uuid>` (and legacy bare UUIDs). Only a sha256 of the key and a short
// display prefix are stored. Resolution is on every request's path, so resolved keys are kept
// in memory for a few seconds (config.keyCacheTtlMs); changing a key through this module evicts
// it here at once and announces it to the other processes (cacheChanges.ts), which evict it too.
import { randomUUID } from 'node:crypto';
import type { Caller } from '../core/caller.js';
import { sha256Hex } from '../core/hash.js';
import { db, retryOnLostConnection } from '../db.js';
import { config } from '../config.js';
import { announceKeyChanges } from './cacheChanges.js';
import type { BillingMode, KeyStatus, RedactionDefault } from '../../prisma/generated/client.js';

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
const LEGACY_KEY = new RegExp(`^${UUID}$`, 'i');

// Built once per service name (tests change it), not once per request.
let pattern: { service: string; re: RegExp } | undefined;
function keyPattern(): RegExp {
  if (pattern?.service !== config.serviceName) {
    pattern = {
      service: config.serviceName,
      re: new RegExp(`^sk-${config.serviceName.replace(/[^a-z0-9]/g, '\\$&')}-${UUID}$`, 'i'),
    };
  }
  return pattern.re;
}

function generateKey(): string {
  return `sk-${config.serviceName}-${randomUUID()}`;
}

export function isWellFormedKey(raw: string): boolean {
  return keyPattern().test(raw) || LEGACY_KEY.test(raw);
}

export function hashKey(raw: string): string {
  return sha256Hex(raw.toLowerCase());
}

/** "sk-nanogpt-1a2b3c4d…": enough to recognise a key in a list, useless to an attacker. */
export function displayPrefix(raw: string): string {
  const cut = raw.length - 36 + 8; // the service prefix plus the UUID's first 8 characters
  return raw.slice(0, cut).toLowerCase();
}

export interface KeyRestrictions {
  dailyRequestLimit?: number | null;
  /** nano-USD per UTC day */
  dailyUsdLimit?: bigint | null;
  providerAllow?: string[];
  providerDeny?: string[];
  zdrOnly?: boolean;
  billingMode?: BillingMode;
  /** PII redaction when a request does not say (inherit: the account's default) */
  redaction?: RedactionDefault;
  expiresAt?: Date | null;
}

export async function createKey(accountId: string, opts: KeyRestrictions & { name?: string; key?: string } = {}) {
  const key = opts.key ?? generateKey();
  if (!isWellFormedKey(key)) throw new Error(`a key must look like sk-${config.serviceName}-<uuid> or be a bare UUID`);
  const record = await db().prisma.apiKey.create({
    data: {
      accountId,
      name: opts.name ?? null,
      hash: hashKey(key),
      prefix: displayPrefix(key),
      dailyRequestLimit: opts.dailyRequestLimit ?? null,
      dailyUsdLimit: opts.dailyUsdLimit == null ? null : opts.dailyUsdLimit.toString(),
      providerAllow: opts.providerAllow ?? [],
      providerDeny: opts.providerDeny ?? [],
      zdrOnly: opts.zdrOnly ?? false,
      billingMode: opts.billingMode ?? 'auto',
      redaction: opts.redaction ?? 'inherit',
      expiresAt: opts.expiresAt ?? null,
    },
  });
  return { key, record };
}

/** Revoke by key id or by display prefix (only the keys of `accountId`, when given). Returns how many were revoked. */
export async function revokeKey(idOrPrefix: string, accountId?: string): Promise<number> {
  const where = LEGACY_KEY.test(idOrPrefix) ? { id: idOrPrefix } : { prefix: idOrPrefix.toLowerCase() };
  const keys = await retryOnLostConnection(() =>
    db().prisma.apiKey.findMany({
      where: { ...where, ...(accountId ? { accountId, status: { not: 'revoked' as const } } : {}) },
      select: { id: true, hash: true },
    }),
  );
  // Run again if its connection dies: a revocation that did not commit must not be reported (the key
  // would stay valid), and one that committed before the answer was lost changes nothing the second time.
  await retryOnLostConnection(() =>
    db().prisma.apiKey.updateMany({
      where: { id: { in: keys.map((k) => k.id) }, status: { not: 'revoked' } },
      data: { status: 'revoked', revokedAt: new Date() },
    }),
  );
  for (const k of keys) cache.delete(k.hash);
  await announceKeyChanges(keys.map((k) => k.hash));
  return keys.length;
}

/** An account's keys, oldest first: what a key list shows (never the key itself, which is not stored). */
export function listKeys(accountId: string) {
  return db().prisma.apiKey.findMany({ where: { accountId }, orderBy: { createdAt: 'asc' } });
}

export async function setKeyStatus(keyId: string, status: KeyStatus): Promise<void> {
  const k = await db().prisma.apiKey.update({ where: { id: keyId }, data: { status } });
  cache.delete(k.hash);
  await announceKeyChanges([k.hash]);
}

/**
 * A key's PII redaction default (by id or display prefix; inherit = its account's). Returns how many
 * keys changed; every API process sees it at once, as for a revocation.
 */
export async function setKeyRedaction(idOrPrefix: string, redaction: RedactionDefault): Promise<number> {
  const where = LEGACY_KEY.test(idOrPrefix) ? { id: idOrPrefix } : { prefix: idOrPrefix.toLowerCase() };
  const keys = await db().prisma.apiKey.findMany({ where, select: { id: true, hash: true } });
  await db().prisma.apiKey.updateMany({ where: { id: { in: keys.map((k) => k.id) } }, data: { redaction } });
  await forget(keys.map((k) => k.hash));
  return keys.length;
}

/** An account's PII redaction default (inherit = off), which its inheriting keys follow at once. */
export async function setAccountRedaction(accountId: string, redaction: RedactionDefault): Promise<void> {
  await db().prisma.account.update({ where: { id: accountId }, data: { redaction } });
  const keys = await db().prisma.apiKey.findMany({ where: { accountId }, select: { hash: true } });
  await forget(keys.map((k) => k.hash));
}

async function forget(hashes: string[]): Promise<void> {
  for (const h of hashes) cache.delete(h);
  await announceKeyChanges(hashes);
}

// ---- resolution, cached ----

type Resolution = { caller: Caller | null; reason?: string; expiresAt: Date | null; at: number };
const cache = new Map<string, Resolution>();
const CACHE_MAX = 50_000;

/**
 * The caller behind a raw key, or why there is none ("missing", "invalid", "revoked",
 * "inactive", "expired"). Unknown keys are cached too, so a flood of bad keys costs one query each per TTL.
 * With `mayQuery` false, a key this process has not known to be good is not looked up in the
 * database (reason "not_looked_up"); a good key's cached entry is still refreshed.
 */
export async function resolveKey(raw: string, mayQuery = true): Promise<KeyVerdict> {
  if (!isWellFormedKey(raw)) return { caller: null, reason: 'invalid' };
  const hash = hashKey(raw);
  const now = Date.now();
  let hit = cache.get(hash);
  if (!hit || now - hit.at > config.keyCacheTtlMs) {
    if (!mayQuery && !hit?.caller) return { caller: null, reason: 'not_looked_up' };
    hit = await loadResolution(hash, now);
    if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value as string);
    cache.set(hash, hit);
  }
  return verdictOf(hit, now);
}

/**
 * resolveKey's answer when this process has it in memory (within the cache's TTL), with no promise:
 * the request path awaits resolveKey only when the database must be asked. Undefined: call resolveKey.
 */
export function knownKey(raw: string): KeyVerdict | undefined {
  if (!isWellFormedKey(raw)) return { caller: null, reason: 'invalid' };
  const now = Date.now();
  const hit = cache.get(hashKey(raw));
  return hit && now - hit.at <= config.keyCacheTtlMs ? verdictOf(hit, now) : undefined;
}

type KeyVerdict = { caller: Caller } | { caller: null; reason: string };

function verdictOf(hit: Resolution, now: number): KeyVerdict {
  if (hit.caller && hit.expiresAt && hit.expiresAt.getTime() <= now) return { caller: null, reason: 'expired' };
  return hit.caller ? { caller: hit.caller } : { caller: null, reason: hit.reason ?? 'invalid' };
}

// Plain SQL (a named prepared statement), not Prisma: this runs for every new key an API process
// sees, and Prisma's query compiler would cost the API process about 60 MB the first time it ran.
const RESOLVE_KEY_SQL = `SELECT k.id, k.account_id AS "accountId", k.prefix, k.status::text AS status,
    k.expires_at AS "expiresAt", k.daily_request_limit AS "dailyRequestLimit",
    k.daily_usd_limit::text AS "dailyUsdLimit", k.provider_allow AS "providerAllow",
    k.provider_deny AS "providerDeny", k.zdr_only AS "zdrOnly", k.billing_mode::text AS "billingMode",
    k.redaction::text AS redaction, a.redaction::text AS "accountRedaction", a.status::text AS "accountStatus", a.provider_allow AS "accountProviderAllow",
    a.provider_deny AS "accountProviderDeny", a.zdr_only AS "accountZdrOnly", u.id AS "userId"
  FROM api_keys k JOIN accounts a ON a.id = k.account_id LEFT JOIN users u ON u.account_id = k.account_id
  WHERE k.hash = $1`;

interface KeyRow {
  id: string;
  accountId: string;
  prefix: string;
  status: string;
  expiresAt: Date | null;
  dailyRequestLimit: number | null;
  dailyUsdLimit: string | null;
  providerAllow: string[];
  providerDeny: string[];
  zdrOnly: boolean;
  billingMode: BillingMode;
  redaction: RedactionDefault;
  accountRedaction: RedactionDefault;
  accountStatus: string;
  accountProviderAllow: string[];
  accountProviderDeny: string[];
  accountZdrOnly: boolean;
  userId: number | null;
}

async function loadResolution(hash: string, at: number): Promise<Resolution> {
  const { rows } = await db().pool.query<KeyRow>({ name: 'resolve-key', text: RESOLVE_KEY_SQL, values: [hash] });
  const k = rows[0];
  if (!k) return { caller: null, reason: 'invalid', expiresAt: null, at };
  if (k.status !== 'active') return { caller: null, reason: k.status, expiresAt: null, at };
  if (k.accountStatus !== 'active') return { caller: null, reason: 'inactive', expiresAt: null, at };
  const account = {
    providerAllow: k.accountProviderAllow,
    providerDeny: k.accountProviderDeny,
    zdrOnly: k.accountZdrOnly,
    redaction: k.accountRedaction,
  };
  return { caller: toCaller(k, account), expiresAt: k.expiresAt, at };
}

function toCaller(
  k: {
    id: string;
    accountId: string;
    prefix: string;
    dailyRequestLimit: number | null;
    dailyUsdLimit: { toString(): string } | null;
    providerAllow: string[];
    providerDeny: string[];
    zdrOnly: boolean;
    billingMode: BillingMode;
    redaction?: RedactionDefault;
    userId: number | null;
  },
  a: { providerAllow: string[]; providerDeny: string[]; zdrOnly: boolean; redaction?: RedactionDefault },
): Caller {
  return {
    keyId: k.id,
    accountId: k.accountId,
    keyPrefix: k.prefix,
    userId: k.userId,
    dailyRequestLimit: k.dailyRequestLimit,
    dailyUsdLimit: k.dailyUsdLimit == null ? null : BigInt(k.dailyUsdLimit.toString()),
    providerAllow: intersectAllowLists(a.providerAllow, k.providerAllow),
    providerDeny: [...new Set([...a.providerDeny, ...k.providerDeny])],
    zdrOnly: a.zdrOnly || k.zdrOnly,
    billingMode: k.billingMode,
    redaction: k.redaction && k.redaction !== 'inherit' ? k.redaction : (a.redaction ?? 'inherit'),
  };
}

/** The caller of a request signed in with a session: the account's own restrictions, no key's. */
export function sessionCaller(
  s: { webSessionId: string; userId: number; accountId: string },
  a: { providerAllow: string[]; providerDeny: string[]; zdrOnly: boolean; redaction?: RedactionDefault },
): Caller {
  return {
    keyId: null,
    accountId: s.accountId,
    keyPrefix: null,
    userId: s.userId,
    webSessionId: s.webSessionId,
    dailyRequestLimit: null,
    dailyUsdLimit: null,
    providerAllow: intersectAllowLists(a.providerAllow),
    providerDeny: [...new Set(a.providerDeny)],
    zdrOnly: a.zdrOnly,
    billingMode: 'auto',
    redaction: a.redaction ?? 'inherit',
  };
}

/** Empty list = no restriction. Two restrictions intersect; null means "any provider". */
function intersectAllowLists(...lists: string[][]): string[] | null {
  let result: string[] | null = null;
  for (const list of lists) {
    if (list.length === 0) continue;
    result = result === null ? [...list] : result.filter((p) => list.includes(p));
  }
  return result;
}

/** Forget these keys' cached resolutions (by hash), or all of them (null): see cacheChanges.ts. */
export function forgetKeys(hashes: string[] | null): void {
  if (hashes === null) cache.clear();
  else for (const h of hashes) cache.delete(h);
}
