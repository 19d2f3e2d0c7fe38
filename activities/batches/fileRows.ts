// biome-ignore-all lint/suspicious/noExplicitAny: input lines are wire JSON, read field by field
// A file-backed batch's input and output files (activities/files/). While `validating`, the
// input file is read line by line (never whole) and every line checked: JSON, a unique non-empty
// `custom_id`, `method` POST, `url` equal to the batch's endpoint, one model for every row, and the
// row rules (rowRules.ts). Checked lines become rows as they are read; a file with any bad line
// fails the batch with `errors` naming the lines, and makes no rows. When the batch ends, its
// answered rows are written to an output file and its failed rows to an error file, both
// streamed from the rows a page at a time.
import { RequestError } from '../core/errors.js';
import { db } from '../db.js';
import { readFileLines } from '../files/files.js';
import { releaseFileHolds } from '../files/holds.js';
import { storeFile } from '../files/store.js';
import { rowKind } from './kinds.js';
import { batchModel, checkRow } from './rowRules.js';
import type { BatchRecord } from './store.js';
import { finishedRows } from './store.js';
import { outputLine } from './views.js';

/** Rows a file-backed batch may hold (OpenAI's limit for one batch). */
const MAX_ROWS = 50_000;
/** Lines named in a failed batch's `errors` (the first ones; the rest are like them). */
const MAX_ERRORS = 100;
const INSERT_ROWS = 500;

type LineError = { code: string; message: string; line: number | null; param: string | null };
type Fail = (line: number | null, message: string, param?: string | null, code?: string) => void;

/** One line as a JSON object, or undefined once `fail` has said why it is not one. */
function parseLine(number: number, text: string, fail: Fail): any {
  if (!text.trim()) {
    fail(number, `Line ${number} is empty: every line must be one request.`);
    return undefined;
  }
  let row: any;
  try {
    row = JSON.parse(text);
  } catch {
    fail(number, `Line ${number} is not valid JSON.`, null, 'invalid_json_line');
    return undefined;
  }
  if (!row || typeof row !== 'object' || Array.isArray(row)) {
    fail(number, `Line ${number} must be a JSON object.`);
    return undefined;
  }
  return row;
}

/** The file does not make a batch: no row is kept, the batch fails with the lines' errors. */
async function failBatch(batchId: string, errors: LineError[]): Promise<void> {
  await db().pool.query('DELETE FROM batch_rows WHERE batch_id = $1', [batchId]);
  await db().pool.query(
    `UPDATE batches SET status = 'failed', errors = $2, finished_at = now() WHERE id = $1 AND status IN ('validating', 'cancelling')`,
    [batchId, { data: errors }],
  );
  await releaseFileHolds(batchId);
}

