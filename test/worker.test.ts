import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { useTemporal } from './support/temporal.js';
import { config } from '../activities/config.js';
import { createAccount } from '../activities/accounts/accounts.js';
import { balances, credit } from '../activities/ledger/ledger.js';
import { reserve } from '../activities/ledger/holds.js';
import { parseAmount } from '../activities/core/money.js';
import { ensureSchedules, SCHEDULES } from '../bin/worker.js';
import { assertBooksBalance } from './support/books.js';

describe('worker (real Temporal dev server)', function () {
  this.timeout(120_000);

  it('runs the hold sweeper workflow, which releases expired holds through its activity', async () => {
    const t = await useTemporal();
    const a = await createAccount('sweeper');
    await credit({
      accountId: a.id,
      currency: 'USD',
      amount: parseAmount('1', 'USD'),
      reason: 'test',
      idempotencyKey: `sweep:${a.id}`,
    });
    await reserve({
      accountId: a.id,
      usd: parseAmount('0.6', 'USD'),
      idempotencyKey: `sweep-hold:${a.id}`,
      ttlSeconds: 0,
    });
    assert.equal((await balances(a.id))!.USD.held, parseAmount('0.6', 'USD'));
    const released = await t.client.workflow.execute('sweepExpiredHolds', {
      taskQueue: config.taskQueue,
      workflowId: `sweep-test-${randomUUID()}`,
      args: [],
    });
    assert.ok((released as number) >= 1);
    assert.equal((await balances(a.id))!.USD.held, 0n);
    await assertBooksBalance(a.id);
  });

  it('creates each schedule once, however often start-up runs', async () => {
    const t = await useTemporal();
    await ensureSchedules(t.address);
    await ensureSchedules(t.address);
    for (const s of SCHEDULES) {
      const d = await t.client.schedule.getHandle(s.scheduleId).describe();
      assert.equal(d.action.type, 'startWorkflow');
      assert.equal((d.action as { workflowType: string }).workflowType, s.workflow.name);
    }
  });
});
