import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { useTemporal } from './support/temporal.js';
import { startApi, newAccount } from './support/api.js';
import { config } from '../activities/config.js';
import { db } from '../activities/db.js';
import { signedUrl, storeHostedFile } from '../activities/media/hostedFiles.js';

describe('hosted files (signed URLs, deletion by schedule)', function () {
  this.timeout(120_000);
  let api: Awaited<ReturnType<typeof startApi>>;
  before(async () => {
    api = await startApi();
  });
  after(() => api.close());

  it('serves a file from its signed URL, and refuses a tampered or expired one', async () => {
    const { accountId } = await newAccount('0');
    const data = Buffer.from('ID3 not really an mp3');
    const file = await storeHostedFile({ accountId, contentType: 'audio/mpeg', data });
    const url = await signedUrl(file.id, api.base);
    assert.match(url, new RegExp(`^${api.base}/api/media/file_[0-9a-f]{24}\\?expires=\\d+&signature=`));
    const ok = await fetch(url);
    assert.equal(ok.status, 200);
    assert.equal(ok.headers.get('content-type'), 'audio/mpeg');
    assert.deepEqual(Buffer.from(await ok.arrayBuffer()), data);

    const u = new URL(url);
    const tampered = new URL(url);
    tampered.searchParams.set('expires', String(Number(u.searchParams.get('expires')) + 3600));
    const bad = await fetch(tampered);
    assert.equal(bad.status, 403);
    assert.equal(((await bad.json()) as { code: string }).code, 'invalid_signature');
    assert.equal((await fetch(`${api.base}/api/media/${file.id}`)).status, 403);

    // a URL signed for a moment already past
    const past = await signedUrl(file.id, api.base, new Date(Date.now() - 5000));
    const expired = await fetch(past);
    assert.equal(expired.status, 403);
    assert.equal(((await expired.json()) as { code: string }).code, 'url_expired');
  });

  it('the sweeper workflow deletes expired files, and their URLs then answer 404', async () => {
    const t = await useTemporal();
    const { accountId } = await newAccount('0');
    const old = await storeHostedFile({ accountId, contentType: 'video/mp4', data: Buffer.alloc(1000, 1) });
    const fresh = await storeHostedFile({ accountId, contentType: 'video/mp4', data: Buffer.alloc(10, 2) });
    const url = await signedUrl(old.id, api.base);
    await db().pool.query(`UPDATE hosted_files SET expires_at = now() - interval '1 second' WHERE id = $1`, [old.id]);
    const deleted = await t.client.workflow.execute('sweepHostedFiles', {
      taskQueue: config.taskQueue,
      workflowId: `files-${randomUUID()}`,
      args: [],
    });
    assert.ok((deleted as number) >= 1);
    const left = await db().pool.query(`SELECT id FROM hosted_files WHERE id = ANY($1)`, [[old.id, fresh.id]]);
    assert.deepEqual(
      left.rows.map((r) => r.id),
      [fresh.id],
    );
    assert.equal((await fetch(url)).status, 404);
  });
});