/** Reads, checks and stores the input file's rows. Returns the number of rows, or -1 (failed). */
export async function readRowsFromFile(batch: BatchRecord, alive: () => void): Promise<number> {
  const kind = rowKind(batch.endpoint);
  const errors: LineError[] = [];
  const fail: Fail = (line, message, param = null, code = 'invalid_request') => {
    if (errors.length < MAX_ERRORS) errors.push({ code, message, line, param });
  };
  const ids = new Set<string>();
  let model: ReturnType<typeof batchModel> | undefined;
  let pending: Array<{ idx: number; custom_id: string; body: object }> = [];
  let count = 0;
  const flush = async () => {
    if (!pending.length) return;
    await db().pool.query(
      `INSERT INTO batch_rows (batch_id, idx, custom_id, body)
       SELECT $1, x.idx, x.custom_id, x.body FROM jsonb_to_recordset($2::jsonb) AS x(idx int, custom_id text, body jsonb)
       ON CONFLICT DO NOTHING`,
      [batch.id, JSON.stringify(pending)],
    );
    pending = [];
    alive();
  };
  try {
    for await (const { number, text } of readFileLines(batch.input_file_id!, batch.account_id)) {
      const row = parseLine(number, text, fail);
      if (!row) continue;
      if (typeof row.custom_id !== 'string' || !row.custom_id) {
        fail(number, `Line ${number}: 'custom_id' must be a non-empty string.`, 'custom_id');
        continue;
      }
      if (ids.has(row.custom_id)) {
        fail(
          number,
          `Line ${number}: custom_id '${row.custom_id}' is used by an earlier line.`,
          'custom_id',
          'duplicate_custom_id',
        );
        continue;
      }
      ids.add(row.custom_id);
      if (row.method !== 'POST') fail(number, `Line ${number}: 'method' must be "POST".`, 'method');
      else if (row.url !== batch.endpoint)
        fail(
          number,
          `Line ${number}: 'url' is ${JSON.stringify(row.url)}; every row of this batch must use ${batch.endpoint}.`,
          'url',
          'mismatched_url',
        );
      else if (!row.body || typeof row.body !== 'object' || typeof row.body.model !== 'string')
        fail(number, `Line ${number}: 'body' must be an object naming the 'model'.`, 'body.model');
      else {
        try {
          model ??= batchModel(row.body.model);
        } catch (err) {
          if (!(err instanceof RequestError)) throw err;
          fail(number, `Line ${number}: ${err.message}`, 'body.model', err.code);
          continue;
        }
        const checked = checkRow(kind, count, row.body, model);
        if ('problem' in checked) {
          const p = checked.problem;
          fail(number, `Line ${number}: ${p.message}`, p.param ? `body.${p.param}` : 'body', p.code);
        } else if (!errors.length) {
          pending.push({ idx: count, custom_id: row.custom_id, body: checked.body });
          if (pending.length >= INSERT_ROWS) await flush();
        }
      }
      if (++count > MAX_ROWS) {
        fail(
          null,
          `The file has more than ${MAX_ROWS} requests; split it into several batches.`,
          null,
          'too_many_requests',
        );
        break;
      }
    }
  } catch (err) {
    // the file vanished or holds a line too long to read: the batch cannot run
    fail(null, `The input file could not be read: ${(err as Error).message}`, null, 'invalid_input_file');
  }
  if (!count && !errors.length) fail(null, 'The input file holds no requests.', null, 'empty_file');
  if (errors.length) {
    await failBatch(batch.id, errors);
    return -1;
  }
  await flush();
  const { rows } = await db().pool.query(
    `UPDATE batches SET total = $2, model = $3, in_progress_at = now(),
       status = CASE WHEN status = 'validating' THEN 'in_progress' ELSE status END
     WHERE id = $1 RETURNING total`,
    [batch.id, count, model!.id],
  );
  return rows[0].total;
}

/** Lines of rows with `status`, in order, read a page at a time. */
async function* lines(batchId: string, status: 'succeeded' | 'failed'): AsyncGenerator<Buffer> {
  for (let from = 0; ; ) {
    const page = await finishedRows(batchId, from, 500, status);
    if (!page.length) return;
    yield Buffer.from(page.map((r) => `${JSON.stringify(outputLine(batchId, r))}\n`).join(''));
    from = page.at(-1)!.idx + 1;
  }
}

/**
 * Writes the output file (answered rows) and the error file (failed rows) of an ended batch,
 * each only once (a retried activity finds its id stored), and lets go of the input file.
 */
export async function finishBatchFiles(
  batch: BatchRecord,
  alive: () => void,
): Promise<{ outputFileId?: string; errorFileId?: string }> {
  const { rows } = await db().pool.query(
    `SELECT completed, failed, output_file_id, error_file_id FROM batches WHERE id = $1`,
    [batch.id],
  );
  const now = rows[0];
  const write = async (status: 'succeeded' | 'failed', column: 'output_file_id' | 'error_file_id', name: string) => {
    if (now[column]) return now[column] as string;
    const file = await storeFile({
      accountId: batch.account_id,
      keyId: null,
      purpose: 'batch_output',
      filename: `${batch.id}_${name}.jsonl`,
      body: lines(batch.id, status),
    });
    await db().pool.query(`UPDATE batches SET ${column} = $2 WHERE id = $1`, [batch.id, file.id]);
    alive();
    return file.id;
  };
  const outputFileId = now.completed > 0 ? await write('succeeded', 'output_file_id', 'output') : undefined;
  const errorFileId = now.failed > 0 ? await write('failed', 'error_file_id', 'error') : undefined;
  await releaseFileHolds(batch.id);
  return { outputFileId, errorFileId };
}
