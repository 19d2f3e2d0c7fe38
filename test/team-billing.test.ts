// Billing to a team: a member with bill_to_team is charged to the owner's account (key or session),
// the ledger entry names the team and the member, the pricing extension says so, the usage route
// sums by actor; allowed models, paused teams, and monthly limits that hold under a race of many
// members at once.
import assert from 'node:assert/strict';
import { useChatBench, type ChatBench } from './support/chatEnv.js';
import { person, teamFixture, type TeamFixture } from './support/teams.js';
import { createKey } from '../activities/accounts/keys.js';
import { credit } from '../activities/ledger/ledger.js';
import { releaseExpiredHolds } from '../activities/ledger/holds.js';
import {
  refundTeamBudget,
  releaseTeamBudget,
  reserveTeamBudget,
  settleTeamBudget,
  teamBillingOf,
} from '../activities/ledger/teamBudget.js';
import { formatAmount, parseAmount } from '../activities/core/money.js';
import { db } from '../activities/db.js';
import { assertBooksBalance } from './support/books.js';

const MODEL = 'openai/gpt-4o-mini';
const hello = { model: MODEL, messages: [{ role: 'user', content: 'Say hello' }], max_tokens: 50 };

describe('billing to a team', function () {
  this.timeout(120_000);
  const bench = useChatBench();
  let b: ChatBench;
  before(() => (b = bench()));

  /** A team whose owner holds `usd`, and a member billing to it with an API key of their own. */
  async function billedTeam(usd = '5'): Promise<TeamFixture & { key: string }> {
    const t = await teamFixture(b.base);
    await credit({
      accountId: t.owner.user.accountId,
      currency: 'USD',
      amount: parseAmount(usd, 'USD'),
      reason: 'test funds',
      idempotencyKey: `test-funds:${t.owner.user.accountId}`,
    });
    const on = await t.member.b.req('PATCH', `/api/teams/${t.uuid}/members/self`, { bill_to_team: true });
    assert.equal(on.status, 200, JSON.stringify(on.body));
    const { key } = await createKey(t.member.user.accountId, { name: 'member key' });
    return { ...t, key };
  }

  const balance = async (accountId: string) => (await b.usd(accountId)).amount;

  it("charges the owner's account, names the actor, and reports billedToTeam", async () => {
    const t = await billedTeam();
    const r = await b.post(t.key, hello);
    assert.equal(r.status, 200);
    const body = await r.json();
    const pricing = body.x_nanogpt_pricing;
    assert.equal(pricing.billedToTeam, true);
    assert.equal(pricing.billedTeamId, t.uuid);
    assert.equal(pricing.billedTeamName, t.name);
    const cost = parseAmount(String(body.cost), 'USD');
    assert.ok(cost > 0n);
    assert.equal(await balance(t.owner.user.accountId), parseAmount('5', 'USD') - cost);
    assert.equal(await balance(t.member.user.accountId), 0n);
    const { rows } = await db().pool.query(
      `SELECT account_id, team_id, actor_user_id, amount, reason FROM ledger_entries
       WHERE kind = 'charge' AND team_id = $1`,
      [t.id],
    );
    assert.deepEqual(
      rows.map((e) => [e.account_id, e.actor_user_id, BigInt(e.amount)]),
      [[t.owner.user.accountId, t.member.user.id, -cost]],
    );
    assert.match(rows[0].reason, new RegExp(`by user ${t.member.user.id} for team "${t.name}"`));
    // the session cookie bills the same way
    const s = await t.member.b.post('/api/v1/chat/completions', hello);
    assert.equal(s.status, 200, JSON.stringify(s.body));
    assert.equal(s.body.x_nanogpt_pricing.billedTeamId, t.uuid);
    // usage by actor, from the ledger; this month's spend in the member list
    const usage = await t.member.b.get(`/api/teams/${t.uuid}/usage`);
    assert.equal(usage.status, 200);
    const total = cost + parseAmount(String(s.body.cost), 'USD');
    assert.deepEqual(usage.body.byActor, [
      {
        actorSessionId: t.member.user.id,
        displayName: 'Member',
        totalAmount: Number(formatAmount(total, 'USD')),
        currency: 'USD',
      },
    ]);
    assert.deepEqual(usage.body.totals, [{ totalAmount: Number(formatAmount(total, 'USD')), currency: 'USD' }]);
    const before = await t.member.b.get(`/api/teams/${t.uuid}/usage?from=2000-01-01&to=2000-01-31`);
    assert.deepEqual(before.body, { byActor: [], totals: [] });
    const members = (await t.owner.b.get(`/api/teams/${t.uuid}/members`)).body.members;
    const me = members.find((m: any) => m.sessionId === t.member.user.id);
    assert.equal(me.usage_usd_monthly, Number(formatAmount(total, 'USD')));
    // bill_to_team off: the member pays again (and has nothing)
    await t.member.b.req('PATCH', `/api/teams/${t.uuid}/members/self`, { bill_to_team: false });
    const own = await b.post(t.key, hello);
    assert.equal(own.status, 402);
  });

  it('refuses models the team does not allow (403 model_not_allowed) and a paused or suspended team', async () => {
    const t = await billedTeam();
    await t.admin.b.req('PATCH', `/api/teams/${t.uuid}/allowed-models`, { allowed_models: { [MODEL]: false } });
    const r = await b.post(t.key, hello);
    assert.equal(r.status, 403);
    assert.equal((await r.json()).error.code, 'model_not_allowed');
    await t.admin.b.req('PATCH', `/api/teams/${t.uuid}/allowed-models`, { allowed_models: null });
    for (const status of ['paused', 'suspended']) {
      await t.admin.b.req('PATCH', `/api/teams/${t.uuid}`, { status });
      const refused = await b.post(t.key, hello);
      assert.equal(refused.status, 403);
      assert.equal((await refused.json()).error.code, `team_${status}`);
    }
    await t.admin.b.req('PATCH', `/api/teams/${t.uuid}`, { status: 'active' });
    assert.equal((await b.post(t.key, hello)).status, 200);
    assert.equal(b.openai.requests.length, 1);
    assert.equal(await balance(t.member.user.accountId), 0n);
  });

  /** The worst case one `hello` reserves (read off a hold). */
  async function worstCase(t: TeamFixture & { key: string }): Promise<bigint> {
    b.openai.defaults({ delayMs: 200 });
    const pending = b.post(t.key, hello);
    let amount: bigint | undefined;
    for (let i = 0; i < 100 && amount === undefined; i++) {
      const { rows } = await db().pool.query(
        `SELECT amount FROM team_budget_holds WHERE team_id = $1 AND status = 'active'`,
        [t.id],
      );
      if (rows[0]) amount = BigInt(rows[0].amount);
      else await new Promise((r) => setTimeout(r, 10));
    }
    assert.equal((await pending).status, 200);
    b.openai.defaults({});
    assert.ok(amount);
    return amount;
  }

  it('stops a member at their monthly limit (402) while others go on', async () => {
    const t = await billedTeam();
    const worst = await worstCase(t);
    const spent = async () =>
      BigInt(
        (
          await db().pool.query(
            `SELECT COALESCE(-SUM(amount), 0)::text AS s FROM ledger_entries WHERE team_id = $1 AND actor_user_id = $2`,
            [t.id, t.member.user.id],
          )
        ).rows[0].s,
      );
    const already = await spent();
    const setLimit = (limit: bigint) =>
      t.owner.b.req('PATCH', `/api/teams/${t.uuid}/members`, {
        sessionId: t.member.user.id,
        usage_limit_usd: Number(formatAmount(limit, 'USD')),
        usage_limit_enforced: true,
      });
    // less than one worst case left: refused before anything is reserved or sent
    await setLimit(already + worst / 2n);
    const sent = b.openai.requests.length;
    const refused = await b.post(t.key, hello);
    assert.equal(refused.status, 402);
    const err = (await refused.json()).error;
    assert.equal(err.code, 'team_usage_limit_exceeded');
    assert.match(err.message, /your monthly limit/);
    assert.equal(b.openai.requests.length, sent);
    // room for exactly one worst case: one passes, and what it spent leaves less than another
    const limit = already + worst;
    await setLimit(limit);
    assert.equal((await b.post(t.key, hello)).status, 200);
    assert.equal((await b.post(t.key, hello)).status, 402);
    // the target member, also billing to the team, has no limit of their own
    await t.target.b.req('PATCH', `/api/teams/${t.uuid}/members/self`, { bill_to_team: true });
    assert.equal((await t.target.b.post('/api/v1/chat/completions', hello)).status, 200);
    assert.ok((await spent()) <= limit);
    const self = (await t.member.b.get(`/api/teams/${t.uuid}/members/self`)).body;
    assert.equal(self.effective_usage_limit_usd, Number(formatAmount(limit, 'USD')));
    // a limit finer than the nano-dollar is cut to it, not refused
    const fine = await t.owner.b.req('PATCH', `/api/teams/${t.uuid}/members`, {
      sessionId: t.member.user.id,
      usage_limit_usd: 0.1234567891,
    });
    assert.equal(fine.status, 200, JSON.stringify(fine.body));
    const cut = (await t.member.b.get(`/api/teams/${t.uuid}/members/self`)).body;
    assert.equal(cut.effective_usage_limit_usd, 0.123456789);
  });

  it("a member's own limit wins over the team's default, whether higher or lower", async () => {
    const t = await billedTeam();
    const worst = await worstCase(t);
    const usdOf = (n: bigint) => Number(formatAmount(n, 'USD'));
    const setDefault = async (limit: bigint) => {
      const r = await t.owner.b.req('PATCH', `/api/teams/${t.uuid}/settings`, {
        default_member_usage_limit_usd: usdOf(limit),
        usage_limit_enforced: true,
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
    };
    const setOwn = async (limit: bigint) => {
      const r = await t.owner.b.req('PATCH', `/api/teams/${t.uuid}/members`, {
        sessionId: t.member.user.id,
        usage_limit_usd: usdOf(limit),
        usage_limit_enforced: true,
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
    };
    await t.target.b.req('PATCH', `/api/teams/${t.uuid}/members/self`, { bill_to_team: true });
    const target = () => t.target.b.post('/api/v1/chat/completions', hello);
    // the default leaves less than one worst case; the member's own limit leaves room for many
    await setDefault(worst / 2n);
    await setOwn(parseAmount('1', 'USD'));
    assert.equal((await teamBillingOf(t.member.user.id))?.memberLimit, parseAmount('1', 'USD'));
    assert.equal((await b.post(t.key, hello)).status, 200);
    assert.equal((await target()).status, 402); // no limit of their own: the default holds
    // and the other way round: a generous default, the member's own limit too small
    await setDefault(parseAmount('1', 'USD'));
    await setOwn(worst / 2n);
    assert.equal((await teamBillingOf(t.member.user.id))?.memberLimit, worst / 2n);
    const refused = await b.post(t.key, hello);
    assert.equal(refused.status, 402);
    assert.equal((await refused.json()).error.code, 'team_usage_limit_exceeded');
    assert.equal((await target()).status, 200);
    await assertBooksBalance();
  });

  it('the budgets at their limits, to the nano-dollar: exactly at a limit passes, one nano over is refused', async () => {
    const t = await teamFixture(b.base);
    const budget = (memberLimit: bigint | null) => ({
      teamId: t.id,
      teamUuid: t.uuid,
      teamName: t.name,
      status: 'active' as const,
      ownerAccountId: t.owner.user.accountId,
      allowedModels: null,
      memberLimit,
      teamLimit: 1500n,
    });
    const m = { b: budget(1000n), id: t.member.user.id };
    const o = { b: budget(null), id: t.target.user.id };
    const req = () => `team-budget-test-${Math.random().toString(36).slice(2)}`;
    const r1 = req();
    assert.deepEqual(await reserveTeamBudget(m.b, m.id, r1, 1000n), { ok: true });
    assert.deepEqual(await reserveTeamBudget(m.b, m.id, req(), 1n), {
      ok: false,
      scope: 'member',
      limit: 1000n,
      used: 1000n,
    });
    const r3 = req();
    assert.deepEqual(await reserveTeamBudget(o.b, o.id, r3, 500n), { ok: true });
    assert.deepEqual(await reserveTeamBudget(o.b, o.id, req(), 1n), {
      ok: false,
      scope: 'team',
      limit: 1500n,
      used: 1500n,
    });
    await releaseTeamBudget(r1);
    const r6 = req();
    assert.deepEqual(await reserveTeamBudget(o.b, o.id, r6, 1000n), { ok: true });
    // exactly the member's limit, but past the team's: the team's limit is the one named
    assert.deepEqual(await reserveTeamBudget(m.b, m.id, req(), 1000n), {
      ok: false,
      scope: 'team',
      limit: 1500n,
      used: 1500n,
    });
    await settleTeamBudget(r3, 200n);
    const r8 = req();
    assert.deepEqual(await reserveTeamBudget(m.b, m.id, r8, 300n), { ok: true }); // the team exactly full again
    const { rows } = await db().pool.query(
      `SELECT user_id, spent::text, held::text FROM team_usage WHERE team_id = $1 ORDER BY user_id`,
      [t.id],
    );
    assert.deepEqual(
      rows.map((r) => [r.user_id, r.spent, r.held]),
      [
        [0, '200', '1300'],
        [Math.min(m.id, o.id), ...(m.id < o.id ? ['0', '300'] : ['200', '1000'])],
        [Math.max(m.id, o.id), ...(m.id < o.id ? ['200', '1000'] : ['0', '300'])],
      ],
    );
    for (const r of [r6, r8]) await releaseTeamBudget(r);
  });

  it('a claim is settled, released or refunded once each, and only a settled one is refunded', async () => {
    const t = await teamFixture(b.base);
    const budget = {
      teamId: t.id,
      teamUuid: t.uuid,
      teamName: t.name,
      status: 'active' as const,
      ownerAccountId: t.owner.user.accountId,
      allowedModels: null,
      memberLimit: 1000n,
      teamLimit: 1000n,
    };
    const userId = t.member.user.id;
    const sums = async () =>
      (
        await db().pool.query(
          `SELECT user_id, spent::text, held::text FROM team_usage WHERE team_id = $1 ORDER BY user_id`,
          [t.id],
        )
      ).rows.map((r) => [r.spent, r.held]);
    const claim = async (requestId: string) =>
      (await db().pool.query(`SELECT status, charged::text FROM team_budget_holds WHERE request_id = $1`, [requestId]))
        .rows[0];
    const id = Math.random().toString(36).slice(2);
    const settled = `settle-${id}`;
    const released = `release-${id}`;
    assert.deepEqual(await reserveTeamBudget(budget, userId, settled, 300n), { ok: true });
    await settleTeamBudget(settled, 200n);
    await settleTeamBudget(settled, 200n); // a second settlement changes nothing
    await releaseTeamBudget(settled); // nor does a release after it
    assert.deepEqual(await claim(settled), { status: 'settled', charged: '200' });
    assert.deepEqual(await sums(), [
      ['200', '0'],
      ['200', '0'],
    ]);
    await refundTeamBudget(settled);
    await refundTeamBudget(settled);
    assert.deepEqual(await claim(settled), { status: 'refunded', charged: '200' });
    assert.deepEqual(await sums(), [
      ['0', '0'],
      ['0', '0'],
    ]);
    assert.deepEqual(await reserveTeamBudget(budget, userId, released, 1000n), { ok: true });
    await releaseTeamBudget(released);
    await refundTeamBudget(released); // nothing was spent: nothing to refund
    await settleTeamBudget(released, 500n); // too late: the claim is closed
    assert.deepEqual(await claim(released), { status: 'released', charged: '0' });
    assert.deepEqual(await sums(), [
      ['0', '0'],
      ['0', '0'],
    ]);
  });

  it('holds the team limit under a race of many members at once, and the books balance', async () => {
    const t = await billedTeam('50');
    const worst = await worstCase(t);
    const members = await Promise.all(Array.from({ length: 8 }, (_, i) => person(b.base, `Racer ${i}`)));
    await db().pool.query(
      `INSERT INTO team_members (team_id, user_id, role, bill_to_team) SELECT $1, unnest($2::int[]), 'member', true`,
      [t.id, members.map((m) => m.user.id)],
    );
    const keys = await Promise.all(members.map(async (m) => (await createKey(m.user.accountId)).key));
    const { rows } = await db().pool.query(
      `SELECT COALESCE(-SUM(amount), 0)::text AS s FROM ledger_entries WHERE team_id = $1`,
      [t.id],
    );
    const before = BigInt(rows[0].s);
    // room for exactly 5 worst cases at once: 40 requests race for it while each takes 3 s upstream
    // (so all of them reserve before any settles)
    const limit = before + 5n * worst + worst / 2n;
    await t.owner.b.req('PATCH', `/api/teams/${t.uuid}/settings`, {
      team_usage_limit_usd: Number(formatAmount(limit, 'USD')),
      usage_limit_enforced: true,
    });
    b.openai.defaults({ delayMs: 3000 });
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        b.post(keys[i % keys.length]!, hello).then(async (r) => [r.status, await r.json()]),
      ),
    );
    b.openai.defaults({});
    const ok = answers.filter(([s]) => s === 200);
    const refused = answers.filter(([s]) => s === 402);
    assert.equal(ok.length + refused.length, 40, JSON.stringify(answers.find(([s]) => s !== 200 && s !== 402)));
    assert.equal(ok.length, 5, `expected exactly 5 to fit, got ${ok.length}`);
    for (const [, body] of refused) assert.equal(body.error.code, 'team_usage_limit_exceeded');
    // the ledger, the usage counters and the limit agree
    const after = await db().pool.query(
      `SELECT COALESCE(-SUM(amount), 0)::text AS s FROM ledger_entries WHERE team_id = $1`,
      [t.id],
    );
    const spent = BigInt(after.rows[0].s);
    assert.ok(spent <= limit, `spent ${spent} > limit ${limit}`);
    const usage = await db().pool.query(
      `SELECT spent::text, held::text FROM team_usage WHERE team_id = $1 AND user_id = 0`,
      [t.id],
    );
    assert.equal(BigInt(usage.rows[0].spent), spent);
    assert.equal(usage.rows[0].held, '0');
    const open = await db().pool.query(`SELECT count(*)::int AS n FROM team_budget_holds WHERE status = 'active'`);
    assert.equal(open.rows[0].n, 0);
    await assertBooksBalance(t.owner.user.accountId);
    for (const m of members) assert.equal(await balance(m.user.accountId), 0n);
  });

  it("gives back a claim a crashed process left open, with the hold sweeper's run", async () => {
    const t = await billedTeam();
    const billing = (await teamBillingOf(t.member.user.id))!;
    assert.equal(billing.ownerAccountId, t.owner.user.accountId);
    const verdict = await reserveTeamBudget(billing, t.member.user.id, `req_crashed_${t.id}`, 1234n);
    assert.deepEqual(verdict, { ok: true });
    const held = async () =>
      (await db().pool.query('SELECT user_id, held::text FROM team_usage WHERE team_id = $1 ORDER BY user_id', [t.id]))
        .rows;
    assert.deepEqual(await held(), [
      { user_id: 0, held: '1234' },
      { user_id: t.member.user.id, held: '1234' },
    ]);
    await db().pool.query(
      `UPDATE team_budget_holds SET created_at = now() - interval '2 hours' WHERE request_id = $1`,
      [`req_crashed_${t.id}`],
    );
    await releaseExpiredHolds();
    assert.deepEqual(await held(), [
      { user_id: 0, held: '0' },
      { user_id: t.member.user.id, held: '0' },
    ]);
  });
});
