// The metered call on its own (activities/metering/meteredCall.ts), against the real ledger: what it
// reserves, which routes it tries and what failure the caller then sees, what it charges and
// releases, and the request record it leaves. The surfaces' tests go through it with real upstreams;
// these pin down the engine's own decisions, one at a time (found missing by mutation testing).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createAccount } from '../activities/accounts/accounts.js';
import { createKey } from '../activities/accounts/keys.js';
import { catalog, type Route } from '../activities/catalog/catalog.js';
import { RequestError, upstreamError } from '../activities/core/errors.js';
import { parseAmount } from '../activities/core/money.js';
import { db } from '../activities/db.js';
import { flushLeases } from '../activities/ledger/leases.js';
import { balances, credit, LedgerError } from '../activities/ledger/ledger.js';
import type { Payer } from '../activities/core/caller.js';
import type { MeteredCallSpec } from '../activities/metering/callSpec.js';
import { billOf, MeteredCall } from '../activities/metering/meteredCall.js';
import { flushRequestRecords } from '../activities/metering/records.js';
import { assertBooksBalance } from './support/books.js';

const usd = (s: string) => parseAmount(s, 'USD');
const MODEL = 'openai/gpt-4o-mini';

/** A route of the catalog, served by a provider named `providerId` (the engine reads no more of it). */
function route(providerId: string): Route {
  const base = catalog().model(MODEL)!.routes[0];
  return { ...base, id: `${MODEL}@${providerId}`, provider: { ...base.provider, id: providerId } };
}

async function payer(fund: string, key: { dailyUsdLimit?: bigint } = {}): Promise<Payer> {
  const account = await createAccount(`metered-${randomUUID()}`);
  if (fund !== '0')
    await credit({
      accountId: account.id,
      currency: 'USD',
      amount: usd(fund),
      reason: 'test',
      idempotencyKey: `metered-fund:${account.id}`,
    });
  const { record } = await createKey(account.id, { dailyUsdLimit: key.dailyUsdLimit ?? null });
  return { accountId: account.id, keyId: record.id, billingMode: 'auto', dailyUsdLimit: key.dailyUsdLimit ?? null };
}

/** A call over `routes` whose worst case on a route is the price given for its provider. */
function metered(
  caller: Payer,
  worst: Record<string, string>,
  spec: Partial<MeteredCallSpec> = {},
): MeteredCall & { spec: MeteredCallSpec } {
  return new MeteredCall({
    caller,
    requestId: `req_${randomUUID().replace(/-/g, '')}`,
    surface: 'chat',
    modelId: MODEL,
    routes: Object.keys(worst).map(route),
    worstCase: (r) => usd(worst[r.provider.id]),
    shortfall: (required, available) => `this answer may cost ${required} USD and ${available} USD is available`,
    ...spec,
  });
}

async function holdsOf(requestId: string) {
  const { rows } = await db().pool.query(
    `SELECT id, amount, status, idempotency_key, request_id, api_key_id, expires_at - created_at AS ttl
     FROM balance_holds WHERE request_id = $1`,
    [requestId],
  );
  return rows;
}

async function recordOf(requestId: string) {
  await flushRequestRecords();
  const { rows } = await db().pool.query(`SELECT * FROM request_records WHERE id = $1`, [requestId]);
  assert.equal(rows.length, 1, `one record for ${requestId}`);
  return rows[0];
}

async function chargesOf(accountId: string) {
  await flushLeases();
  const { rows } = await db().pool.query(
    `SELECT amount, reason, idempotency_key, hold_id, request_id FROM ledger_entries
     WHERE account_id = $1 AND kind = 'charge' ORDER BY id`,
    [accountId],
  );
  return rows.map((r) => ({ ...r, amount: BigInt(r.amount) }));
}

/** The error `work` fails with. */
async function failure(work: Promise<unknown>): Promise<RequestError> {
  try {
    await work;
  } catch (err) {
    assert.ok(err instanceof RequestError, `a RequestError, not ${err}`);
    return err;
  }
  assert.fail('expected a failure');
}

const never = new AbortController().signal;

