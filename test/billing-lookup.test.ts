// GET /api/v1/billing/{requestId}: what a request (its X-Request-ID) cost, for 24 hours and to the
// same API key only. The cost shown is the one the ledger charged (the balance moved by exactly
// it); another key of the same account, another account, an unknown id and a request older than
// 24 hours (its record's start moved back in the database) are all 404.
import assert from 'node:assert/strict';
import { useChatBench, type ChatBench } from './support/chatEnv.js';
import { createKey } from '../activities/accounts/keys.js';
import { db } from '../activities/db.js';
import { flushRequestRecords } from '../activities/metering/records.js';
import { parseAmount } from '../activities/core/money.js';

const hello = { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'Say hello' }] };

describe('billing lookup', function () {
  this.timeout(60_000);
  const bench = useChatBench();
  let b: ChatBench;
  before(() => (b = bench()));

  const lookup = (key: string, id: string) =>
    fetch(`${b.base}/api/v1/billing/${id}`, { headers: { authorization: `Bearer ${key}` } });

  it('shows the same key what a request cost, as the ledger charged it', async () => {
    const { key, accountId } = await b.account('1');
    const res = await b.post(key, hello);
    assert.equal(res.status, 200);
    const answer = await res.json();
    const id = res.headers.get('x-request-id')!;
    const found = await lookup(key, id);
    const body = await found.json();
    assert.equal(found.status, 200, JSON.stringify(body));
    assert.equal(body.request_id, id);
    assert.equal(body.model, 'openai/gpt-4o-mini');
    assert.equal(body.provider, 'openai');
    assert.equal(body.status, 'completed');
    assert.equal(body.currency, 'USD');
    assert.equal(body.input_tokens, answer.usage.prompt_tokens);
    assert.equal(body.output_tokens, answer.usage.completion_tokens);
    // exactly what left the balance
    const spent = parseAmount('1', 'USD') - (await b.usd(accountId)).amount;
    assert.ok(spent > 0n);
    assert.equal(parseAmount(body.cost, 'USD'), spent);
    assert.equal(Number(body.cost), answer.cost);
    // the /v1 alias answers the same record
    const alias = await fetch(`${b.base}/v1/billing/${id}`, { headers: { authorization: `Bearer ${key}` } });
    assert.equal(alias.status, 200);
    assert.deepEqual(await alias.json(), body);
  });

  it('is 404 to another key, another account and an unknown id', async () => {
    const { key, accountId } = await b.account('1');
    const res = await b.post(key, hello);
    const id = res.headers.get('x-request-id')!;
    const { key: sibling } = await createKey(accountId, {});
    const other = await b.account('1');
    for (const k of [sibling, other.key]) {
      const r = await lookup(k, id);
      assert.equal(r.status, 404);
      assert.equal((await r.json()).error.code, 'not_found');
    }
    assert.equal((await lookup(key, 'req_00000000000000000000000000000000')).status, 404);
    assert.equal((await fetch(`${b.base}/api/v1/billing/${id}`)).status, 401);
  });

  it('is 404 after 24 hours', async () => {
    const { key } = await b.account('1');
    const res = await b.post(key, hello);
    const id = res.headers.get('x-request-id')!;
    await flushRequestRecords();
    const setStart = (hoursAgo: number) =>
      db().prisma.requestRecord.update({
        where: { id },
        data: { startedAt: new Date(Date.now() - hoursAgo * 3_600_000) },
      });
    await setStart(23.9);
    assert.equal((await lookup(key, id)).status, 200);
    await setStart(24.01);
    assert.equal((await lookup(key, id)).status, 404);
  });
});
