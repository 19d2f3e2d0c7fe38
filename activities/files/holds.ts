// A batch pins its input file: while a hold exists the file cannot be deleted (409 `file_in_use`),
// and from the first hold on the file no longer counts against its key's staged quota (the spec's
// "until a batch starts"), even after the batch ends and lets go.
//
// Race-safety: holdFile and deleteFile both lock the file's row first, so one waits for the other
// and then sees its outcome; behind that, the hold's foreign key (ON DELETE RESTRICT) makes the
// database itself refuse to delete a held file.
import { RequestError } from '../core/errors.js';
import { FILE_ID, fileNotFound, inTransaction, type StoredFile, toStoredFile } from './files.js';

/**
 * Pins the account's `batch` file for `holderId` (a batch id). Idempotent: holding twice for the same
 * holder is one hold. Throws a RequestError: 404 `not_found` if the file does not exist or is another
 * account's, 400 `invalid_parameter_value` if it is not a batch input (purpose `batch`); both with
 * param `input_file_id`.
 */
export async function holdFile(fileId: string, accountId: string, holderId: string): Promise<StoredFile> {
  if (!FILE_ID.test(fileId)) throw fileNotFound(fileId, 'input_file_id');
  return inTransaction(async (client) => {
    const r = await client.query(
      `SELECT id, purpose, filename, content_type, bytes, created_at FROM files
       WHERE id = $1 AND account_id = $2 FOR UPDATE`,
      [fileId, accountId],
    );
    if (!r.rows[0]) throw fileNotFound(fileId, 'input_file_id');
    const file = toStoredFile(r.rows[0]);
    if (file.purpose !== 'batch')
      throw new RequestError(
        400,
        'invalid_parameter_value',
        `File '${fileId}' has purpose '${file.purpose}'; a batch's input file must be uploaded with purpose 'batch'.`,
        { param: 'input_file_id' },
      );
    await client.query(
      `INSERT INTO file_holds (file_id, holder_id) VALUES ($1, $2) ON CONFLICT (file_id, holder_id) DO NOTHING`,
      [fileId, holderId],
    );
    await client.query(`UPDATE files SET staged = false WHERE id = $1 AND staged`, [fileId]);
    return file;
  });
}

/** Lets go of every file `holderId` holds (a batch that has ended). Idempotent; returns how many holds ended. */
export async function releaseFileHolds(holderId: string): Promise<number> {
  return inTransaction(async (client) => {
    const r = await client.query(`DELETE FROM file_holds WHERE holder_id = $1`, [holderId]);
    return r.rowCount ?? 0;
  });
}
