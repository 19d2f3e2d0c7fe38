// biome-ignore-all lint/suspicious/noExplicitAny: wire JSON, read field by field
// Subscriptions end to end: plans from the catalog, subscribing (the first period paid once from
// the balance), the allowance spent by covered requests on the built-in local model (429 when
// used up, then pay-as-you-go on request), the bypasses (X-Billing-Mode, X-Provider, paygo keys),
// subscription-only keys, the Subscription usage record, races on the counters and on a renewal,
// and the workflow's periods: grace then inactive on an empty balance, a late payment, a cancel.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createKey } from '../activities/accounts/keys.js';
import { readFile } from 'node:fs/promises';
import { catalog } from '../activities/catalog/catalog.js';
import { parseCatalog } from '../activities/catalog/file.js';
import { config } from '../activities/config.js';
import { parseAmount } from '../activities/core/money.js';
import { db } from '../activities/db.js';
import { balances, credit } from '../activities/ledger/ledger.js';
import { MeteredCall } from '../activities/metering/meteredCall.js';
import { listenForChanges } from '../activities/accounts/cacheChanges.js';
import {
  claimAllowance,
  forgetCoverage,
  giveBack,
  nextUtcMidnight,
  SUBSCRIPTION_CHANGES,
  subscriptionWouldCover,
} from '../activities/ledger/allowance.js';
import { paySubscriptionPeriod } from '../activities/subscriptions/periods.js';
import { newAccount, startApi } from './support/api.js';
import { assertBooksBalance, settledBalances } from './support/books.js';
import { keepConfig } from './support/keepConfig.js';
import { testPlan, usePlans } from './support/plans.js';
import { useTemporal } from './support/temporal.js';
import { until, untilListening } from './support/wait.js';

const LOCAL = 'local/stories260k';
const usd = (s: string) => parseAmount(s, 'USD');

