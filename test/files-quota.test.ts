// The staged quota and batch holds under races: uploads arriving together at the edge of the file
// count and of the byte limit, a delete racing a hold, and what a worker reads back (lines across
// chunk boundaries).
import assert from 'node:assert/strict';
import { config } from '../activities/config.js';
import { RequestError } from '../activities/core/errors.js';
import { db } from '../activities/db.js';
import { deleteFile, getFile, readFileLines } from '../activities/files/files.js';
import { holdFile, releaseFileHolds } from '../activities/files/holds.js';
import { CHUNK_BYTES, storeFile } from '../activities/files/store.js';
import { newAccount, startApi } from './support/api.js';

/** n bodies that each send their bytes, then wait until all n have: every upload is in flight at once. */
function barrierBodies(n: number, bytes: number) {
  let arrived = 0;
  let release!: () => void;
  const all = new Promise<void>((r) => {
    release = r;
  });
  return Array.from({ length: n }, () =>
    (async function* () {
      yield Buffer.alloc(bytes, 'x');
      if (++arrived === n) release();
      await all;
    })(),
  );
}

async function staged(keyId: string): Promise<{ files: number; bytes: number }> {
  const r = await db().pool.query(
    `SELECT count(*)::int AS files, coalesce(sum(bytes), 0)::int AS bytes FROM files WHERE key_id = $1 AND staged`,
    [keyId],
  );
  return r.rows[0];
}

const settle = <T>(ps: Promise<T>[]) => Promise.allSettled(ps);
const quotaRefusals = (rs: PromiseSettledResult<unknown>[]) =>
  rs.filter(
    (r) =>
      r.status === 'rejected' &&
      r.reason instanceof RequestError &&
      r.reason.status === 429 &&
      r.reason.code === 'batch_file_storage_quota_exceeded',
  ).length;

