// biome-ignore-all lint/suspicious/noExplicitAny: wire JSON, read field by field
// Batches when the worker running them dies: the batch's workflows and row activities run only on
// worker processes of this test's own (test/support/workerProcess.ts), one of which is killed with
// SIGKILL in the middle of a batch (no shutdown, no chance to report, rows halfway through their
// provider calls). Another worker finishes the batch: every row answered once in the output,
// charged exactly once, the books balanced, and the provider never asked again for a row whose
// answer had been stored.
import assert from 'node:assert/strict';
import { config } from '../activities/config.js';
import { db } from '../activities/db.js';
import { type ChatBench, startChatBench } from './support/chatEnv.js';
import { useTemporal } from './support/temporal.js';
import { onOwnWorkers } from './support/ownWorkers.js';
import { assertBooksBalance, sweepDeadLeases } from './support/books.js';
import { until } from './support/wait.js';
import { MockActivityEnvironment } from '@temporalio/testing';
import { finishBatch, runBatchRows } from '../activities/batches/run.js';
import { storedCaller, successWrite } from '../activities/batches/store.js';
import { writeWithoutCharge } from '../activities/ledger/leaseWrites.js';
import { reserve, settle } from '../activities/ledger/holds.js';
import { resolveKey } from '../activities/accounts/keys.js';

const MODEL = 'openai/gpt-4o-mini';

