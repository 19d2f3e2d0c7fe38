// Writing a file: its bytes streamed into PostgreSQL in 256 KiB bytea chunks (file_chunks), the
// whole upload one transaction. Why chunks in rows rather than large objects: a row is deleted with
// its file (ON DELETE CASCADE; large objects need lo_unlink or vacuumlo, or they leak), chunks are
// ordinary data to backups, replication and the embedded database, and a reader fetches a few at a
// time with plain SELECTs and no transaction open.
//
// Why one transaction: a failed or aborted upload (the client goes away, a limit is hit, the API
// process dies) leaves nothing behind; nobody sees a half-stored file and no sweeper is needed. The
// price is one connection held while the bytes arrive, so the upload route caps how many run at once
// per process (config.fileUploadsMaxConcurrent).
//
// The staged quota (spec "Limits": 1 GiB and 100 files per key until a batch starts) counts a key's
// `batch` files that no batch has held yet. It is checked three times: before any byte is read (a
// key already at its file count is refused at once), while streaming (the bytes the key had staged
// when the upload began plus this file's must fit: a 2 GB upload is stopped at the limit, not at its
// end), and authoritatively just before the commit, under a per-key advisory lock held to the
// commit: two uploads racing for the last slot are counted one after the other, so both cannot fit.
import { randomBytes } from 'node:crypto';
import { config } from '../config.js';
import { RequestError } from '../core/errors.js';
import { db } from '../db.js';
import { type FilePurpose, inTransaction, type StoredFile, toStoredFile } from './files.js';

/** Bytes per stored chunk: big enough that a 200 MB file is 800 rows, small enough to read in pieces. */
export const CHUNK_BYTES = 256 * 1024;

export interface StoreFileInput {
  accountId: string;
  /** the uploading key: the staged quota is counted per key (null: no quota applies) */
  keyId: string | null;
  /** `batch` files are staged (count against the key's quota until a batch holds them); outputs are not */
  purpose: FilePurpose;
  filename: string;
  /** served by GET .../content; default application/jsonl (every purpose is JSON Lines) */
  contentType?: string;
  /** the bytes, pulled one piece at a time (a Node Readable is one) */
  body: AsyncIterable<Buffer | Uint8Array> | Iterable<Buffer | Uint8Array>;
  /** refuse files larger than this (413); default: no limit */
  maxBytes?: number;
  /**
   * Runs after the last byte, inside the transaction, before the quota check and the commit; throw
   * to abandon the file. The upload route waits here for the rest of the form (a `purpose` field
   * may come after the file) and checks it.
   */
  beforeCommit?: () => Promise<void>;
}

/** file_ + creation time (ms, 12 hex digits) + 12 random hex digits: ids sort by creation. */
function newFileId(now: Date): string {
  return `file_${now.getTime().toString(16).padStart(12, '0')}${randomBytes(6).toString('hex')}`;
}

function quotaExceeded(what: string): RequestError {
  return new RequestError(
    429,
    'batch_file_storage_quota_exceeded',
    `${what}. Files count against this quota until a batch starts using them: delete files you no longer need ` +
      `(DELETE /v1/files/{file_id}) or start batches with them.`,
    // the openai SDK retries 429s unless told not to: a retry would re-send the whole file for nothing
    { headers: { 'x-should-retry': 'false' } },
  );
}

function tooMany(): RequestError {
  return quotaExceeded(
    `This API key already has ${config.stagedFilesMaxCount} batch files staged (the most it may have)`,
  );
}

function tooLarge(): RequestError {
  return quotaExceeded(
    `This file would take this API key's staged batch files past ${config.stagedFilesMaxBytes} bytes (its quota)`,
  );
}

async function stagedUsage(
  query: (sql: string, params: unknown[]) => Promise<{ rows: Array<{ files: string; bytes: string }> }>,
  keyId: string,
): Promise<{ files: number; bytes: number }> {
  const r = await query(
    `SELECT count(*) AS files, coalesce(sum(bytes), 0) AS bytes FROM files WHERE key_id = $1 AND staged`,
    [keyId],
  );
  return { files: Number(r.rows[0]!.files), bytes: Number(r.rows[0]!.bytes) };
}

/** Stores a file from a stream of bytes; the file exists (and is listed) only once all of it is stored. */
export async function storeFile(input: StoreFileInput): Promise<StoredFile> {
  const staged = input.purpose === 'batch' && input.keyId !== null;
  let byteBudget = Number.POSITIVE_INFINITY;
  if (staged) {
    const before = await stagedUsage((sql, p) => db().pool.query(sql, p), input.keyId!);
    if (before.files >= config.stagedFilesMaxCount) throw tooMany();
    byteBudget = config.stagedFilesMaxBytes - before.bytes;
  }
  const maxBytes = input.maxBytes ?? Number.POSITIVE_INFINITY;
  const now = new Date();
  const id = newFileId(now);

  const row = await inTransaction(async (client) => {
    await client.query(
      `INSERT INTO files (id, account_id, key_id, purpose, filename, content_type, bytes, staged, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, 0, $7, $8)`,
      [
        id,
        input.accountId,
        input.keyId,
        input.purpose,
        input.filename,
        input.contentType ?? 'application/jsonl',
        staged,
        now,
      ],
    );
    let seq = 0;
    let total = 0;
    // pieces not yet written: at most one chunk plus the last piece received
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    const writeChunk = async (data: Buffer) => {
      await client.query(`INSERT INTO file_chunks (file_id, seq, data) VALUES ($1, $2, $3)`, [id, seq++, data]);
    };
    for await (const piece of input.body) {
      const buf = Buffer.isBuffer(piece) ? piece : Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength);
      total += buf.length;
      if (total > maxBytes)
        throw new RequestError(413, 'file_too_large', `The file is larger than the limit of ${maxBytes} bytes.`, {
          param: 'file',
        });
      if (total > byteBudget) throw tooLarge();
      pending.push(buf);
      pendingBytes += buf.length;
      while (pendingBytes >= CHUNK_BYTES) {
        const all = pending.length === 1 ? pending[0]! : Buffer.concat(pending, pendingBytes);
        await writeChunk(all.subarray(0, CHUNK_BYTES));
        const rest = all.subarray(CHUNK_BYTES);
        pending = rest.length ? [rest] : [];
        pendingBytes = rest.length;
      }
    }
    if (pendingBytes > 0) await writeChunk(Buffer.concat(pending, pendingBytes));
    await input.beforeCommit?.();
    if (staged) {
      // held until COMMIT: concurrent uploads of one key are counted one after the other
      await client.query(`SELECT pg_advisory_xact_lock(hashtextextended('staged-files:' || $1, 0))`, [input.keyId]);
      // this file's own row is in the count (its bytes still 0)
      const withThis = await stagedUsage((sql, p) => client.query(sql, p), input.keyId!);
      if (withThis.files > config.stagedFilesMaxCount) throw tooMany();
      if (withThis.bytes + total > config.stagedFilesMaxBytes) throw tooLarge();
    }
    const done = await client.query(
      `UPDATE files SET bytes = $2 WHERE id = $1
       RETURNING id, purpose, filename, content_type, bytes, created_at`,
      [id, total],
    );
    return done.rows[0];
  });
  return toStoredFile(row);
}
