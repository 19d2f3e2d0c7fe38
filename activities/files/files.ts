// The Files API's records (spec "Batch resources"; OpenAI's FileObject): what a file is, how it is
// shown, found, listed, read and deleted. Writing one is store.ts; batches pinning one are holds.ts.
//
// Every function takes the caller's account: a file of another account is "not found" (404), never
// "forbidden", so ids of other people's files cannot be probed.
import { RequestError } from '../core/errors.js';
import type pg from 'pg';
import { db } from '../db.js';

/** `batch`: an uploaded batch input. `batch_output`: a batch's output or error file (as at OpenAI). */
export type FilePurpose = 'batch' | 'batch_output';

/** OpenAI's FileObject, as the official SDK types it. */
export interface FileObject {
  id: string;
  object: 'file';
  bytes: number;
  /** Unix seconds */
  created_at: number;
  filename: string;
  purpose: FilePurpose;
  /** always `processed`: a file exists only once all of it is stored */
  status: 'processed';
}

/** A file as stored, with what the content route needs beside the public object. */
export interface StoredFile extends FileObject {
  contentType: string;
}

/** file_ + 12 hex digits of the creation time in ms + 12 random: ids sort by creation (lists page by id). */
export const FILE_ID = /^file_[0-9a-f]{24}$/;

interface FileRow {
  id: string;
  purpose: FilePurpose;
  filename: string;
  content_type: string;
  bytes: string;
  created_at: Date;
}

const COLUMNS = 'id, purpose, filename, content_type, bytes, created_at';

export function toStoredFile(row: FileRow): StoredFile {
  return {
    id: row.id,
    object: 'file',
    bytes: Number(row.bytes),
    created_at: Math.floor(row.created_at.getTime() / 1000),
    filename: row.filename,
    purpose: row.purpose,
    status: 'processed',
    contentType: row.content_type,
  };
}

/** The public object, without the stored extras. */
export function fileObject(file: StoredFile): FileObject {
  const { contentType: _, ...object } = file;
  return object;
}

export function fileNotFound(id: string, param = 'file_id'): RequestError {
  return new RequestError(404, 'not_found', `No file with id '${id}' (files of other accounts are not visible).`, {
    param,
  });
}

/** The account's file, or undefined. */
async function findFile(id: string, accountId: string): Promise<StoredFile | undefined> {
  if (!FILE_ID.test(id)) return undefined;
  const r = await db().pool.query<FileRow>(`SELECT ${COLUMNS} FROM files WHERE id = $1 AND account_id = $2`, [
    id,
    accountId,
  ]);
  return r.rows[0] ? toStoredFile(r.rows[0]) : undefined;
}

/** The account's file, or a 404. */
export async function getFile(id: string, accountId: string): Promise<StoredFile> {
  const file = await findFile(id, accountId);
  if (!file) throw fileNotFound(id);
  return file;
}

export interface ListFilesQuery {
  accountId: string;
  purpose?: string;
  /** 1 to 10,000 */
  limit: number;
  /** the page after this id, in `order` */
  after?: string;
  /** the page before this id, in `order` (still returned in `order`) */
  before?: string;
  /** by creation; default newest first */
  order?: 'asc' | 'desc';
}

/**
 * One page of the account's files. Ids sort by creation time, so a cursor is the id itself: a page
 * needs no lookup of the cursor's row, and a deleted cursor still pages correctly.
 */
export async function listFiles(q: ListFilesQuery): Promise<{ data: FileObject[]; has_more: boolean }> {
  const order = q.order ?? 'desc';
  // `before` walks against the list's order: fetch that way, then turn the page around.
  const backwards = q.before !== undefined && q.after === undefined;
  const ascending = (order === 'asc') !== backwards;
  const cursor = backwards ? q.before : q.after;
  const params: unknown[] = [q.accountId, q.limit + 1];
  let where = 'account_id = $1';
  if (cursor !== undefined) {
    params.push(cursor);
    where += ` AND id ${ascending ? '>' : '<'} $${params.length}`;
  }
  if (q.purpose !== undefined) {
    params.push(q.purpose);
    where += ` AND purpose = $${params.length}`;
  }
  const r = await db().pool.query<FileRow>(
    `SELECT ${COLUMNS} FROM files WHERE ${where} ORDER BY id ${ascending ? 'ASC' : 'DESC'} LIMIT $2`,
    params,
  );
  const rows = r.rows.slice(0, q.limit);
  if (backwards) rows.reverse();
  return { data: rows.map((row) => fileObject(toStoredFile(row))), has_more: r.rows.length > q.limit };
}

