import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { useTemporal } from './support/temporal.js';
import { newAccount } from './support/api.js';
import { config } from '../activities/config.js';
import { db } from '../activities/db.js';
import { saveResponse } from '../activities/surfaces/responsesStore.js';
import type { ResponseObject } from '../activities/surfaces/responsesResponse.js';

describe('stored responses past their retention (deletion by schedule)', function () {
  this.timeout(120_000);

  it('the sweeper workflow deletes expired stored responses of any account, and only those', async () => {
    const t = await useTemporal();
    const { accountId } = await newAccount('0');
    const ids = Array.from({ length: 3 }, () => `resp_${randomUUID().replace(/-/g, '')}`);
    for (const id of ids)
      await saveResponse(accountId, { id, status: 'completed' } as unknown as ResponseObject, { conversation: [] });
    // two expire; the account never comes back, so nothing deletes them on the way
    await db().pool.query(`UPDATE stored_responses SET expires_at = now() - interval '1 second' WHERE id = ANY($1)`, [
      ids.slice(0, 2),
    ]);
    const deleted = await t.client.workflow.execute('sweepStoredResponses', {
      taskQueue: config.taskQueue,
      workflowId: `responses-${randomUUID()}`,
      args: [],
    });
    assert.ok((deleted as number) >= 2);
    const left = await db().pool.query(`SELECT id FROM stored_responses WHERE id = ANY($1)`, [ids]);
    assert.deepEqual(
      left.rows.map((r) => r.id),
      [ids[2]],
    );
  });
});
