// Files the gateway hosts for a while: generated audio and video. Kept in PostgreSQL (so every
// API process and worker sees the same files, embedded database included), handed out as
// signed URLs valid for about an hour, and deleted when they expire (24 hours by default) by the
// Temporal Schedule `switchyard-hosted-file-sweeper` (workflows/hostedFileSweeper.ts).
//
// A signed URL is `{origin}/api/media/{id}?expires={unix seconds}&signature={HMAC}`: anyone
// holding it may download the file until it expires, as with a cloud bucket's presigned URL;
// the status routes mint a fresh one on each call, so a job's output stays reachable for its
// whole retention.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { db } from '../db.js';

/** how long hosted files live (SWITCHYARD_MEDIA_RETENTION_HOURS, default 24) */
const RETENTION_MS = Number(process.env.SWITCHYARD_MEDIA_RETENTION_HOURS ?? 24) * 3600_000;
/** how long one signed URL stays valid */
const SIGNED_URL_TTL_SECONDS = 3600;

export interface HostedFileRef {
  id: string;
  expiresAt: Date;
}

export async function storeHostedFile(a: {
  accountId: string;
  jobId?: string;
  contentType: string;
  data: Buffer;
}): Promise<HostedFileRef> {
  const id = `file_${randomBytes(12).toString('hex')}`;
  const expiresAt = new Date(Date.now() + RETENTION_MS);
  await db().pool.query(
    `INSERT INTO hosted_files (id, account_id, job_id, content_type, byte_size, data, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [id, a.accountId, a.jobId ?? null, a.contentType, a.data.length, a.data, expiresAt],
  );
  return { id, expiresAt };
}

/** The file if it exists and has not expired (an expired file may not have been swept yet). */
export async function readHostedFile(id: string): Promise<{ contentType: string; data: Buffer } | undefined> {
  const r = await db().pool.query<{ content_type: string; data: Buffer }>(
    `SELECT content_type, data FROM hosted_files WHERE id = $1 AND expires_at > now()`,
    [id],
  );
  const row = r.rows[0];
  return row && { contentType: row.content_type, data: row.data };
}

/** What a file is, without its bytes (undefined when it does not exist or has expired). */
export async function describeHostedFile(
  id: string,
): Promise<{ contentType: string; bytes: number; expiresAt: Date } | undefined> {
  const r = await db().pool.query<{ content_type: string; byte_size: number; expires_at: Date }>(
    `SELECT content_type, byte_size, expires_at FROM hosted_files WHERE id = $1 AND expires_at > now()`,
    [id],
  );
  const row = r.rows[0];
  return row && { contentType: row.content_type, bytes: Number(row.byte_size), expiresAt: row.expires_at };
}

/** Deletes up to `limit` expired files; returns how many. Run by the sweeper schedule. */
export async function deleteExpiredHostedFiles(limit: number): Promise<number> {
  const r = await db().pool.query(
    `DELETE FROM hosted_files WHERE id IN (SELECT id FROM hosted_files WHERE expires_at <= now() ORDER BY expires_at LIMIT $1)`,
    [limit],
  );
  return r.rowCount ?? 0;
}

/**
 * A download URL for a hosted file, valid for SIGNED_URL_TTL_SECONDS (never past the file's own
 * expiry). `origin` is where callers reach the API: SWITCHYARD_PUBLIC_URL when set (behind a
 * proxy or CDN), else the origin of the request being answered.
 */
export async function signedUrl(id: string, origin: string, fileExpiresAt?: Date): Promise<string> {
  let expires = Math.floor(Date.now() / 1000) + SIGNED_URL_TTL_SECONDS;
  if (fileExpiresAt) expires = Math.min(expires, Math.floor(fileExpiresAt.getTime() / 1000));
  const base = (process.env.SWITCHYARD_PUBLIC_URL || origin).replace(/\/+$/, '');
  return `${base}/api/media/${id}?expires=${expires}&signature=${await sign(id, expires)}`;
}

export async function verifySignature(
  id: string,
  expires: string,
  signature: string,
): Promise<'ok' | 'expired' | 'invalid'> {
  if (!/^\d{1,12}$/.test(expires)) return 'invalid';
  const expected = Buffer.from(await sign(id, Number(expires)));
  const given = Buffer.from(signature);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return 'invalid';
  return Number(expires) * 1000 < Date.now() ? 'expired' : 'ok';
}

async function sign(id: string, expires: number): Promise<string> {
  return createHmac('sha256', await signingKey())
    .update(`${id}.${expires}`)
    .digest('base64url');
}

let key: Promise<string> | undefined;

/**
 * SWITCHYARD_MEDIA_SIGNING_KEY when set; otherwise a random key generated once and kept in the
 * database, so every process of one installation signs and checks alike with nothing to configure.
 */
function signingKey(): Promise<string> {
  const fromEnv = process.env.SWITCHYARD_MEDIA_SIGNING_KEY;
  if (fromEnv) return Promise.resolve(fromEnv);
  key ??= (async () => {
    const pool = db().pool;
    await pool.query(
      `INSERT INTO gateway_secrets (name, value) VALUES ('media_signing_key', $1) ON CONFLICT (name) DO NOTHING`,
      [randomBytes(32).toString('base64url')],
    );
    const r = await pool.query<{ value: string }>(`SELECT value FROM gateway_secrets WHERE name = 'media_signing_key'`);
    return r.rows[0]!.value;
  })().catch((err) => {
    key = undefined;
    throw err;
  });
  return key;
}