describe('the metered call', () => {
  afterEach(async () => {
    await flushLeases({ close: true });
    await assertBooksBalance();
  });

  describe('reserve', () => {
    it('holds the dearest route’s worst case, keyed by the request, for the key that asked', async () => {
      const caller = await payer('1');
      const call = metered(caller, { p1: '0.001', p2: '0.005', p3: '0.003' });
      assert.equal(call.worstCase(), usd('0.005'));
      const r = await call.reserve();
      assert.deepEqual(r, { currency: 'USD', amount: usd('0.005'), available: usd('0.995') });
      const [hold, ...more] = await holdsOf(call.spec.requestId);
      assert.equal(more.length, 0);
      assert.equal(call.reservation, hold.id);
      assert.equal(BigInt(hold.amount), usd('0.005'));
      assert.equal(hold.idempotency_key, `hold:${call.spec.requestId}`);
      assert.equal(hold.api_key_id, caller.keyId);
      assert.equal((await balances(caller.accountId))!.USD.held, usd('0.005'));
      await call.fail('test');
    });

    it('uses the surface’s idempotency key and a job’s time to live when given', async () => {
      const caller = await payer('1');
      const call = metered(caller, { p1: '0.002' }, { holdKey: 'video-hold:job_1x', holdTtlSeconds: 600 });
      await call.reserve();
      const [hold] = await holdsOf(call.spec.requestId);
      assert.equal(hold.idempotency_key, 'video-hold:job_1x');
      assert.equal(hold.ttl.minutes ?? 0, 10);
      // reserving again (a retried activity) returns the same hold
      const again = metered(caller, { p1: '0.002' }, { holdKey: 'video-hold:job_1x', requestId: call.spec.requestId });
      await again.reserve();
      assert.equal(again.reservation, hold.id);
      assert.equal((await balances(caller.accountId))!.USD.held, usd('0.002'));
      await call.fail('test');
    });

    it('reserves nothing for a free call, and charges nothing for it', async () => {
      const caller = await payer('0');
      const call = metered(caller, { p1: '0', p2: '0' });
      assert.equal(await call.reserve(), undefined);
      assert.equal(call.reservation, undefined);
      await call.attempt(never, async () => 'ok');
      const charge = await call.settle(0n, { inputUnits: 3, outputUnits: 4 });
      assert.deepEqual(charge, { currency: 'USD', charged: 0n, costUsd: 0n, available: undefined });
      assert.equal(billOf(charge).remainingBalance, 0);
      assert.deepEqual(await holdsOf(call.spec.requestId), []);
      assert.equal((await recordOf(call.spec.requestId)).hold_id, null);
    });

    it('refuses a subscription-only key before holding anything, saying why', async () => {
      const caller = { ...(await payer('1')), billingMode: 'subscription_only' as const };
      const plain = await failure(metered(caller, { p1: '0.001' }).reserve());
      assert.equal(plain.status, 402);
      assert.equal(plain.code, 'subscription_required');
      assert.match(plain.message, /limited to subscription billing, and no subscription covers this request/);
      const paygo = await failure(metered(caller, { p1: '0.001' }, { forcePaygo: true }).reserve());
      assert.equal(paygo.code, 'subscription_required');
      assert.match(paygo.message, /asks for pay-as-you-go billing, which this key may not use/);
      assert.equal((await balances(caller.accountId))!.USD.held, 0n);
    });

    it('answers a shortfall with a 402 that states what is needed and what is there', async () => {
      const caller = await payer('0.01');
      const err = await failure(metered(caller, { p1: '0.004', p2: '0.025' }).reserve());
      assert.equal(err.status, 402);
      assert.equal(err.code, 'insufficient_balance');
      assert.equal(err.message, 'Insufficient balance: this answer may cost 0.025 USD and 0.01 USD is available');
      assert.deepEqual(err.opts.details, { requiredBalance: 0.025, availableBalance: 0.01 });
    });

    it('does not dress up a failure that is not a shortfall as one', async () => {
      const nobody: Payer = { accountId: randomUUID(), keyId: null, billingMode: 'auto', dailyUsdLimit: null };
      await assert.rejects(metered(nobody, { p1: '0.001' }).reserve(), LedgerError);
    });
  });

  describe('credit leases', () => {
    it('a text call of a key without a daily cap takes a share of the process’s lease, no hold of its own', async () => {
      const caller = await payer('10');
      const call = metered(caller, { p1: '0.001' }, { creditLease: true });
      assert.deepEqual(await call.reserve(), { currency: 'USD', amount: usd('0.001'), available: 0n });
      assert.deepEqual(await holdsOf(call.spec.requestId), []);
      assert.equal(call.reservation, undefined);
      await call.attempt(never, async () => 'ok');
      const charge = await call.settle(usd('0.0004'), { inputUnits: 5, outputUnits: 6 });
      assert.equal(charge.charged, usd('0.0004'));
      const [entry, ...more] = await chargesOf(caller.accountId);
      assert.equal(more.length, 0);
      assert.equal(entry.amount, -usd('0.0004'));
      assert.equal(entry.idempotency_key, `charge:${call.spec.requestId}`);
      assert.equal(entry.reason, `chat ${MODEL} via p1`);
      const { rows } = await db().pool.query(`SELECT id FROM balance_holds WHERE account_id = $1`, [caller.accountId]);
      assert.equal(rows.length, 1, 'the lease');
      assert.equal((await recordOf(call.spec.requestId)).hold_id, rows[0].id);
    });

    it('a failed call gives its share back to the lease', async () => {
      const caller = await payer('10');
      const call = metered(caller, { p1: '0.001' }, { creditLease: true });
      await call.reserve();
      await call.fail('upstream_error');
      // a lease is given back only once no request holds a share of it
      await flushLeases({ close: true });
      assert.deepEqual((await balances(caller.accountId))!.USD, {
        amount: usd('10'),
        held: 0n,
        available: usd('10'),
      });
      assert.deepEqual(await chargesOf(caller.accountId), []);
    });

    it('keys with a daily USD cap, jobs, and surfaces that do not ask, hold exactly', async () => {
      const capped = await payer('10', { dailyUsdLimit: usd('5') });
      const plain = await payer('10');
      const calls = [
        metered(capped, { p1: '0.001' }, { creditLease: true }),
        metered(plain, { p1: '0.001' }, { creditLease: true, holdTtlSeconds: 600 }),
        metered(plain, { p1: '0.001' }),
      ];
      for (const call of calls) {
        await call.reserve();
        const holds = await holdsOf(call.spec.requestId);
        assert.equal(holds.length, 1, call.spec.requestId);
        assert.equal(call.reservation, holds[0].id);
        await call.fail('test');
      }
    });
  });

  describe('attempt', () => {
    function tryRoutes(call: MeteredCall, outcomes: Record<string, () => unknown>, signal = never) {
      const tried: string[] = [];
      const result = call.attempt(signal, async (r) => {
        tried.push(r.provider.id);
        return outcomes[r.provider.id]();
      });
      return { tried, result };
    }
    const down = (status: number, message: string, retryable = true, opts = {}) => {
      return () => {
        throw upstreamError(message, status, retryable, opts);
      };
    };

    it('tries the routes in order, falling back on a retryable failure, and answers from the first that works', async () => {
      const call = metered(await payer('1'), { p1: '0', p2: '0', p3: '0' });
      const { tried, result } = tryRoutes(call, {
        p1: down(503, 'p1 is overloaded'),
        p2: () => 'from p2',
        p3: () => 'from p3',
      });
      const { value, route: answered } = await result;
      assert.equal(value, 'from p2');
      assert.equal(answered.provider.id, 'p2');
      assert.equal(call.route?.provider.id, 'p2');
      assert.deepEqual(tried, ['p1', 'p2']);
    });

    it('stops at a failure no other route can fix, and when the caller has gone', async () => {
      const caller = await payer('1');
      const rejected = tryRoutes(metered(caller, { p1: '0', p2: '0' }), {
        p1: down(422, 'bad tool schema', false),
        p2: () => 'never',
      });
      const err = await failure(rejected.result);
      assert.equal(err.status, 400);
      assert.equal(err.code, 'upstream_rejected_request');
      // a refusal of the caller's own request keeps the upstream's words (issue 11 item 4)
      assert.equal(err.message, 'The provider refused the request (HTTP 422): bad tool schema');
      assert.equal(err.retryable, false);
      assert.deepEqual(rejected.tried, ['p1']);

      const gone = new AbortController();
      gone.abort();
      const aborted = tryRoutes(
        metered(caller, { p1: '0', p2: '0' }),
        { p1: down(503, 'busy'), p2: () => 'x' },
        gone.signal,
      );
      await failure(aborted.result);
      assert.deepEqual(aborted.tried, ['p1']);
    });

    it('without a route, answers 503 model_not_available naming the model', async () => {
      const err = await failure(metered(await payer('1'), {}).attempt(never, async () => 'x'));
      assert.equal(err.status, 503);
      assert.equal(err.code, 'model_not_available');
      assert.equal(err.message, `Model '${MODEL}' has no configured provider here.`);
    });

    it('one failed route: the upstream’s status as the caller should see it', async () => {
      const caller = await payer('1');
      const cases: Array<[number, number, string]> = [
        [400, 400, 'upstream_rejected_request'],
        [404, 502, 'upstream_error'], // the gateway's model name is wrong upstream: not the caller's fault
        [413, 400, 'upstream_rejected_request'],
        [422, 400, 'upstream_rejected_request'],
        [401, 502, 'upstream_error'],
        [402, 502, 'upstream_error'],
        [403, 502, 'upstream_error'],
        [500, 502, 'upstream_error'],
        [408, 504, 'upstream_error'],
        [504, 504, 'upstream_error'],
        [429, 429, 'rate_limit_exceeded'],
        [499, 499, 'upstream_error'],
      ];
      for (const [upstream, status, code] of cases) {
        const { result } = tryRoutes(metered(caller, { p1: '0' }), {
          p1: down(upstream, `p1 said ${upstream}`, false),
        });
        const err = await failure(result);
        assert.deepEqual([err.status, err.code], [status, code], `${upstream}`);
        // the upstream's own words reach the caller only when it refused the caller's request
        if ([400, 413, 422].includes(upstream)) assert.match(err.message, new RegExp(`p1 said ${upstream}$`));
        else assert.doesNotMatch(err.message, /p1 said/, `${upstream}: ${err.message}`);
      }
      // a code the upstream named is kept; so is its Retry-After, and whether a retry may succeed
      const named = tryRoutes(metered(caller, { p1: '0' }), {
        p1: down(400, 'flagged', false, { code: 'content_policy_violation' }),
      });
      assert.equal((await failure(named.result)).code, 'content_policy_violation');
      const limited = tryRoutes(metered(caller, { p1: '0' }), {
        p1: down(429, 'slow down', true, { retryAfterSeconds: 7 }),
      });
      const err = await failure(limited.result);
      assert.equal(err.opts.retryAfterSeconds, 7);
      assert.equal(err.retryable, true);
    });

    it('every route failed: 502 all_fallbacks_failed, with each provider’s reason', async () => {
      const caller = await payer('1');
      const all = tryRoutes(metered(caller, { p1: '0', p2: '0' }), {
        p1: down(503, 'p1 is overloaded'),
        p2: down(502, 'p2 is unreachable'),
      });
      const err = await failure(all.result);
      assert.equal(err.status, 502);
      assert.equal(err.code, 'all_fallbacks_failed');
      assert.equal(
        err.message,
        'Every provider failed. The provider failed (a server error, HTTP 503). The provider failed (a server error, HTTP 502).',
        "each reason, in the gateway's words, not the upstream's",
      );
      assert.equal(err.retryable, true, 'every failure was one a later attempt may get past');
      const last = tryRoutes(metered(caller, { p1: '0', p2: '0' }), {
        p1: down(503, 'p1 is overloaded'),
        p2: down(400, 'p2 refuses it', false),
      });
      assert.equal((await failure(last.result)).retryable, false);
    });

    it('an adapter’s bug is a generic provider failure, logged, and not retried elsewhere', async () => {
      const logged: unknown[][] = [];
      const log = console.error;
      console.error = (...args: unknown[]) => void logged.push(args);
      try {
        const { tried, result } = tryRoutes(metered(await payer('1'), { p1: '0', p2: '0' }), {
          p1: () => {
            throw new TypeError('undefined is not a function');
          },
          p2: () => 'x',
        });
        const err = await failure(result);
        assert.deepEqual([err.status, err.code], [502, 'provider_error']);
        assert.match(err.message, /^p1 failed unexpectedly\b.*request id req_/);
        assert.doesNotMatch(err.message, /undefined is not a function/);
        assert.equal(err.retryable, false);
        assert.deepEqual(tried, ['p1']);
        assert.equal(logged.length, 1);
        assert.ok(logged[0].some((a) => a instanceof TypeError));
      } finally {
        console.error = log;
      }
    });
  });

  describe('settle, fail and the record', () => {
    it('charges the cost on the route that answered, releases the rest, and records it', async () => {
      const caller = await payer('1');
      const call = metered(caller, { p1: '0.002', p2: '0.005' });
      await call.reserve();
      await call.attempt(never, async (r) => {
        if (r.provider.id === 'p1') throw upstreamError('p1 is down', 503, true);
        return 'ok';
      });
      const charge = await call.settle(usd('0.0021'), { inputUnits: 10, outputUnits: 20 });
      assert.deepEqual(charge, {
        currency: 'USD',
        charged: usd('0.0021'),
        costUsd: usd('0.0021'),
        available: usd('0.9979'),
      });
      assert.deepEqual(billOf(charge), {
        amount: 0.0021,
        currency: 'USD',
        cost: 0.0021,
        paymentSource: 'USD',
        remainingBalance: 0.9979,
      });
      assert.deepEqual((await balances(caller.accountId))!.USD, {
        amount: usd('0.9979'),
        held: 0n,
        available: usd('0.9979'),
      });
      const [entry] = await chargesOf(caller.accountId);
      assert.equal(entry.reason, `chat ${MODEL} via p2`);
      assert.equal(entry.hold_id, call.reservation);
      const rec = await recordOf(call.spec.requestId);
      assert.deepEqual(
        {
          surface: rec.surface,
          model: rec.model,
          provider: rec.provider_id,
          status: rec.status,
          input: rec.input_tokens,
          output: rec.output_tokens,
          currency: rec.currency,
          cost: BigInt(rec.cost),
          hold: rec.hold_id,
          key: rec.api_key_id,
          error: rec.error_code,
        },
        {
          surface: 'chat',
          model: MODEL,
          provider: 'p2',
          status: 'completed',
          input: 10,
          output: 20,
          currency: 'USD',
          cost: usd('0.0021'),
          hold: call.reservation,
          key: caller.keyId,
          error: null,
        },
      );
    });

    it('records the status the surface gives (an answer cut short)', async () => {
      const call = metered(await payer('1'), { p1: '0.002' });
      await call.reserve();
      await call.attempt(never, async () => 'ok');
      await call.settle(usd('0.001'), { status: 'incomplete', inputUnits: 1, outputUnits: 2 });
      assert.equal((await recordOf(call.spec.requestId)).status, 'incomplete');
    });

    it('will not settle before a route answered: that would be a bug, not a free call', async () => {
      const call = metered(await payer('1'), { p1: '0.002' });
      await call.reserve();
      await assert.rejects(call.settle(usd('0.001'), { inputUnits: 1, outputUnits: 1 }), /settle before any route/);
      await call.fail('test');
    });

    it('a failed call releases its hold, charges nothing, and records the failure', async () => {
      const caller = await payer('1');
      const call = metered(caller, { p1: '0.002' });
      await call.reserve();
      await call.fail('upstream_error');
      const [hold] = await holdsOf(call.spec.requestId);
      assert.equal(hold.status, 'released');
      assert.deepEqual((await balances(caller.accountId))!.USD, { amount: usd('1'), held: 0n, available: usd('1') });
      const rec = await recordOf(call.spec.requestId);
      assert.deepEqual(
        [rec.status, rec.error_code, rec.provider_id, rec.cost, rec.currency, rec.input_tokens, rec.hold_id],
        ['failed', 'upstream_error', null, null, null, null, hold.id],
      );
    });

    it('orRelease passes a result through, and on a failure releases with the failure’s code and rethrows', async () => {
      const caller = await payer('1');
      const ok = metered(caller, { p1: '0.002' });
      await ok.reserve();
      assert.equal(await ok.orRelease(Promise.resolve(42)), 42);
      assert.equal((await holdsOf(ok.spec.requestId))[0].status, 'active');
      await ok.fail('test');

      const cases: Array<[unknown, string | undefined, string]> = [
        [new RequestError(400, 'invalid_request', 'no'), undefined, 'invalid_request'],
        [new RequestError(400, 'invalid_request', 'no'), 'job_not_stored', 'job_not_stored'],
        [new Error('boom'), undefined, 'error'],
      ];
      for (const [thrown, code, recorded] of cases) {
        const call = metered(caller, { p1: '0.002' });
        await call.reserve();
        await assert.rejects(call.orRelease(Promise.reject(thrown), code), (e) => e === thrown);
        assert.equal((await holdsOf(call.spec.requestId))[0].status, 'released');
        assert.equal((await recordOf(call.spec.requestId)).error_code, recorded);
      }
      assert.equal((await balances(caller.accountId))!.USD.held, 0n);
    });

    it('a job’s worker settles the reservation its request made, naming the provider that served it', async () => {
      const caller = await payer('1');
      const request = metered(caller, { p1: '0.005' }, { holdTtlSeconds: 600, surface: 'video' });
      await request.reserve();
      const worker = MeteredCall.adopted({
        caller,
        requestId: request.spec.requestId,
        surface: 'video',
        modelId: MODEL,
        holdId: request.reservation,
        providerId: 'p1',
      });
      assert.equal(worker.reservation, request.reservation);
      const charge = await worker.settle(usd('0.003'), { inputUnits: null, outputUnits: 8 });
      assert.equal(charge.charged, usd('0.003'));
      assert.equal(charge.available, usd('0.997'));
      const [entry] = await chargesOf(caller.accountId);
      assert.equal(entry.reason, `video ${MODEL} via p1`);
      const rec = await recordOf(request.spec.requestId);
      assert.deepEqual([rec.provider_id, rec.hold_id, rec.surface], ['p1', request.reservation, 'video']);
    });

    it('an adopted call with nothing reserved charges nothing; without its provider it cannot settle', async () => {
      const caller = await payer('1');
      const free = MeteredCall.adopted({
        caller,
        requestId: `req_${randomUUID()}`,
        surface: 'speech',
        modelId: MODEL,
        holdId: null,
        providerId: 'p1',
      });
      assert.equal(free.reservation, undefined);
      assert.deepEqual(await free.settle(usd('0.001'), { inputUnits: 1, outputUnits: 0 }), {
        currency: 'USD',
        charged: 0n,
        costUsd: usd('0.001'),
        available: undefined,
      });
      const request = metered(caller, { p1: '0.005' }, { holdTtlSeconds: 600 });
      await request.reserve();
      const anonymous = MeteredCall.adopted({
        caller,
        requestId: request.spec.requestId,
        surface: 'speech',
        modelId: MODEL,
        holdId: request.reservation,
      });
      await assert.rejects(anonymous.settle(usd('0.001'), { inputUnits: 1, outputUnits: 0 }), /settle before/);
      await anonymous.fail('upstream_error');
      assert.equal((await holdsOf(request.spec.requestId))[0].status, 'released');
    });
  });

  describe('delivery: an answer the caller never receives is not charged', () => {
    async function refundsOf(accountId: string) {
      await flushLeases();
      const { rows } = await db().pool.query(
        `SELECT amount, reason, idempotency_key FROM ledger_entries WHERE account_id = $1 AND kind = 'refund' ORDER BY id`,
        [accountId],
      );
      return rows.map((r) => ({ ...r, amount: BigInt(r.amount) }));
    }
    async function keySpent(keyId: string) {
      const { rows } = await db().pool.query(`SELECT usd_spent FROM key_daily_usage WHERE key_id = $1`, [keyId]);
      return rows.length ? BigInt(rows[0].usd_spent) : 0n;
    }
    async function settled(caller: Payer, spec: Partial<MeteredCallSpec> = {}) {
      const call = metered(caller, { p1: '0.002' }, spec);
      await call.reserve();
      await call.attempt(never, async () => 'ok');
      await call.settle(usd('0.0015'), { inputUnits: 3, outputUnits: 4 });
      return call;
    }

    it('a settled charge awaits delivery until delivered(); abandoned then, it is refunded once and recorded failed', async () => {
      const caller = await payer('1', { dailyUsdLimit: usd('5') });
      const call = await settled(caller);
      assert.equal(call.awaitingDelivery, true);
      assert.equal(await keySpent(caller.keyId!), usd('0.0015'));
      await call.abandon('client_closed');
      await call.abandon('client_closed'); // a second abandon (a late 'close') changes nothing
      assert.equal(call.awaitingDelivery, false);
      const refunds = await refundsOf(caller.accountId);
      assert.deepEqual(
        refunds.map((r) => [r.amount, r.reason, r.idempotency_key]),
        [
          [
            usd('0.0015'),
            `chat ${MODEL}: the answer did not reach the caller (client_closed)`,
            `refund:charge:${call.reservation}`,
          ],
        ],
      );
      assert.deepEqual((await balances(caller.accountId))!.USD, { amount: usd('1'), held: 0n, available: usd('1') });
      // the key's daily spend goes back down with the refund
      assert.equal(await keySpent(caller.keyId!), 0n);
      const rec = await recordOf(call.spec.requestId);
      assert.deepEqual(
        [rec.status, rec.error_code, rec.input_tokens, rec.output_tokens],
        ['failed', 'client_closed', 3, 4],
      );
      await assertBooksBalance();
    });

    it('usage above the reservation is refunded too: the charge and its overage entry', async () => {
      const caller = await payer('1', { dailyUsdLimit: usd('5') });
      const call = metered(caller, { p1: '0.002' });
      await call.reserve();
      await call.attempt(never, async () => 'ok');
      // the answer ran past its worst case: 0.002 from the hold, 0.0015 more from the balance
      await call.settle(usd('0.0035'), { inputUnits: 3, outputUnits: 40 });
      assert.deepEqual(
        (await chargesOf(caller.accountId)).map((c) => [c.amount, c.idempotency_key]),
        [
          [-usd('0.002'), `charge:${call.reservation}`],
          [-usd('0.0015'), `overage:${call.reservation}`],
        ],
      );
      await call.abandon('client_closed');
      const refunds = await refundsOf(caller.accountId);
      assert.deepEqual(
        refunds.map((r) => [r.amount, r.idempotency_key]).sort((a, b) => String(a[1]).localeCompare(String(b[1]))),
        [
          [usd('0.002'), `refund:charge:${call.reservation}`],
          [usd('0.0015'), `refund:overage:${call.reservation}`],
        ],
      );
      assert.deepEqual((await balances(caller.accountId))!.USD, { amount: usd('1'), held: 0n, available: usd('1') });
      assert.equal(await keySpent(caller.keyId!), 0n);
      await assertBooksBalance();
    });

    it('a delivered charge stands: abandon() afterwards refunds nothing', async () => {
      const caller = await payer('1');
      const call = await settled(caller);
      call.delivered();
      assert.equal(call.awaitingDelivery, false);
      await call.abandon('client_closed');
      assert.deepEqual(await refundsOf(caller.accountId), []);
      assert.equal((await balances(caller.accountId))!.USD.amount, usd('0.9985'));
      assert.equal((await recordOf(call.spec.requestId)).status, 'completed');
    });

    it('abandoned before anything was settled, the reservation is released as by fail()', async () => {
      const caller = await payer('1');
      const call = metered(caller, { p1: '0.002' });
      await call.reserve();
      assert.equal(call.awaitingDelivery, false);
      await call.abandon('client_closed');
      assert.equal((await holdsOf(call.spec.requestId))[0].status, 'released');
      assert.deepEqual(await refundsOf(caller.accountId), []);
      assert.equal((await recordOf(call.spec.requestId)).error_code, 'client_closed');
    });

    it('a leased charge still waiting for its batch is taken back without a refund entry; a written one is refunded', async () => {
      const caller = await payer('10');
      const waiting = await settled(caller, { creditLease: true });
      assert.equal(waiting.reservation, undefined, 'a share of the lease, not a hold');
      await waiting.abandon('client_closed');
      await flushLeases();
      assert.deepEqual(await refundsOf(caller.accountId), []);
      assert.deepEqual(await chargesOf(caller.accountId), [], 'the charge never reached the ledger');

      const written = await settled(caller, { creditLease: true });
      await flushLeases(); // the lease's batch writes the charge
      assert.equal((await chargesOf(caller.accountId)).length, 1);
      await written.abandon('client_closed');
      const refunds = await refundsOf(caller.accountId);
      assert.deepEqual(
        refunds.map((r) => [r.amount, r.idempotency_key]),
        [[usd('0.0015'), `refund:charge:${written.spec.requestId}`]],
      );
      await flushLeases({ close: true });
      assert.deepEqual((await balances(caller.accountId))!.USD, { amount: usd('10'), held: 0n, available: usd('10') });
      await assertBooksBalance();
    });

    it('orAbandon passes a result through; on a failure it abandons with its code and rethrows', async () => {
      const caller = await payer('1');
      const ok = await settled(caller);
      assert.equal(await ok.orAbandon(Promise.resolve('written'), 'write_failed'), 'written');
      assert.equal(ok.awaitingDelivery, true);
      ok.delivered();
      const broken = await settled(caller);
      const thrown = new Error('socket closed');
      await assert.rejects(broken.orAbandon(Promise.reject(thrown), 'write_failed'), (e) => e === thrown);
      const refunds = await refundsOf(caller.accountId);
      assert.deepEqual(
        refunds.map((r) => r.idempotency_key),
        [`refund:charge:${broken.reservation}`],
      );
      assert.equal((await recordOf(broken.spec.requestId)).error_code, 'write_failed');
    });
  });
});
