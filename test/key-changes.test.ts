import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { config } from '../activities/config.js';
import { createAccount } from '../activities/accounts/accounts.js';
import {
  createKey,
  displayPrefix,
  forgetKeys,
  resolveKey,
  revokeKey,
  setKeyStatus,
} from '../activities/accounts/keys.js';
import {
  announceKeyChanges,
  KEY_CHANGES,
  listenForChanges,
  type ChangeListener,
} from '../activities/accounts/cacheChanges.js';
import { until, untilListening } from './support/wait.js';

const run = promisify(execFile);
const ops = fileURLToPath(new URL('../bin/ops.ts', import.meta.url));

/** `npm run ops -- keys revoke <prefix>` in a process of its own, as an operator would. */
async function revokeElsewhere(key: string): Promise<void> {
  const r = await run(process.execPath, ['--import', 'tsx/esm', ops, 'keys', 'revoke', displayPrefix(key)], {
    env: { ...process.env, DATABASE_URL: config.databaseUrl },
  });
  assert.match(r.stdout, /1 key\(s\) revoked/);
}

const revoked = async (key: string) => {
  const r = await resolveKey(key);
  return r.caller === null && r.reason === 'revoked';
};

describe('key changes reach every process (LISTEN/NOTIFY)', function () {
  this.timeout(60_000);
  const ttl = config.keyCacheTtlMs;
  let listener: ChangeListener | undefined;
  // a long cache TTL, so only the announcement can make this process see the change in time
  before(() => (config.keyCacheTtlMs = 10 * 60_000));
  after(async () => {
    config.keyCacheTtlMs = ttl;
    await listener?.stop();
  });

  const freshKey = async () => {
    const account = await createAccount(`key-changes-${process.pid}-${Math.random().toString(36).slice(2, 8)}`);
    const { key } = await createKey(account.id);
    assert.ok((await resolveKey(key)).caller, 'the key resolves (and is now cached)');
    return key;
  };

  it('a key revoked by another process is refused here at once, not when the cache entry expires', async () => {
    listener = listenForChanges(config.databaseUrl!, { [KEY_CHANGES]: forgetKeys });
    await untilListening(KEY_CHANGES);
    const key = await freshKey();
    await revokeElsewhere(key);
    assert.ok(await until(() => revoked(key), Boolean, 3000, 'the revocation'), 'the revocation arrived');
  });

  it('a listener whose connection is cut reconnects and hears the next change', async () => {
    const key = await freshKey();
    const { db } = await import('../activities/db.js');
    const cut = await db().pool.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN switchyard_key_changes%'`,
    );
    assert.equal(cut.rowCount, 1, 'one listening session was cut');
    // back within a second or so; on its return it forgets every cached key (announcements may have been missed)
    assert.ok(
      await until(
        async () =>
          (
            await db().pool.query(
              `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN switchyard_key_changes%'`,
            )
          ).rowCount === 1,
        Boolean,
        5000,
        'the listener back',
      ),
      'listening again',
    );
    const other = await freshKey();
    await revokeElsewhere(other);
    assert.ok(
      await until(() => revoked(other), Boolean, 3000, 'the revocation'),
      'the revocation after the reconnect arrived',
    );
    assert.ok((await resolveKey(key)).caller, 'an unchanged key still works');
  });

  it('without a listener the cached key is still trusted (what the listener is for)', async () => {
    await listener?.stop();
    listener = undefined;
    const key = await freshKey();
    await revokeElsewhere(key);
    await new Promise((r) => setTimeout(r, 500)); // a fixed time on purpose: nothing may arrive within it
    assert.ok((await resolveKey(key)).caller, 'still served from the cache');
    forgetKeys(null);
    assert.ok(await revoked(key));
  });

  it('this process forgets a key it revokes or deactivates at once, with no listener and a long TTL', async () => {
    assert.equal(listener, undefined);
    const account = await createAccount(`key-changes-${process.pid}-${Math.random().toString(36).slice(2, 8)}`);
    const byId = await createKey(account.id);
    const byPrefix = await createKey(account.id);
    const paused = await createKey(account.id);
    for (const k of [byId, byPrefix, paused]) assert.ok((await resolveKey(k.key)).caller, 'cached');
    assert.equal(await revokeKey(byId.record.id), 1);
    assert.ok(await revoked(byId.key));
    assert.equal(await revokeKey(displayPrefix(byPrefix.key), account.id), 1);
    assert.ok(await revoked(byPrefix.key));
    await setKeyStatus(paused.record.id, 'inactive');
    const inactive = await resolveKey(paused.key);
    assert.ok(inactive.caller === null && inactive.reason === 'inactive');
    await setKeyStatus(paused.record.id, 'active');
    assert.ok((await resolveKey(paused.key)).caller, 'active again at once');
  });

  it('an announcement of many keys reaches a listener whole, however it is split into notices', async () => {
    const heard: string[] = [];
    const many = listenForChanges(config.databaseUrl!, { [KEY_CHANGES]: (h) => heard.push(...(h ?? [])) });
    try {
      await until(
        async () => {
          await announceKeyChanges(['ping']);
          return heard.includes('ping');
        },
        Boolean,
        5000,
        'the listener',
      );
      for (const n of [1, 99, 100, 101, 250]) {
        const mine = () => heard.filter((h) => h.startsWith(`h${n}-`));
        const hashes = Array.from({ length: n }, (_, i) => `h${n}-${i}-`.padEnd(64, '0'));
        await announceKeyChanges(hashes);
        await until(
          async () => mine().length,
          (count) => count >= n,
          3000,
          `${n} hashes`,
        );
        await new Promise((r) => setTimeout(r, 50)); // nothing more, nothing twice
        assert.deepEqual(mine().sort(), [...hashes].sort(), `${n} hashes`);
      }
    } finally {
      await many.stop();
    }
  });
});
