// The unit tier's guard (test/support/unitGuard.ts), checked: a unit test that reaches for the
// database or the network fails at once, saying why, instead of passing on a machine that has them.
// `npm test` runs test/unit/ too, without the guard (its workers have a database): skipped there.
import assert from 'node:assert/strict';
import net from 'node:net';
import pg from 'pg';
import { db } from '../../activities/db.js';

describe('the unit tier has no database and no network', () => {
  before(function () {
    if (process.env.SWITCHYARD_UNIT_GUARD !== '1') this.skip();
  });

  it('refuses a TCP connection, naming where it went', () =>
    assert.throws(() => net.connect(5432, '127.0.0.1'), /a unit test opened a connection.*5432/));

  it('refuses the database, through the driver too', async () => {
    assert.match(process.env.DATABASE_URL ?? '', /unit-tests-have-no-database/);
    assert.throws(() => db(), /database not connected/);
    const client = new pg.Client({ connectionString: 'postgresql://postgres@127.0.0.1:5432/postgres' });
    await assert.rejects(client.connect(), /a unit test opened a connection/);
  });

  it('refuses fetch', async () =>
    await assert.rejects(fetch('http://127.0.0.1:5432/'), (e: Error) =>
      /a unit test opened a connection/.test(String((e.cause as Error | undefined)?.message ?? e.message)),
    ));
});
