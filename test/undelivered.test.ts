// biome-ignore-all lint/suspicious/noExplicitAny: wire JSON, read field by field
// An answer the caller never receives is not charged (issue 11, item 1). The money of a text
// request moves before its answer is written; if anything fails after that (storing a Responses
// response, the caller leaving while the answer is settled or written) the charge is refunded in
// the same request, on both money paths (a share of a credit lease, and one exact hold per request
// for keys with a daily USD cap). Failures are real: the database refuses the write (a trigger),
// or the balance row is locked while the caller hangs up.
import assert from 'node:assert/strict';
import http from 'node:http';
import type pg from 'pg';
import { useChatBench } from './support/chatEnv.js';
import { db } from '../activities/db.js';
import { flushRequestRecords } from '../activities/metering/records.js';
import { parseAmount } from '../activities/core/money.js';
import { waitFor } from './support/wait.js';

const MODEL = 'openai/gpt-4o-mini';

describe('an answer the caller never receives is not charged', function () {
  this.timeout(60_000);
  const bench = useChatBench();

  /** Make PostgreSQL refuse every new stored response while `work` runs. */
  async function whileResponsesCannotBeStored<T>(work: () => Promise<T>): Promise<T> {
    await db().pool.query(`
      CREATE OR REPLACE FUNCTION test_refuse_store() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'test: stored responses are refused'; END $$;
      DROP TRIGGER IF EXISTS test_refuse_store ON stored_responses;
      CREATE TRIGGER test_refuse_store BEFORE INSERT ON stored_responses
        FOR EACH ROW EXECUTE FUNCTION test_refuse_store();`);
    try {
      return await work();
    } finally {
      await db().pool.query('DROP TRIGGER IF EXISTS test_refuse_store ON stored_responses');
    }
  }

  async function entries(accountId: string) {
    const { rows } = await db().pool.query(
      `SELECT kind, amount::text AS amount, idempotency_key FROM ledger_entries WHERE account_id = $1 ORDER BY id`,
      [accountId],
    );
    return rows as Array<{ kind: string; amount: string; idempotency_key: string }>;
  }

  async function record(requestId: string) {
    await flushRequestRecords();
    const { rows } = await db().pool.query(`SELECT status, cost, error_code FROM request_records WHERE id = $1`, [
      requestId,
    ]);
    return rows[0];
  }

  const funded = parseAmount('1', 'USD');

  for (const [path, restrictions] of [
    ['a credit lease', {}],
    ['an exact hold (a key with a daily USD cap)', { dailyUsdLimit: parseAmount('5', 'USD') }],
  ] as const) {
    it(`a Responses answer that cannot be stored: a clean 500, nothing charged (${path})`, async () => {
      const b = bench();
      const { key, accountId, keyId } = await b.account('1', restrictions);
      const res = await whileResponsesCannotBeStored(() =>
        b.post(key, { model: MODEL, input: 'Say hello' }, {}, '/api/v1/responses'),
      );
      assert.equal(res.status, 500);
      const body: any = await res.json();
      assert.equal(body.error.code, 'internal_error');
      assert.doesNotMatch(body.error.message, /stored responses are refused|stored_responses|at /);
      assert.equal(b.openai.requests.length, 1, 'the upstream answered');

      const bal = await b.usd(accountId);
      assert.deepEqual(bal, { amount: funded, held: 0n, available: funded }, 'nothing charged, nothing held');
      const moved = (await entries(accountId)).filter((e) => e.kind !== 'credit');
      // a leased charge still waiting for its batch is dropped before it is written; a written one is refunded
      assert.equal(
        moved.reduce((sum, e) => sum + BigInt(e.amount), 0n),
        0n,
        JSON.stringify(moved),
      );
      if (moved.length) assert.deepEqual(moved.map((e) => e.kind).sort(), ['charge', 'refund']);
      const r = await record(res.headers.get('x-request-id')!);
      assert.equal(r.status, 'failed');
      assert.equal(r.cost, null);
      if (restrictions.dailyUsdLimit) {
        const { rows } = await db().pool.query(`SELECT usd_spent::text FROM key_daily_usage WHERE key_id = $1`, [
          keyId,
        ]);
        assert.equal(rows[0]?.usd_spent ?? '0', '0', "the key's daily spend is given back too");
      }
    });
  }

  it('a caller gone while its answer was being settled is refunded (exact hold)', async () => {
    const b = bench();
    const { key, accountId } = await b.account('1', { dailyUsdLimit: parseAmount('5', 'USD') });
    // The upstream answers after a moment; meanwhile the test locks the account's balance row, so
    // the settlement waits on it, and the caller hangs up while it waits.
    b.openai.script({ delayMs: 300 });
    const url = new URL(`${b.base}/api/v1/chat/completions`);
    const req = http.request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    });
    let answered = false;
    req.on('response', (res) => {
      answered = true;
      res.resume();
    });
    req.on('error', () => undefined);
    req.end(JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] }));

    let locker: pg.PoolClient | undefined;
    try {
      await waitFor(() => b.openai.requests.length > 0, 5_000, 'the upstream call');
      assert.equal(b.openai.requests.length, 1, 'the upstream was called');
      locker = await db().pool.connect();
      await locker.query('BEGIN');
      await locker.query(`SELECT amount FROM balances WHERE account_id = $1 FOR UPDATE`, [accountId]);
      // the upstream's answer arrives at ~300 ms and the settlement blocks on the lock
      await new Promise((r) => setTimeout(r, 600));
      req.destroy();
      await new Promise((r) => setTimeout(r, 200));
      await locker.query('COMMIT');
    } finally {
      locker?.release();
    }
    assert.equal(answered, false, 'the caller never got an answer');
    await waitFor(async () => (await entries(accountId)).some((e) => e.kind === 'refund'), 5_000, 'the refund');
    const moved = (await entries(accountId)).filter((e) => e.kind !== 'credit');
    assert.deepEqual(moved.map((e) => e.kind).sort(), ['charge', 'refund'], JSON.stringify(moved));
    assert.deepEqual(await b.usd(accountId), { amount: funded, held: 0n, available: funded });
  });

  it('a delivered answer stays charged', async () => {
    const b = bench();
    const { key, accountId } = await b.account('1', { dailyUsdLimit: parseAmount('5', 'USD') });
    const res = await b.post(key, { model: MODEL, messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(res.status, 200);
    const j: any = await res.json();
    await new Promise((r) => setTimeout(r, 100)); // a fixed time on purpose: no refund may follow within it
    const moved = (await entries(accountId)).filter((e) => e.kind !== 'credit');
    assert.deepEqual(
      moved.map((e) => e.kind),
      ['charge'],
    );
    assert.equal(funded - (await b.usd(accountId)).amount, BigInt(Math.round(j.cost * 1e9)));
  });
});