describe('batches when their worker is killed', function () {
  this.timeout(240_000);
  let b: ChatBench;
  // the batch settings tests change, put back after each (only these: the rest is the harness's)
  const saved = {
    batchConcurrency: config.batchConcurrency,
    batchWindowSeconds: config.batchWindowSeconds,
    batchRowAttempts: config.batchRowAttempts,
  };

  before(async () => {
    await useTemporal();
    b = await startChatBench();
  });
  after(() => b.close());
  afterEach(async () => {
    Object.assign(config, saved);
    b.openai.reset();
    await assertBooksBalance();
  });

  // Rows pay from the worker's credit lease where the account can afford one, else from holds of their own
  // (SWITCHYARD_CREDIT_LEASES=0 forces those here): both must survive the kill.
  for (const [paidFrom, env] of [
    ['a credit lease', {}],
    ['holds of their own', { SWITCHYARD_CREDIT_LEASES: '0' }],
  ] as const)
    it(`SIGKILL mid-batch, another worker finishes it: every row charged exactly once, none asked again once answered (rows paid from ${paidFrom})`, async () => {
      await onOwnWorkers('batch-kill', async (startWorker) => {
        const first = await startWorker(env);
        const { key, accountId } = await b.account('5');
        const N = 40;
        // when the upstream was asked for each row (by the row's text), and how each ask ended
        const asked = new Map<string, number[]>();
        const reply = (req: any) => {
          const said = String(req.body.messages.at(-1).content);
          asked.set(said, [...(asked.get(said) ?? []), Date.now()]);
          return { delayMs: 300 };
        };
        b.openai.script(...Array.from({ length: N * 3 }, () => reply));
        config.batchConcurrency = 8;
        const res = await b.post(
          key,
          {
            endpoint: '/v1/chat/completions',
            model: MODEL,
            requests: Array.from({ length: N }, (_, i) => ({
              custom_id: `k${i}`,
              body: { messages: [{ role: 'user', content: `row ${i}` }], max_tokens: 20 },
            })),
          },
          {},
          '/api/beta/batches',
        );
        assert.equal(res.status, 202, await res.clone().text());
        const { id } = (await res.json()) as any;
        const get = async () =>
          (await (
            await fetch(`${b.base}/api/beta/batches/${id}`, { headers: { authorization: `Bearer ${key}` } })
          ).json()) as any;
        await until(get, (x) => x.request_counts.completed >= 10, 60_000, 'ten rows to finish');
        await first.kill();
        const midway = (await get()).request_counts.completed;
        assert.ok(midway < N, 'killed before the end');

        await startWorker(env);
        // Any ask before this moment came from the first worker: the second only polls once ready
        // (a timestamp taken before the kill would miss asks made while the signal was landing).
        const secondUpAt = Date.now();
        const done = await until(
          get,
          (x) => x.status === 'completed',
          150_000,
          'the batch to complete on the second worker',
        );
        assert.deepEqual(done.request_counts, { total: N, completed: N, failed: 0 });
        assert.deepEqual(
          done.results.map((r: any) => r.custom_id),
          Array.from({ length: N }, (_, i) => `k${i}`),
        );

        // every row charged exactly once, at the cost its line shows; the batch's cost is their sum
        const { rows: charges } = await db().pool.query(
          `SELECT request_id, amount FROM ledger_entries WHERE account_id = $1 AND kind = 'charge' ORDER BY request_id`,
          [accountId],
        );
        assert.equal(charges.length, N, 'one charge per row');
        const { rows: paid } = await db().pool.query(
          `SELECT DISTINCT split_part(h.idempotency_key, ':', 1) AS kind FROM ledger_entries e
         JOIN balance_holds h ON h.id = e.hold_id WHERE e.account_id = $1 AND e.kind = 'charge'`,
          [accountId],
        );
        assert.deepEqual(
          paid.map((p) => p.kind),
          [paidFrom === 'a credit lease' ? 'lease' : 'hold'],
        );
        assert.equal(new Set(charges.map((c) => c.request_id)).size, N);
        let total = 0n;
        for (const [i, line] of done.results.entries()) {
          const charge = charges.find((c) => c.request_id === `${id}:${i}`);
          assert.ok(charge, `row ${i} charged`);
          assert.equal(-BigInt(charge.amount), BigInt(Math.round(line.response.body.cost * 1e9)));
          total += -BigInt(charge.amount);
        }
        assert.equal(BigInt(Math.round(done.cost * 1e9)), total);
        await assertBooksBalance(accountId);
        await sweepDeadLeases(accountId);
        const { rows: bal } = await db().pool.query(
          `SELECT amount, held FROM balances WHERE account_id = $1 AND currency = 'USD'`,
          [accountId],
        );
        assert.equal(bal[0].held, '0', 'no reservation left behind once the dead lease expired');
        assert.equal(BigInt(bal[0].amount), 5_000_000_000n - total);

        // the provider was never asked again for a row after its answer was stored; a row asked twice
        // was in flight on the killed worker (its first ask began before the kill)
        const { rows: finished } = await db().pool.query(
          `SELECT custom_id, finished_at FROM batch_rows WHERE batch_id = $1`,
          [id],
        );
        let retried = 0;
        for (const r of finished) {
          const times = asked.get(`row ${r.custom_id.slice(1)}`) ?? [];
          assert.ok(times.length >= 1, `${r.custom_id} was asked`);
          for (const t of times)
            assert.ok(t <= r.finished_at.getTime(), `${r.custom_id} asked after its answer was stored`);
          if (times.length > 1) {
            retried++;
            assert.ok(times[0] < secondUpAt, `${r.custom_id} asked twice, and not because of the kill`);
          }
        }
        assert.ok(retried <= 8, `${retried} rows asked twice: at most the 8 in flight when the worker died`);
      });
    });

  /** A running batch of `n` rows of this test's account, made directly in its tables. */
  async function runningBatch(prefix: string, key: string, keyId: string, accountId: string, n: number) {
    const resolved = await resolveKey(key);
    assert.ok(resolved.caller);
    const id = `${prefix}_${Date.now()}`;
    await db().pool.query(
      `INSERT INTO batches (id, kind, account_id, api_key_id, endpoint, model, status, payer, total, in_progress_at, expires_at)
       VALUES ($1, 'inline', $2, $3, '/v1/chat/completions', $4, 'in_progress', $5, $6, now(), now() + interval '1 hour')`,
      [id, accountId, keyId, MODEL, storedCaller(resolved.caller), n],
    );
    await db().pool.query(
      `INSERT INTO batch_rows (batch_id, idx, custom_id, body)
       SELECT $1, g, 'r' || g, jsonb_build_object('messages', jsonb_build_array(jsonb_build_object('role', 'user',
         'content', 'race ' || g)), 'max_tokens', 20) FROM generate_series(0, $2 - 1) g`,
      [id, n],
    );
    return id;
  }

  it('three attempts of the same rows at once (a worker presumed dead still running): each row stored, counted and charged once', async () => {
    const { key, keyId, accountId } = await b.account('5');
    const N = 48;
    const id = await runningBatch('batch_race', key, keyId, accountId, N);
    // answers at uneven speeds, so the attempts' rows finish interleaved
    b.openai.script(...Array.from({ length: N * 3 }, (_, i) => ({ delayMs: (i * 7) % 40 })));
    const attempt = () =>
      new MockActivityEnvironment().run(runBatchRows, id, 0, N, 6, Date.now() + 60_000) as Promise<string>;
    assert.deepEqual(await Promise.all([attempt(), attempt(), attempt()]), ['done', 'done', 'done']);
    assert.equal(
      await (new MockActivityEnvironment().run(finishBatch, id, {
        cancelled: false,
        expired: false,
      }) as Promise<string>),
      'completed',
    );

    const { rows: batch } = await db().pool.query(`SELECT completed, failed, cost::text FROM batches WHERE id = $1`, [
      id,
    ]);
    assert.equal(batch[0].completed, N, 'each row counted once');
    assert.equal(batch[0].failed, 0);
    const { rows: stored } = await db().pool.query(
      `SELECT idx, status, cost::text FROM batch_rows WHERE batch_id = $1 ORDER BY idx`,
      [id],
    );
    assert.ok(stored.every((r) => r.status === 'succeeded'));
    const { rows: charges } = await db().pool.query(
      `SELECT request_id, amount FROM ledger_entries WHERE account_id = $1 AND kind = 'charge'`,
      [accountId],
    );
    assert.equal(charges.length, N, 'one charge per row');
    let total = 0n;
    for (const r of stored) {
      const c = charges.filter((x) => x.request_id === `${id}:${r.idx}`);
      assert.equal(c.length, 1, `row ${r.idx} charged once`);
      assert.equal(-BigInt(c[0].amount), BigInt(r.cost), `row ${r.idx} charged its stored cost`);
      total += BigInt(r.cost);
    }
    assert.equal(BigInt(batch[0].cost), total, "the batch's cost is the sum of its rows'");
    const usd = await b.usd(accountId);
    assert.equal(usd.held, 0n, 'every hold settled or released, every lease given back');
    assert.equal(usd.amount, 5_000_000_000n - total);
    await assertBooksBalance(accountId);
  });

  it('a batch that ends with rows’ holds still open: a stored answer is charged once at its cost, any other hold given back', async () => {
    const { key, keyId, accountId } = await b.account('5');
    const id = await runningBatch('batch_open', key, keyId, accountId, 3);
    // row 0: answered and stored, and its activity ran out of attempts before the charge; row 1:
    // its last attempt died holding; row 2: settled as usual
    const hold = (idx: number) =>
      reserve({ accountId, usd: 2_000_000n, idempotencyKey: `hold:${id}:${idx}`, requestId: `${id}:${idx}` });
    const [h0, h1, h2] = await Promise.all([hold(0), hold(1), hold(2)]);
    const stored = (idx: number, holdId: string, cost: bigint) =>
      writeWithoutCharge(
        successWrite(id, idx, { result: { ok: idx }, inputTokens: 5, outputTokens: 7, cost, providerId: 'openai' })(
          holdId,
        ),
      );
    assert.ok(await stored(0, h0.id, 700_000n));
    assert.ok(await stored(2, h2.id, 300_000n));
    await settle({ holdId: h2.id, usd: 300_000n });
    await db().pool.query(`UPDATE batch_rows SET status = 'failed' WHERE batch_id = $1 AND idx = 1`, [id]);

    const finish = () =>
      new MockActivityEnvironment().run(finishBatch, id, { cancelled: false, expired: false }) as Promise<string>;
    assert.equal(await finish(), 'completed');
    assert.equal(await finish(), 'completed', 'a retried finish changes nothing');
    const { rows: charges } = await db().pool.query(
      `SELECT request_id, amount FROM ledger_entries WHERE account_id = $1 AND kind = 'charge' ORDER BY request_id`,
      [accountId],
    );
    assert.deepEqual(
      charges.map((c) => [c.request_id, -BigInt(c.amount)]),
      [
        [`${id}:0`, 700_000n],
        [`${id}:2`, 300_000n],
      ],
    );
    const { rows: holds } = await db().pool.query(`SELECT id, status FROM balance_holds WHERE id = ANY($1::uuid[])`, [
      [h0.id, h1.id, h2.id],
    ]);
    assert.equal(holds.find((h) => h.id === h0.id).status, 'settled');
    assert.equal(holds.find((h) => h.id === h1.id).status, 'released');
    const usd = await b.usd(accountId);
    assert.equal(usd.held, 0n);
    assert.equal(usd.amount, 5_000_000_000n - 1_000_000n);
    await assertBooksBalance(accountId);
  });
});
