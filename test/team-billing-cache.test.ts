// Whom a member bills to is cached per process (ledger/teamBudget.ts). A change made through this
// process's team functions is seen at once; a change made anywhere else (another process, an
// operator's SQL) reaches a listening process through the database's triggers and LISTEN/NOTIFY,
// well before the cache entry would expire.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { config } from '../activities/config.js';
import { db } from '../activities/db.js';
import { credit } from '../activities/ledger/ledger.js';
import { parseAmount } from '../activities/core/money.js';
import { createKey } from '../activities/accounts/keys.js';
import { forgetTeamBilling, teamBillingOf } from '../activities/ledger/teamBudget.js';
import { TEAM_BILLING_CHANGES, listenForChanges, type ChangeListener } from '../activities/accounts/cacheChanges.js';
import { useChatBench, type ChatBench } from './support/chatEnv.js';
import { keepConfig } from './support/keepConfig.js';
import { person, teamFixture, type TeamFixture } from './support/teams.js';
import { until, untilListening } from './support/wait.js';

const run = promisify(execFile);
const hello = { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'Say hello' }], max_tokens: 50 };

/** Run SQL from a process of its own (an operator, another API process), through plain `pg`. */
async function elsewhere(sql: string, values: unknown[]): Promise<void> {
  const script = `import pg from 'pg';
const c = new pg.Client({ connectionString: process.env.DATABASE_URL });
await c.connect();
await c.query(process.env.SQL, JSON.parse(process.env.VALUES));
await c.end();`;
  await run(process.execPath, ['--input-type=module', '-e', script], {
    env: { ...process.env, DATABASE_URL: config.databaseUrl, SQL: sql, VALUES: JSON.stringify(values) },
  });
}

/** Change rows without the triggers' announcements (replica mode skips triggers for this session). */
async function unannounced(sql: string, values: unknown[]): Promise<void> {
  const c = await db().pool.connect();
  try {
    await c.query('BEGIN');
    await c.query('SET LOCAL session_replication_role = replica');
    await c.query(sql, values);
    await c.query('COMMIT');
  } finally {
    c.release();
  }
}