/** How many chunks one query fetches while reading: 1 MiB at a time, never the whole file. */
const CHUNKS_PER_QUERY = 4;

/**
 * The file's bytes, chunk by chunk (256 KiB each), a few chunks per query, no connection held
 * between pulls: a slow reader costs memory for one batch of chunks and no database connection.
 * Throws a 404 if the file is not the account's; throws if the file is deleted mid-read (the
 * reader sees an error, never a silently short file).
 */
export async function* readFile(id: string, accountId: string): AsyncGenerator<Buffer> {
  const file = await getFile(id, accountId);
  let seq = 0;
  let read = 0;
  pages: for (;;) {
    const r = await db().pool.query<{ seq: number; data: Buffer }>(
      `SELECT seq, data FROM file_chunks WHERE file_id = $1 AND seq >= $2 ORDER BY seq LIMIT ${CHUNKS_PER_QUERY}`,
      [id, seq],
    );
    for (const row of r.rows) {
      if (row.seq !== seq) break pages;
      seq++;
      read += row.data.length;
      yield row.data;
    }
    if (r.rows.length < CHUNKS_PER_QUERY) break;
  }
  if (read !== file.bytes) throw new Error(`file ${id} changed while it was being read (deleted?)`);
}

/**
 * The file's lines (UTF-8, without their `\n`; a final line without one included, a trailing empty
 * line not), numbered from 1, for a worker reading a JSONL batch input without holding the file.
 * A line longer than `maxLineBytes` throws: one line must fit in memory.
 */
export async function* readFileLines(
  id: string,
  accountId: string,
  maxLineBytes = 64 * 1024 * 1024,
): AsyncGenerator<{ number: number; text: string }> {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let number = 0;
  for await (const chunk of readFile(id, accountId)) {
    let start = 0;
    for (let nl = chunk.indexOf(10, start); nl !== -1; nl = chunk.indexOf(10, start)) {
      pending.push(chunk.subarray(start, nl));
      const line = Buffer.concat(pending);
      pending = [];
      pendingBytes = 0;
      start = nl + 1;
      if (line.length > maxLineBytes) throw new Error(`line ${number + 1} is longer than ${maxLineBytes} bytes`);
      yield { number: ++number, text: line.toString('utf8') };
    }
    if (start < chunk.length) {
      pending.push(chunk.subarray(start));
      pendingBytes += chunk.length - start;
      if (pendingBytes > maxLineBytes) throw new Error(`line ${number + 1} is longer than ${maxLineBytes} bytes`);
    }
  }
  if (pendingBytes > 0) yield { number: ++number, text: Buffer.concat(pending).toString('utf8') };
}

/** A file's bytes are also deleted (cascade). 409 `file_in_use` while a batch holds it (holds.ts). */
export async function deleteFile(
  id: string,
  accountId: string,
): Promise<{ id: string; object: 'file'; deleted: true }> {
  if (!FILE_ID.test(id)) throw fileNotFound(id);
  await inTransaction(async (client) => {
    // The row lock orders this delete against holdFile, which takes the same lock: whichever comes
    // second sees the other's outcome (a held file here, a deleted one there).
    const found = await client.query(`SELECT 1 FROM files WHERE id = $1 AND account_id = $2 FOR UPDATE`, [
      id,
      accountId,
    ]);
    if (!found.rowCount) throw fileNotFound(id);
    const held = await client.query<{ holder_id: string }>(
      `SELECT holder_id FROM file_holds WHERE file_id = $1 LIMIT 1`,
      [id],
    );
    if (held.rowCount) throw fileInUse(id, held.rows[0]!.holder_id);
    try {
      await client.query(`DELETE FROM files WHERE id = $1`, [id]);
    } catch (err) {
      // the hold's foreign key (RESTRICT): a hold that slipped past the check above still wins
      if ((err as { code?: string }).code === '23503') throw fileInUse(id);
      throw err;
    }
  });
  return { id, object: 'file', deleted: true };
}

function fileInUse(id: string, holderId?: string): RequestError {
  const by = holderId ? `batch ${holderId}` : 'a batch';
  return new RequestError(
    409,
    'file_in_use',
    `File '${id}' is in use by ${by}; delete it after the batch has finished or been cancelled.`,
    // the openai SDK retries 409s unless told not to: waiting a second will not free the file
    { param: 'file_id', headers: { 'x-should-retry': 'false' } },
  );
}

/** Runs `work` in one transaction on one connection: committed if it returns, rolled back if it throws. */
export async function inTransaction<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await db().pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch((e: Error) => {
      broken = e;
    });
    throw err;
  } finally {
    // a connection whose ROLLBACK failed is in an unknown state: the pool drops it
    client.release(broken);
  }
}
