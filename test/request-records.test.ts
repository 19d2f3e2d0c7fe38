// Request records are written as one statement of column arrays (activities/metering/records.ts),
// each sent as the text of its array literal: whatever a field holds, PostgreSQL must read back
// exactly the values the gateway had.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { db } from '../activities/db.js';
import { arrayLiteral } from '../activities/metering/records.js';

describe('request records: column arrays (activities/metering/records.ts)', () => {
  it('PostgreSQL reads every literal back as the values it was made from', async () => {
    const texts = [
      'req_0123abcd',
      'openai/gpt-4o-mini',
      '',
      'NULL',
      'a "quoted" model',
      'back\\slash\\\\',
      '\\"',
      '{braces}, commas',
      ' spaces ',
      'tab\tnew\nline',
      'ünïcödé 🚀',
      null,
    ];
    const { rows } = await db().pool.query('SELECT $1::text[] AS t, $2::int[] AS n, $3::uuid[] AS u', [
      arrayLiteral(texts),
      arrayLiteral([0, 17, null, -3]),
      arrayLiteral([randomUUID().toUpperCase(), null]),
    ]);
    assert.deepEqual(rows[0].t, texts);
    assert.deepEqual(rows[0].n, [0, 17, null, -3]);
    assert.equal(rows[0].u.length, 2);
    assert.equal(rows[0].u[1], null);
    assert.equal(arrayLiteral([]), '{}');
  });
});