describe('files: staged quota and holds', function () {
  this.timeout(120_000);
  const saved = { ...config };
  afterEach(() => {
    config.stagedFilesMaxCount = saved.stagedFilesMaxCount;
    config.stagedFilesMaxBytes = saved.stagedFilesMaxBytes;
    config.fileUploadsMaxConcurrent = saved.fileUploadsMaxConcurrent;
  });

  it('uploads racing for the last file slots: exactly as many as fit are kept, the rest get 429', async () => {
    config.stagedFilesMaxCount = 4;
    for (let round = 0; round < 5; round++) {
      const { accountId, keyId } = await newAccount('0');
      for (let i = 0; i < 2; i++)
        await storeFile({ accountId, keyId, purpose: 'batch', filename: 'a', body: [Buffer.from('{}')] });
      // two slots left, six uploads all past the early check and in flight together
      const results = await settle(
        barrierBodies(6, 10).map((body) => storeFile({ accountId, keyId, purpose: 'batch', filename: 'b', body })),
      );
      assert.equal(results.filter((r) => r.status === 'fulfilled').length, 2, `round ${round}`);
      assert.equal(quotaRefusals(results), 4);
      assert.deepEqual(await staged(keyId), { files: 4, bytes: 2 * 2 + 2 * 10 });
      // once full, refused before any byte is read
      let pulled = false;
      await assert.rejects(
        storeFile({
          accountId,
          keyId,
          purpose: 'batch',
          filename: 'c',
          body: (async function* () {
            pulled = true;
            yield Buffer.from('{}');
          })(),
        }),
        /already has 4 batch files staged/,
      );
      assert.equal(pulled, false);
    }
  });

  it('uploads racing for the last bytes: the sum never passes the limit', async () => {
    config.stagedFilesMaxBytes = 1000;
    for (let round = 0; round < 5; round++) {
      const { accountId, keyId } = await newAccount('0');
      await storeFile({ accountId, keyId, purpose: 'batch', filename: 'a', body: [Buffer.alloc(400)] });
      const results = await settle(
        barrierBodies(3, 300).map((body) => storeFile({ accountId, keyId, purpose: 'batch', filename: 'b', body })),
      );
      assert.equal(results.filter((r) => r.status === 'fulfilled').length, 2, `round ${round}`);
      assert.equal(quotaRefusals(results), 1);
      assert.deepEqual(await staged(keyId), { files: 3, bytes: 1000 });
    }
  });

  it('stops an upload once it passes the byte quota, without reading the rest', async () => {
    config.stagedFilesMaxBytes = 3 * CHUNK_BYTES;
    const { accountId, keyId } = await newAccount('0');
    let sent = 0;
    const endless = (async function* () {
      for (;;) {
        sent += 64 * 1024;
        yield Buffer.alloc(64 * 1024, 'y');
      }
    })();
    await assert.rejects(
      storeFile({ accountId, keyId, purpose: 'batch', filename: 'big', body: endless }),
      (e: RequestError) => e.status === 429 && /past 786432 bytes/.test(e.message),
    );
    assert.ok(sent <= 3 * CHUNK_BYTES + 64 * 1024, `read ${sent} bytes`);
    assert.deepEqual(await staged(keyId), { files: 0, bytes: 0 });
    assert.equal((await db().pool.query(`SELECT 1 FROM files WHERE account_id = $1`, [accountId])).rowCount, 0);
  });

  it('a held file stops counting as staged; outputs never count; quotas are per key', async () => {
    config.stagedFilesMaxCount = 2;
    const { accountId, keyId } = await newAccount('0');
    const a = await storeFile({ accountId, keyId, purpose: 'batch', filename: 'a', body: [Buffer.from('1')] });
    await storeFile({ accountId, keyId, purpose: 'batch', filename: 'b', body: [Buffer.from('2')] });
    const third = () => storeFile({ accountId, keyId, purpose: 'batch', filename: 'c', body: [Buffer.from('3')] });
    await assert.rejects(third(), /already has 2/);
    // a batch output file is written whatever the quota, and is not staged
    const out = await storeFile({ accountId, keyId, purpose: 'batch_output', filename: 'o', body: [Buffer.from('o')] });
    assert.equal(out.purpose, 'batch_output');
    await holdFile(a.id, accountId, 'batch_q1');
    await third();
    // released, the file stays "started": it does not count again
    await releaseFileHolds('batch_q1');
    assert.deepEqual(await staged(keyId), { files: 2, bytes: 2 });
    // another key of the same account has its own quota
    const { createKey } = await import('../activities/accounts/keys.js');
    const other = await createKey(accountId, {});
    await storeFile({ accountId, keyId: other.record.id, purpose: 'batch', filename: 'd', body: [Buffer.from('4')] });
  });

  it('the HTTP upload answers 429 batch_file_storage_quota_exceeded, telling the SDK not to retry', async () => {
    config.stagedFilesMaxCount = 1;
    config.fileUploadsMaxConcurrent = 8;
    const api = await startApi();
    try {
      const { key } = await newAccount('0');
      const send = () => {
        const form = new FormData();
        form.append('purpose', 'batch');
        form.append('file', new Blob([Buffer.alloc(50_000, 'z')]), 'q.jsonl');
        return fetch(`${api.base}/v1/files`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}` },
          body: form,
        });
      };
      const answers = await Promise.all(Array.from({ length: 4 }, send));
      const statuses = answers.map((r) => r.status).sort();
      assert.deepEqual(statuses, [200, 429, 429, 429]);
      const refused = answers.find((r) => r.status === 429)!;
      assert.equal(refused.headers.get('x-should-retry'), 'false');
      const err = ((await refused.json()) as any).error;
      assert.equal(err.code, 'batch_file_storage_quota_exceeded');
      assert.equal(err.type, 'rate_limit_error');
    } finally {
      await api.close();
    }
  });

  it('a delete racing a hold: never both; a held file is never deleted', async () => {
    const { accountId, keyId } = await newAccount('0');
    let held = 0;
    let deleted = 0;
    for (let i = 0; i < 30; i++) {
      const f = await storeFile({ accountId, keyId, purpose: 'batch', filename: 'r', body: [Buffer.from('{}\n')] });
      const [hold, del] = await settle<unknown>([
        holdFile(f.id, accountId, `batch_race_${i}`),
        deleteFile(f.id, accountId),
      ]);
      const exists = (await db().pool.query(`SELECT 1 FROM files WHERE id = $1`, [f.id])).rowCount === 1;
      if (hold.status === 'fulfilled') {
        held++;
        assert.equal(del.status, 'rejected');
        assert.equal((del as PromiseRejectedResult).reason.code, 'file_in_use');
        assert.ok(exists);
      } else {
        deleted++;
        assert.equal(del.status, 'fulfilled');
        assert.equal((hold as PromiseRejectedResult).reason.status, 404);
        assert.ok(!exists);
        const holds = await db().pool.query(`SELECT 1 FROM file_holds WHERE holder_id = $1`, [`batch_race_${i}`]);
        assert.equal(holds.rowCount, 0);
      }
    }
    assert.equal(held + deleted, 30);
  });

  it('the database itself refuses to delete a held file', async () => {
    const { accountId, keyId } = await newAccount('0');
    const f = await storeFile({ accountId, keyId, purpose: 'batch', filename: 'h', body: [Buffer.from('{}')] });
    await holdFile(f.id, accountId, 'batch_fk');
    await holdFile(f.id, accountId, 'batch_fk'); // idempotent
    await assert.rejects(db().pool.query(`DELETE FROM files WHERE id = $1`, [f.id]), /foreign key/);
    assert.equal(await releaseFileHolds('batch_fk'), 1);
    assert.equal(await releaseFileHolds('batch_fk'), 0);
    await deleteFile(f.id, accountId);
  });

  it('holdFile refuses a missing file, another account’s, and one that is not a batch input', async () => {
    const mine = await newAccount('0');
    const theirs = await newAccount('0');
    const f = await storeFile({ ...mine, purpose: 'batch', filename: 'a', body: [Buffer.from('{}')] });
    const out = await storeFile({ ...mine, purpose: 'batch_output', filename: 'o', body: [Buffer.from('{}')] });
    const code = (status: number, code: string) => (e: RequestError) =>
      e.status === status && e.code === code && e.opts.param === 'input_file_id';
    await assert.rejects(holdFile(f.id, theirs.accountId, 'b1'), code(404, 'not_found'));
    await assert.rejects(holdFile('file_000000000000000000000000', mine.accountId, 'b1'), code(404, 'not_found'));
    await assert.rejects(holdFile('nonsense', mine.accountId, 'b1'), code(404, 'not_found'));
    await assert.rejects(holdFile(out.id, mine.accountId, 'b1'), code(400, 'invalid_parameter_value'));
    assert.equal((await db().pool.query(`SELECT 1 FROM file_holds WHERE holder_id = 'b1'`)).rowCount, 0);
    await assert.rejects(getFile(f.id, theirs.accountId), (e: RequestError) => e.status === 404);
  });

  it('readFileLines: lines split across chunks and inside multi-byte characters come back whole', async () => {
    const { accountId, keyId } = await newAccount('0');
    const lines = Array.from({ length: 40 }, (_, i) => `{"custom_id":"r${i}","text":"${'é✓'.repeat(i * 997)}"}`);
    const text = `${lines.join('\n')}\n`;
    // sent in odd-sized pieces, stored in 256 KiB chunks: boundaries fall inside characters
    const bytes = Buffer.from(text);
    const pieces = [];
    for (let i = 0; i < bytes.length; i += 7777) pieces.push(bytes.subarray(i, i + 7777));
    const f = await storeFile({ accountId, keyId, purpose: 'batch', filename: 'l', body: pieces });
    assert.ok(f.bytes > 2 * CHUNK_BYTES);
    const got = [];
    for await (const line of readFileLines(f.id, accountId)) got.push(line);
    assert.deepEqual(
      got.map((l) => l.text),
      lines,
    );
    assert.deepEqual(
      got.map((l) => l.number),
      lines.map((_, i) => i + 1),
    );
    // no trailing newline: the last line still counts
    const g = await storeFile({ accountId, keyId, purpose: 'batch', filename: 'm', body: [Buffer.from('a\n\nb')] });
    const short = [];
    for await (const line of readFileLines(g.id, accountId)) short.push(line.text);
    assert.deepEqual(short, ['a', '', 'b']);
  });
});