describe('the team billing cache', function () {
  this.timeout(120_000);
  keepConfig();
  const bench = useChatBench();
  let b: ChatBench;
  let listener: ChangeListener | undefined;
  before(async () => {
    b = bench();
    // a long TTL: only an announcement (or this process's own change) can make a change seen in time
    config.keyCacheTtlMs = 10 * 60_000;
    forgetTeamBilling(null);
  });
  afterEach(async () => {
    await listener?.stop();
    listener = undefined;
  });

  async function billedTeam(): Promise<TeamFixture & { key: string }> {
    const t = await teamFixture(b.base);
    await credit({
      accountId: t.owner.user.accountId,
      currency: 'USD',
      amount: parseAmount('5', 'USD'),
      reason: 'test funds',
      idempotencyKey: `test-funds:${t.owner.user.accountId}`,
    });
    const on = await t.member.b.req('PATCH', `/api/teams/${t.uuid}/members/self`, { bill_to_team: true });
    assert.equal(on.status, 200, JSON.stringify(on.body));
    const { key } = await createKey(t.member.user.accountId, { name: 'member key' });
    return { ...t, key };
  }

  async function listening() {
    listener = listenForChanges(config.databaseUrl!, { [TEAM_BILLING_CHANGES]: forgetTeamBilling });
    await untilListening(TEAM_BILLING_CHANGES); // its LISTEN done, and with it its reconnect-time forgetting
  }

  it('answers from memory: a change nobody announces is not seen', async () => {
    const t = await billedTeam();
    assert.equal((await teamBillingOf(t.member.user.id))?.status, 'active');
    await unannounced(`UPDATE teams SET status = 'paused' WHERE id = $1`, [t.id]);
    assert.equal((await teamBillingOf(t.member.user.id))?.status, 'active', 'still the cached answer');
    forgetTeamBilling([`t${t.id}`]);
    assert.equal((await teamBillingOf(t.member.user.id))?.status, 'paused');
  });

  it('sees changes made by another process within moments: team status, settings, membership, bill_to_team', async () => {
    await listening();
    const t = await billedTeam();
    const member = t.member.user.id;
    const billing = () => teamBillingOf(member);
    // until() fails the test past 3 s (the cache entry itself would last 10 minutes)
    const seen = (what: string, test: (x: Awaited<ReturnType<typeof billing>>) => boolean) =>
      until(billing, test, 3000, what);

    assert.equal((await billing())?.status, 'active');
    await elsewhere(`UPDATE teams SET status = 'paused' WHERE id = $1`, [t.id]);
    await seen('the pause', (x) => x?.status === 'paused');
    // and requests are refused for it at once
    const refused = await b.post(t.key, hello);
    assert.equal(refused.status, 403);
    assert.equal((await refused.json()).error.code, 'team_paused');

    await elsewhere(`UPDATE teams SET status = 'active', allowed_models = $2 WHERE id = $1`, [
      t.id,
      JSON.stringify({ [hello.model]: false }),
    ]);
    await seen('the allowed models', (x) => x?.status === 'active' && x.allowedModels?.[hello.model] === false);
    await elsewhere(`UPDATE teams SET usage_limit = 7, usage_limit_enforced = true WHERE id = $1`, [t.id]);
    await seen('the team limit', (x) => x?.teamLimit === 7n);
    await elsewhere('UPDATE team_members SET usage_limit = 3, usage_limit_enforced = true WHERE user_id = $1', [
      member,
    ]);
    await seen('the member limit', (x) => x?.memberLimit === 3n);

    await elsewhere('UPDATE team_members SET bill_to_team = false WHERE user_id = $1', [member]);
    await seen('bill_to_team off', (x) => x === null);
    await elsewhere('UPDATE team_members SET bill_to_team = true WHERE user_id = $1', [member]);
    await seen('bill_to_team on again', (x) => x?.teamId === t.id);
    await elsewhere('DELETE FROM team_members WHERE user_id = $1 AND team_id = $2', [member, t.id]);
    await seen('the member removed', (x) => x === null);

    // the owner's other member, then the whole team deleted
    const target = t.target.user.id;
    await elsewhere('UPDATE team_members SET bill_to_team = true WHERE user_id = $1', [target]);
    await until(
      () => teamBillingOf(target),
      (x) => x?.teamId === t.id,
      3000,
      'billing on',
    );
    await elsewhere('DELETE FROM teams WHERE id = $1', [t.id]);
    assert.equal(
      await until(
        () => teamBillingOf(target),
        (x) => x === null,
        3000,
        'the team deleted',
      ),
      null,
    );
  });

  it('a change made through this process is seen by its next request, with nobody listening', async () => {
    const t = await billedTeam();
    assert.equal((await b.post(t.key, hello)).status, 200);
    const off = await t.owner.b.req('PATCH', `/api/teams/${t.uuid}/allowed-models`, {
      allowed_models: { [hello.model]: false },
    });
    assert.equal(off.status, 200, JSON.stringify(off.body));
    const refused = await b.post(t.key, hello);
    assert.equal(refused.status, 403);
    assert.equal((await refused.json()).error.code, 'model_not_allowed');

    const other = await person(b.base, 'Newcomer');
    assert.equal(await teamBillingOf(other.user.id), null); // cached: bills to nobody
    await db().pool.query(`INSERT INTO team_members (team_id, user_id, role) VALUES ($1, $2, 'member')`, [
      t.id,
      other.user.id,
    ]);
    forgetTeamBilling([`u${other.user.id}`]); // what the trigger's announcement would do
    const on = await other.b.req('PATCH', `/api/teams/${t.uuid}/members/self`, { bill_to_team: true });
    assert.equal(on.status, 200);
    assert.equal((await teamBillingOf(other.user.id))?.teamId, t.id);
    const left = await other.b.req('POST', `/api/teams/${t.uuid}/leave`, {});
    assert.equal(left.status, 200, JSON.stringify(left.body));
    assert.equal(await teamBillingOf(other.user.id), null);
  });
});
