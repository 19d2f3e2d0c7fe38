import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { useTemporal } from './support/temporal.js';
import { config } from '../activities/config.js';
import { db } from '../activities/db.js';
import { createUser } from '../activities/accounts/users.js';
import { createSession } from '../activities/accounts/sessions.js';
import { admitAttempt } from '../activities/accounts/throttle.js';

describe('stale sign-in records (deletion by schedule)', function () {
  this.timeout(120_000);

  it('the sweeper deletes sessions ended a day ago, old codes and old windows, and nothing live', async () => {
    const t = await useTemporal();
    const user = await createUser({ email: `swept-${randomUUID()}@example.test`, name: 'Swept', password: null });
    const live = await createSession(user.id, { method: 'password' });
    const expired = await createSession(user.id, { method: 'password' });
    const revoked = await createSession(user.id, { method: 'password' });
    const justRevoked = await createSession(user.id, { method: 'password' });
    await db().pool.query(`UPDATE sessions SET expires_at = now() - interval '2 days' WHERE id = $1`, [expired.id]);
    await db().pool.query(`UPDATE sessions SET revoked_at = now() - interval '2 days' WHERE id = $1`, [revoked.id]);
    await db().pool.query(`UPDATE sessions SET revoked_at = now() WHERE id = $1`, [justRevoked.id]);
    const subject = `sweep-${randomUUID()}`;
    await admitAttempt('test', subject, 5, 60);
    await db().pool.query(
      `INSERT INTO auth_throttle (scope, subject, window_start, hits)
       VALUES ('test', $1, now() - interval '3 days', 1)`,
      [subject],
    );
    await db().pool.query(
      `INSERT INTO email_codes (id, email, code_hash, expires_at, created_at)
       VALUES (gen_random_uuid(), $1, 'x', now() - interval '2 days', now() - interval '2 days'),
              (gen_random_uuid(), $1, 'y', now() + interval '5 minutes', now())`,
      [user.email],
    );
    const deleted = await t.client.workflow.execute('sweepSignInRecords', {
      taskQueue: config.taskQueue,
      workflowId: `sign-in-sweep-${randomUUID()}`,
      args: [],
    });
    assert.ok((deleted as number) >= 1);
    const sessions = await db().pool.query('SELECT id FROM sessions WHERE user_id = $1 ORDER BY created_at', [user.id]);
    assert.deepEqual(sessions.rows.map((r) => r.id).sort(), [live.id, justRevoked.id].sort());
    const codes = await db().pool.query('SELECT code_hash FROM email_codes WHERE email = $1', [user.email]);
    assert.deepEqual(
      codes.rows.map((r) => r.code_hash),
      ['y'],
    );
    const windows = await db().pool.query('SELECT count(*)::int AS n FROM auth_throttle WHERE subject = $1', [subject]);
    assert.equal(windows.rows[0].n, 1);
  });
});