describe('subscriptions', function () {
  this.timeout(120_000);
  keepConfig();
  usePlans([
    testPlan('daily3', { price: '0.10', periodSeconds: 3600, daily: 3, monthly: 10 }),
    testPlan('race', { price: '0.10', periodSeconds: 3600, daily: 7, monthly: 100 }),
    testPlan('short', { price: '0.10', periodSeconds: 2, daily: 100, monthly: 100 }),
    testPlan('reprice', { price: '0.10', periodSeconds: 3600, daily: 7, monthly: 100 }),
  ]);
  let api: Awaited<ReturnType<typeof startApi>>;

  before(async () => {
    await useTemporal();
    api = await startApi();
  });
  after(() => api?.close());
  afterEach(() => assertBooksBalance());

  const call = async (
    key: string,
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ) => {
    const res = await fetch(`${api.base}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, headers: res.headers, body: (await res.json()) as any };
  };
  const subscribe = (key: string, plan: string) => call(key, 'POST', '/api/subscription/v1/subscribe', { plan });
  const usage = async (key: string) => (await call(key, 'GET', '/api/subscription/v1/usage')).body;
  const chat = (key: string, headers: Record<string, string> = {}, path = '/v1/chat/completions') =>
    call(
      key,
      'POST',
      path,
      { model: LOCAL, messages: [{ role: 'user', content: 'Once upon a time' }], max_tokens: 4 },
      headers,
    );
  const usdOf = async (accountId: string) => (await settledBalances(accountId)).USD.amount;
  const periodCharges = async (subscriptionId: string) =>
    (
      await db().pool.query(
        `SELECT idempotency_key, amount::text FROM ledger_entries WHERE idempotency_key LIKE $1 ORDER BY id`,
        [`subscription:${subscriptionId}:%`],
      )
    ).rows;

  it('lists the plans: the default catalog covers the built-in local model', async () => {
    const res = await fetch(`${api.base}/api/subscription/v1/plans`);
    assert.equal(res.status, 200);
    const { data } = (await res.json()) as any;
    const starter = data.find((p: any) => p.id === 'local-starter');
    assert.ok(starter, JSON.stringify(data));
    assert.deepEqual(starter.models, [LOCAL]);
    assert.equal(starter.currency, 'USD');
    assert.ok(starter.price > 0 && starter.limits.daily > 0 && starter.limits.monthly >= starter.limits.daily);
    assert.deepEqual(data.find((p: any) => p.id === 'daily3').limits, { daily: 3, monthly: 10 });
  });

  it("checks the catalog file's plans: models by id or alias, limits, periods", async () => {
    const text = await readFile(config.catalogFile, 'utf8');
    const withPlan = (plan: string) => text.replace(/\nplans:\n/, `\nplans:\n${plan}`);
    const ok = parseCatalog(
      withPlan(
        '  - {id: alias-plan, name: A, price: "2.5", period: 12h, daily_limit: 1, monthly_limit: 2, models: [stories260k]}\n',
      ),
    );
    const plan = ok.plans.find((p) => p.id === 'alias-plan')!;
    assert.deepEqual(
      { price: plan.price, periodSeconds: plan.periodSeconds, models: plan.models },
      { price: usd('2.5'), periodSeconds: 43_200, models: [LOCAL] },
    );
    const bad = (plan: string, message: RegExp) => assert.throws(() => parseCatalog(withPlan(plan)), message);
    bad(
      '  - {id: x, name: X, price: "1", period: 30d, daily_limit: 1, monthly_limit: 2, models: [no/such]}\n',
      /plans\/0\/models\/0 names "no\/such", which is not under models/,
    );
    bad(
      '  - {id: x, name: X, price: "1", period: 30d, daily_limit: 5, monthly_limit: 2, models: [local/stories260k]}\n',
      /daily_limit is above monthly_limit/,
    );
    bad(
      '  - {id: x, name: X, price: "1", period: month, daily_limit: 1, monthly_limit: 2, models: [local/stories260k]}\n',
      /\/plans\/0\/period must match/,
    );
    bad(
      '  - {id: x, name: X, price: 1, period: 30d, daily_limit: 1, monthly_limit: 2, models: [local/stories260k]}\n',
      /\/plans\/0\/price must be string/,
    );
  });

  it('answers the usage record of an account without a subscription', async () => {
    const { key } = await newAccount('1');
    const u = await usage(key);
    assert.equal(u.active, false);
    assert.equal(u.state, 'inactive');
    assert.equal(u.enforceDailyLimit, true);
    assert.equal(u.graceUntil, null);
    assert.equal(u.daily.used, 0);
    assert.deepEqual(Object.keys(u).sort(), [
      'active',
      'daily',
      'enforceDailyLimit',
      'graceUntil',
      'limits',
      'monthly',
      'period',
      'state',
    ]);
  });

  it('subscribes, paying the first period once from the balance; one live subscription per account', async () => {
    const { key, accountId } = await newAccount('1');
    const res = await subscribe(key, 'daily3');
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const sub = res.body.subscription;
    assert.match(sub.id, /^sub_[0-9a-f]{24}$/);
    assert.equal(sub.state, 'active');
    assert.equal(await usdOf(accountId), usd('0.90'));
    assert.deepEqual(await periodCharges(sub.id), [
      { idempotency_key: `subscription:${sub.id}:1`, amount: '-100000000' },
    ]);
    const again = await subscribe(key, 'daily3');
    assert.equal(again.status, 409);
    assert.equal(again.body.error.code, 'subscription_exists');
    assert.equal(await usdOf(accountId), usd('0.90'));

    const u = await usage(key);
    assert.equal(u.active, true);
    assert.equal(u.state, 'active');
    assert.deepEqual(u.limits, { daily: 3, monthly: 10 });
    assert.deepEqual(u.daily, { used: 0, remaining: 3, percentUsed: 0, resetAt: u.daily.resetAt });
    assert.equal(new Date(u.daily.resetAt).toISOString().slice(11), '00:00:00.000Z');
    assert.equal(u.monthly.resetAt, Date.parse(u.period.currentPeriodEnd));
    assert.equal(Date.parse(sub.currentPeriodEnd) - Date.parse(sub.currentPeriodStart), 3600_000);
  });

  it('two subscribe requests at once: one wins, one period is paid', async () => {
    const { key, accountId } = await newAccount('1');
    const results = await Promise.all([subscribe(key, 'daily3'), subscribe(key, 'daily3'), subscribe(key, 'race')]);
    assert.deepEqual(results.map((r) => r.status).sort(), [200, 409, 409], JSON.stringify(results.map((r) => r.body)));
    assert.equal(await usdOf(accountId), usd('0.90'));
  });

  it('refuses to subscribe when the balance does not cover the price, leaving nothing behind', async () => {
    const { key, accountId } = await newAccount('0.05');
    const res = await subscribe(key, 'daily3');
    assert.equal(res.status, 402, JSON.stringify(res.body));
    assert.equal(res.body.error.code, 'insufficient_balance');
    assert.match(res.body.error.message, /costs \$0\.1 per period and \$0\.05 is available/);
    assert.equal(await usdOf(accountId), usd('0.05'));
    assert.equal((await usage(key)).active, false);
    // nothing live was left: subscribing works once the balance covers it
    await credit({ accountId, currency: 'USD', amount: usd('1'), reason: 'test', idempotencyKey: `t:${randomUUID()}` });
    assert.equal((await subscribe(key, 'daily3')).status, 200);
    const unknown = await subscribe(key, 'no-such-plan');
    assert.equal(unknown.status, 400);
    assert.equal(unknown.body.error.param, 'plan');
  });

  it('spends the daily allowance, then answers 429, then pays as it goes with X-Billing-Mode: paygo', async () => {
    const { key, accountId } = await newAccount('1');
    assert.equal((await subscribe(key, 'daily3')).status, 200);
    const paid = await usdOf(accountId);
    // the normal route and the subscription's own path both use the allowance
    for (const path of ['/v1/chat/completions', '/api/v1/chat/completions', '/api/subscription/v1/chat/completions']) {
      const r = await chat(key, {}, path);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.cost, 0);
      assert.equal(r.body.x_nanogpt_pricing.billedToSubscription, true);
      assert.equal(r.body.remainingBalance, 0.9);
    }
    assert.equal(await usdOf(accountId), paid);
    const spent = await chat(key);
    assert.equal(spent.status, 429, JSON.stringify(spent.body));
    assert.equal(spent.body.error.code, 'rate_limit_exceeded');
    assert.equal(spent.body.error.type, 'rate_limit_error');
    assert.match(spent.body.error.message, /daily allowance is used up \(3 of 3 operations\).*X-Billing-Mode: paygo/);
    const retryAfter = Number(spent.headers.get('retry-after'));
    assert.ok(retryAfter > 0 && retryAfter <= 86_400, String(retryAfter));

    const paygo = await chat(key, { 'X-Billing-Mode': 'paygo' });
    assert.equal(paygo.status, 200, JSON.stringify(paygo.body));
    assert.ok(paygo.body.cost > 0);
    assert.equal(paygo.body.x_nanogpt_pricing.billedToSubscription, undefined);
    assert.ok((await usdOf(accountId)) < paid);

    const u = await usage(key);
    assert.deepEqual(u.daily, { used: 3, remaining: 0, percentUsed: 1, resetAt: u.daily.resetAt });
    assert.equal(u.monthly.used, 3);
    assert.equal(u.monthly.remaining, 7);

    // a new UTC day: the daily window starts from 0, the monthly one keeps counting
    await db().pool.query(`UPDATE subscriptions SET daily_day = daily_day - 1 WHERE account_id = $1`, [accountId]);
    assert.equal((await chat(key)).status, 200);
    const next = await usage(key);
    assert.equal(next.daily.used, 1);
    assert.equal(next.monthly.used, 4);
  });

  it('explicit providers and paygo keys pay as they go; subscription-only keys get what it covers', async () => {
    const { key, accountId } = await newAccount('1');
    assert.equal((await subscribe(key, 'daily3')).status, 200);
    const before = await usdOf(accountId);
    const explicit = await chat(key, { 'X-Provider': 'local' });
    assert.equal(explicit.status, 200, JSON.stringify(explicit.body));
    assert.ok(explicit.body.cost > 0);
    const { key: paygoKey } = await createKey(accountId, { billingMode: 'paygo' });
    const byKey = await chat(paygoKey);
    assert.equal(byKey.status, 200);
    assert.ok(byKey.body.cost > 0);
    assert.ok((await usdOf(accountId)) < before);
    assert.equal((await usage(key)).daily.used, 0);

    const { key: subKey } = await createKey(accountId, { billingMode: 'subscription_only' });
    const covered = await chat(subKey);
    assert.equal(covered.status, 200);
    assert.equal(covered.body.cost, 0);
    // not covered: another model, an explicit provider, forced pay-as-you-go
    const embed = await call(subKey, 'POST', '/v1/embeddings', { model: 'local/all-minilm-l6-v2', input: 'hello' });
    assert.equal(embed.status, 402, JSON.stringify(embed.body));
    assert.equal(embed.body.error.code, 'subscription_required');
    assert.match(embed.body.error.message, /no subscription covers this request/);
    const chosen = await chat(subKey, { 'X-Provider': 'local' });
    assert.equal(chosen.status, 402);
    assert.match(chosen.body.error.message, /selects a provider/);
    const forced = await chat(subKey, { 'X-Billing-Mode': 'paygo' });
    assert.equal(forced.status, 402);
    assert.match(forced.body.error.message, /pay-as-you-go billing/);
    // the rest of the allowance, then 429 without a way to pay for it
    assert.equal((await chat(subKey)).status, 200);
    assert.equal((await chat(subKey)).status, 200);
    const spent = await chat(subKey);
    assert.equal(spent.status, 429);
    assert.match(spent.body.error.message, /limited to subscription billing/);
  });

  it('a call that fails or never reaches its caller gives its operation back', async () => {
    const { key, accountId } = await newAccount('1');
    assert.equal((await subscribe(key, 'daily3')).status, 200);
    const route = catalog().model(LOCAL)!.routes[0];
    const metered = () =>
      new MeteredCall({
        caller: { accountId, keyId: null, billingMode: 'auto', dailyUsdLimit: null },
        requestId: `req_${randomUUID()}`,
        surface: 'chat',
        modelId: LOCAL,
        routes: [route],
        worstCase: () => usd('0.01'),
        shortfall: () => 'never',
      });
    const failed = metered();
    await failed.reserve();
    assert.equal((await usage(key)).daily.used, 1);
    await failed.fail('upstream_error');
    assert.equal((await usage(key)).daily.used, 0);

    const undelivered = metered();
    await undelivered.reserve();
    undelivered.resumeAnswered(route);
    const charge = await undelivered.settle(usd('0.001'), { inputUnits: 3, outputUnits: 4 });
    assert.equal(charge.charged, 0n);
    assert.equal(charge.subscription, true);
    await undelivered.abandon('client_gone');
    const u = await usage(key);
    assert.equal(u.daily.used, 0);
    assert.equal(u.monthly.used, 0);

    const delivered = metered();
    await delivered.reserve();
    delivered.resumeAnswered(route);
    await delivered.settle(usd('0.001'), { inputUnits: 3, outputUnits: 4 });
    delivered.delivered();
    await delivered.abandon('too_late');
    assert.equal((await usage(key)).daily.used, 1);
    assert.equal(await usdOf(accountId), usd('0.90'));
  });

  it('many requests at once spend exactly the last operations', async () => {
    const { key, accountId } = await newAccount('5');
    assert.equal((await subscribe(key, 'race')).status, 200);
    // over HTTP: 10 requests for the 7 operations of the day
    const results = await Promise.all(Array.from({ length: 10 }, () => chat(key)));
    const codes = results.map((r) => r.status).sort();
    assert.deepEqual(
      codes,
      [200, 200, 200, 200, 200, 200, 200, 429, 429, 429],
      JSON.stringify(results.map((r) => r.body)),
    );
    assert.equal((await usage(key)).daily.used, 7);
    // straight at the counter: a new day's 7 operations, 60 claims at once
    await db().pool.query(`UPDATE subscriptions SET daily_day = daily_day - 1 WHERE account_id = $1`, [accountId]);
    const caller = { accountId, billingMode: 'auto' as const };
    const claims = await Promise.allSettled(
      Array.from({ length: 60 }, () => claimAllowance({ caller, modelId: LOCAL })),
    );
    assert.equal(claims.filter((c) => c.status === 'fulfilled' && c.value).length, 7);
    const refused = claims.filter((c) => c.status === 'rejected') as PromiseRejectedResult[];
    assert.equal(refused.length, 53);
    assert.ok(refused.every((r) => r.reason.status === 429));
    const u = await usage(key);
    assert.equal(u.daily.used, 7);
    assert.equal(u.monthly.used, 14);
  });

  it('a renewal while requests spend: the period is charged once and the counters stay exact', async () => {
    const { accountId } = await newAccount('1');
    // a subscription row without a workflow, so this test alone renews it
    const id = `sub_${randomUUID().replace(/-/g, '').slice(0, 24)}`;
    await db().pool.query(
      `INSERT INTO subscriptions (id, account_id, plan_id, status, period_no, period_start, period_end, price,
         daily_limit, monthly_limit, models, monthly_used)
       VALUES ($1, $2, 'race', 'active', 1, now() - interval '1 hour', now(), 100000000, 7, 100, $3, 95)`,
      [id, accountId, [LOCAL]],
    );
    forgetCoverage([accountId]);
    const caller = { accountId, billingMode: 'auto' as const };
    const claims = Array.from({ length: 40 }, () => claimAllowance({ caller, modelId: LOCAL }));
    const renewals = [paySubscriptionPeriod(id, 2), paySubscriptionPeriod(id, 2)];
    const settled = await Promise.allSettled(claims);
    const [r1, r2] = await Promise.all(renewals);
    assert.deepEqual(r1, r2);
    assert.ok('paid' in r1 && r1.paid);
    assert.equal((await periodCharges(id)).length, 1);
    assert.equal(await usdOf(accountId), usd('0.90'));
    const won = settled.filter((c) => c.status === 'fulfilled' && c.value).map((c) => (c as any).value);
    assert.ok(settled.every((c) => c.status === 'fulfilled' || (c.reason as any).status === 429));
    const { rows } = await db().pool.query(
      `SELECT period_no, monthly_used, daily_used FROM subscriptions WHERE id = $1`,
      [id],
    );
    // each claim counted in the period it was made in: the new period holds exactly its own
    assert.equal(rows[0].period_no, 2);
    assert.equal(rows[0].monthly_used, won.filter((c: any) => c.periodNo === 2).length);
    assert.ok(won.filter((c: any) => c.periodNo === 1).length <= 5);
    assert.equal(rows[0].daily_used, won.length);

    // the activity died between the charge and the row, and the plan's price changed before its retry
    await db().pool.query(`UPDATE subscriptions SET period_no = 1 WHERE id = $1`, [id]);
    await db().pool.query(`UPDATE subscription_plans SET price = 200000000 WHERE id = 'race'`);
    try {
      const retried = await paySubscriptionPeriod(id, 2);
      assert.ok('paid' in retried && retried.paid && retried.periodNo === 2);
    } finally {
      await db().pool.query(`UPDATE subscription_plans SET price = 100000000 WHERE id = 'race'`);
    }
    assert.equal((await periodCharges(id)).length, 1);
    assert.equal(await usdOf(accountId), usd('0.90'));
    await db().pool.query(`UPDATE subscriptions SET status = 'inactive' WHERE id = $1`, [id]);
  });

  it("a renewal after the plan's price changed charges the new price and takes the plan's new terms", async () => {
    const { accountId } = await newAccount('1');
    // subscribed at 0.10 (a row without a workflow, so this test alone renews it)
    const id = `sub_${randomUUID().replace(/-/g, '').slice(0, 24)}`;
    await db().pool.query(
      `INSERT INTO subscriptions (id, account_id, plan_id, status, period_no, period_start, period_end, price,
         daily_limit, monthly_limit, models)
       VALUES ($1, $2, 'reprice', 'active', 1, now() - interval '1 hour', now(), 100000000, 7, 100, $3)`,
      [id, accountId, [LOCAL]],
    );
    // the operator raises the price and the daily limit before the period ends
    await db().pool.query(`UPDATE subscription_plans SET price = 250000000, daily_limit = 9 WHERE id = 'reprice'`);
    const renewed = await paySubscriptionPeriod(id, 2);
    assert.ok('paid' in renewed && renewed.paid && renewed.periodNo === 2);
    assert.deepEqual(
      (await periodCharges(id)).map((c) => c.amount),
      [usd('-0.25').toString()],
    );
    assert.equal(await usdOf(accountId), usd('0.75'));
    const { rows } = await db().pool.query(`SELECT price::text, daily_limit FROM subscriptions WHERE id = $1`, [id]);
    assert.deepEqual(rows[0], { price: usd('0.25').toString(), daily_limit: 9 });
    await db().pool.query(`UPDATE subscriptions SET status = 'inactive' WHERE id = $1`, [id]);
  });

  describe('the allowance at its limits (claimAllowance, giveBack)', () => {
    /** A live subscription row of a new account (no workflow), its counters as given. */
    async function subscriptionRow(row: { daily: number; monthly: number; dailyUsed?: number; monthlyUsed?: number }) {
      const { accountId } = await newAccount('1');
      const id = `sub_${randomUUID().replace(/-/g, '').slice(0, 24)}`;
      await db().pool.query(
        `INSERT INTO subscriptions (id, account_id, plan_id, status, period_no, period_start, period_end, price,
           daily_limit, monthly_limit, models, daily_used, monthly_used, daily_day)
         VALUES ($1, $2, 'race', 'active', 1, now(), now() + interval '1 hour', 100000000, $3, $4, $5, $6, $7,
           (now() AT TIME ZONE 'UTC')::date)`,
        [id, accountId, row.daily, row.monthly, [LOCAL], row.dailyUsed ?? 0, row.monthlyUsed ?? 0],
      );
      forgetCoverage([accountId]);
      const counters = async () =>
        (await db().pool.query(`SELECT daily_used, monthly_used FROM subscriptions WHERE id = $1`, [id])).rows[0];
      return { id, caller: { accountId, billingMode: 'auto' as const }, counters };
    }
    const usedUp = (scope: string, used: number, limit: number) => (err: any) => {
      assert.equal(err.status, 429, String(err));
      assert.equal(err.code, 'rate_limit_exceeded');
      assert.deepEqual(
        { scope: err.opts.details.scope, used: err.opts.details.used, limit: err.opts.details.limit },
        { scope, used, limit },
      );
      return true;
    };

    after(() => db().pool.query(`UPDATE subscriptions SET status = 'inactive' WHERE plan_id = 'race'`));

    it('the daily limit: every operation up to it, exactly, then 429 daily with nothing counted', async () => {
      const s = await subscriptionRow({ daily: 3, monthly: 10 });
      for (let i = 1; i <= 3; i++) {
        const claim = await claimAllowance({ caller: s.caller, modelId: LOCAL });
        assert.equal(claim?.subscriptionId, s.id, `operation ${i}`);
        assert.deepEqual(await s.counters(), { daily_used: i, monthly_used: i });
      }
      await assert.rejects(claimAllowance({ caller: s.caller, modelId: LOCAL }), usedUp('daily', 3, 3));
      assert.deepEqual(await s.counters(), { daily_used: 3, monthly_used: 3 });
    });

    it('the monthly limit: the last operation passes, the next is 429 monthly', async () => {
      const s = await subscriptionRow({ daily: 100, monthly: 5, monthlyUsed: 4 });
      assert.ok(await claimAllowance({ caller: s.caller, modelId: LOCAL }));
      assert.deepEqual(await s.counters(), { daily_used: 1, monthly_used: 5 });
      await assert.rejects(claimAllowance({ caller: s.caller, modelId: LOCAL }), usedUp('monthly', 5, 5));
      assert.deepEqual(await s.counters(), { daily_used: 1, monthly_used: 5 });
    });

    it('both used up at once: the daily limit is the one named', async () => {
      const s = await subscriptionRow({ daily: 2, monthly: 2, dailyUsed: 2, monthlyUsed: 2 });
      await assert.rejects(claimAllowance({ caller: s.caller, modelId: LOCAL }), usedUp('daily', 2, 2));
    });

    it("a new UTC day counts from 0: yesterday's full count does not stop today's first operation", async () => {
      const s = await subscriptionRow({ daily: 2, monthly: 10, dailyUsed: 2, monthlyUsed: 2 });
      await db().pool.query(`UPDATE subscriptions SET daily_day = daily_day - 1 WHERE id = $1`, [s.id]);
      const claim = await claimAllowance({ caller: s.caller, modelId: LOCAL });
      assert.ok(claim);
      assert.deepEqual(await s.counters(), { daily_used: 1, monthly_used: 3 });
      assert.ok(await claimAllowance({ caller: s.caller, modelId: LOCAL }));
      await assert.rejects(claimAllowance({ caller: s.caller, modelId: LOCAL }), usedUp('daily', 2, 2));
    });

    it('who pays: pay-as-you-go callers and bypasses never touch the allowance; subscription-only keys are refused', async () => {
      const s = await subscriptionRow({ daily: 3, monthly: 10 });
      const only = { ...s.caller, billingMode: 'subscription_only' as const };
      assert.equal(await claimAllowance({ caller: { ...s.caller, billingMode: 'paygo' }, modelId: LOCAL }), undefined);
      assert.equal(await claimAllowance({ caller: s.caller, modelId: LOCAL, bypass: 'provider' }), undefined);
      assert.equal(await claimAllowance({ caller: s.caller, modelId: 'openai/gpt-4o-mini' }), undefined);
      assert.deepEqual(await s.counters(), { daily_used: 0, monthly_used: 0 });
      const refused = (why: RegExp) => (err: any) => {
        assert.equal(err.status, 402);
        assert.equal(err.code, 'subscription_required');
        assert.match(err.message, why);
        return true;
      };
      await assert.rejects(claimAllowance({ caller: only, modelId: LOCAL, bypass: 'job' }), refused(/not jobs/));
      await assert.rejects(claimAllowance({ caller: only, modelId: LOCAL, bypass: 'paygo' }), refused(/pay-as-you-go/));
      await assert.rejects(
        claimAllowance({ caller: only, modelId: 'openai/gpt-4o-mini' }),
        refused(/no subscription covers this request/),
      );
      assert.ok(await claimAllowance({ caller: only, modelId: LOCAL }));
      assert.equal(await subscriptionWouldCover(s.caller, ['openai/gpt-4o-mini', LOCAL]), true);
      assert.equal(await subscriptionWouldCover(s.caller, ['openai/gpt-4o-mini']), false);
      assert.equal(await subscriptionWouldCover({ ...s.caller, billingMode: 'paygo' }, [LOCAL]), false);
      assert.equal(await subscriptionWouldCover(only, ['openai/gpt-4o-mini']), true);
    });

    it('a used-up allowance says when it comes back: the next UTC midnight, or the period end', async () => {
      assert.equal(nextUtcMidnight(Date.UTC(2026, 0, 31, 23, 59, 59, 999)), Date.UTC(2026, 1, 1));
      assert.equal(nextUtcMidnight(Date.UTC(2026, 1, 1)), Date.UTC(2026, 1, 2));
      const daily = await subscriptionRow({ daily: 1, monthly: 10, dailyUsed: 1, monthlyUsed: 1 });
      const before = Date.now();
      await assert.rejects(claimAllowance({ caller: daily.caller, modelId: LOCAL }), (err: any) => {
        assert.equal(err.opts.details.resetAt, nextUtcMidnight(before));
        const wait = (nextUtcMidnight(before) - before) / 1000;
        assert.ok(err.opts.retryAfterSeconds >= 1 && Math.abs(err.opts.retryAfterSeconds - wait) <= 2, String(wait));
        assert.match(err.message, /daily allowance is used up \(1 of 1 operations\)/);
        return true;
      });
      const monthly = await subscriptionRow({ daily: 10, monthly: 1, monthlyUsed: 1 });
      const { rows } = await db().pool.query(`SELECT period_end FROM subscriptions WHERE id = $1`, [monthly.id]);
      await assert.rejects(claimAllowance({ caller: monthly.caller, modelId: LOCAL }), (err: any) => {
        assert.equal(err.opts.details.resetAt, rows[0].period_end.getTime());
        assert.ok(Math.abs(err.opts.retryAfterSeconds - 3600) <= 2, String(err.opts.retryAfterSeconds));
        assert.match(err.message, /monthly allowance is used up \(1 of 1 operations\)/);
        assert.match(err.message, /X-Billing-Mode: paygo/);
        return true;
      });
    });

    it('giving back: one operation each, never below 0, and nothing for an earlier day or period', async () => {
      const s = await subscriptionRow({ daily: 3, monthly: 10 });
      const claim = (await claimAllowance({ caller: s.caller, modelId: LOCAL }))!;
      await giveBack(claim);
      assert.deepEqual(await s.counters(), { daily_used: 0, monthly_used: 0 });
      await giveBack(claim); // a second give-back of the same claim cannot go below 0
      assert.deepEqual(await s.counters(), { daily_used: 0, monthly_used: 0 });
      const later = (await claimAllowance({ caller: s.caller, modelId: LOCAL }))!;
      await claimAllowance({ caller: s.caller, modelId: LOCAL });
      await giveBack({ ...later, periodNo: later.periodNo - 1, day: '2000-01-01' });
      assert.deepEqual(await s.counters(), { daily_used: 2, monthly_used: 2 });
      await giveBack(later);
      assert.deepEqual(await s.counters(), { daily_used: 1, monthly_used: 1 });
    });
  });

  it('coverage is cached per process and forgotten when another process announces a change', async () => {
    config.keyCacheTtlMs = 10 * 60_000; // only the announcement can make this process see the change
    const listener = listenForChanges(config.databaseUrl!, { [SUBSCRIPTION_CHANGES]: forgetCoverage });
    try {
      await untilListening(SUBSCRIPTION_CHANGES);
      const { accountId } = await newAccount('1');
      const caller = { accountId, billingMode: 'auto' as const };
      assert.equal(await claimAllowance({ caller, modelId: LOCAL }), undefined); // no subscription: cached
      // another process subscribes the account (its row written behind this process's back)
      const id = `sub_${randomUUID().replace(/-/g, '').slice(0, 24)}`;
      await db().pool.query(
        `INSERT INTO subscriptions (id, account_id, plan_id, status, period_no, period_start, period_end, price,
           daily_limit, monthly_limit, models)
         VALUES ($1, $2, 'race', 'active', 1, now(), now() + interval '1 hour', 100000000, 7, 100, $3)`,
        [id, accountId, [LOCAL]],
      );
      // the cache answers, not the database: still not covered
      assert.equal(await claimAllowance({ caller, modelId: LOCAL }), undefined);
      await db().pool.query('SELECT pg_notify($1, $2)', [SUBSCRIPTION_CHANGES, accountId]);
      const claim = await until(
        () => claimAllowance({ caller, modelId: LOCAL }),
        (c) => c !== undefined,
        3000,
        'the announcement',
      );
      assert.equal(claim?.subscriptionId, id);
      await db().pool.query(`UPDATE subscriptions SET status = 'inactive' WHERE id = $1`, [id]);
    } finally {
      await listener.stop();
    }
  });

  it('a period ending with an empty balance moves to grace, then inactive', async () => {
    config.subscriptionGraceSeconds = 2;
    config.subscriptionRetrySeconds = 1;
    const { key, accountId } = await newAccount('0.10');
    const res = await subscribe(key, 'short');
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const periodEnd = Date.parse(res.body.subscription.currentPeriodEnd);
    assert.equal(await usdOf(accountId), 0n);
    const grace = await until(
      () => usage(key),
      (u) => u.state === 'grace',
      15_000,
      'grace',
    );
    assert.equal(grace.active, true);
    assert.equal(Date.parse(grace.graceUntil), periodEnd + 2000);
    // still usable in grace
    assert.equal((await chat(key)).status, 200);
    const over = await until(
      () => usage(key),
      (u) => u.state === 'inactive',
      15_000,
      'inactive',
    );
    assert.equal(over.active, false);
    assert.equal(over.graceUntil, null);
    assert.ok(Date.now() >= periodEnd + 2000);
    assert.equal((await periodCharges(res.body.subscription.id)).length, 1);
    // inactive: requests pay as they go (and this account cannot)
    assert.equal((await chat(key)).status, 402);
  });

  it('grace ends when the balance pays: on a retry, or at once by subscribing again', async () => {
    config.subscriptionGraceSeconds = 60;
    config.subscriptionRetrySeconds = 1;
    const { key, accountId } = await newAccount('0.10');
    const res = await subscribe(key, 'short');
    const id = res.body.subscription.id;
    await until(
      () => usage(key),
      (u) => u.state === 'grace',
      15_000,
      'grace',
    );
    await credit({ accountId, currency: 'USD', amount: usd('0.15'), reason: 'top-up', idempotencyKey: `t:${id}` });
    const back = await until(
      () => usage(key),
      (u) => u.state === 'active',
      15_000,
      'paid on a retry',
    );
    assert.equal(back.graceUntil, null);
    assert.deepEqual(
      (await periodCharges(id)).map((c) => c.idempotency_key),
      [`subscription:${id}:1`, `subscription:${id}:2`],
    );
    // period 2 ends on an empty balance, and the retries are now far apart
    config.subscriptionRetrySeconds = 600;
    await until(
      () => usage(key),
      (u) => u.state === 'grace',
      15_000,
      'grace again',
    );
    const broke = await subscribe(key, 'short');
    assert.equal(broke.status, 402, JSON.stringify(broke.body));
    assert.equal((await usage(key)).state, 'grace');
    await credit({ accountId, currency: 'USD', amount: usd('0.10'), reason: 'top-up', idempotencyKey: `t2:${id}` });
    const again = await subscribe(key, 'short');
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.equal(again.body.subscription.id, id);
    assert.equal(again.body.subscription.state, 'active');
    assert.equal((await periodCharges(id)).length, 3);
    assert.equal((await subscribe(key, 'daily3')).status, 409);
    assert.equal((await call(key, 'POST', '/api/subscription/v1/cancel')).status, 200);
    await until(
      () => usage(key),
      (u) => u.state === 'inactive',
      15_000,
      'cancelled',
    );
    assert.equal((await periodCharges(id)).length, 3);
    // 0.10 + 0.15 + 0.10 in, three periods of 0.10 out
    assert.equal((await balances(accountId))!.USD.amount, usd('0.05'));
  });

  it('cancel ends the subscription at its period end, charging nothing more', async () => {
    const { key, accountId } = await newAccount('1');
    const res = await subscribe(key, 'short');
    const cancelled = await call(key, 'POST', '/api/subscription/v1/cancel');
    assert.equal(cancelled.status, 200, JSON.stringify(cancelled.body));
    assert.equal(cancelled.body.subscription.cancelAtPeriodEnd, true);
    assert.equal(cancelled.body.subscription.state, 'active');
    assert.equal((await chat(key)).body.cost, 0);
    const over = await until(
      () => usage(key),
      (u) => u.state === 'inactive',
      15_000,
      'inactive',
    );
    assert.equal(over.active, false);
    assert.equal((await periodCharges(res.body.subscription.id)).length, 1);
    assert.equal(await usdOf(accountId), usd('0.90'));
    const none = await call(key, 'POST', '/api/subscription/v1/cancel');
    assert.equal(none.status, 404);
  });
});
