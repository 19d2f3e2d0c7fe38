// The JSON the API writes: numbers in plain decimal notation (`0.0000009`, not `9e-7`), strings untouched.
import assert from 'node:assert/strict';
import { plainDecimals, toJson } from '../../activities/json.js';

describe('plain-decimal JSON (activities/json.ts)', () => {
  it('writes small numbers as plain decimals, exactly', () => {
    assert.equal(toJson(9e-7), '0.0000009');
    assert.equal(toJson(1e-7), '0.0000001');
    assert.equal(toJson(1.5e-9), '0.0000000015');
    assert.equal(toJson(1.23456789e-7), '0.000000123456789');
    assert.equal(toJson(-2.5e-8), '-0.000000025');
    assert.equal(toJson(0.000001), '0.000001'); // JSON.stringify's own threshold: already plain
  });

  it('leaves everything else as JSON.stringify writes it', () => {
    for (const v of [0, -0, 1, 0.5, 123.456, 1e21, -1e21, 1.5e300, 'text', true, null, [], {}])
      assert.equal(toJson(v), JSON.stringify(v));
    assert.equal(toJson(1e21), '1e+21'); // large numbers: no amount is that large
  });

  it('rewrites numbers in nested values, not text inside strings (keys included)', () => {
    const value = {
      cost: 7.88e-7,
      usage: { list: [1e-7, 'x 1e-7 y', { deep: -3e-10 }] },
      'key 1e-7': 'quote \\" then 2e-8 and "escaped" 4e-9',
      text: 'a re-entry at 1e-7 e- -1e-7',
    };
    const json = toJson(value);
    assert.equal(
      json,
      '{"cost":0.000000788,"usage":{"list":[0.0000001,"x 1e-7 y",{"deep":-0.0000000003}]},' +
        '"key 1e-7":"quote \\\\\\" then 2e-8 and \\"escaped\\" 4e-9","text":"a re-entry at 1e-7 e- -1e-7"}',
    );
    assert.deepEqual(JSON.parse(json), value); // the same values, read back
  });

  it('reads exponents as other writers print them, and keeps text without a negative exponent as it is', () => {
    assert.equal(plainDecimals('[1.5e-1,5e-0,1000e-2,2.5e-07,-0e-5]'), '[0.15,5,10,0.00000025,-0]');
    const untouched = '{"a":"re-use","b":1e+21,"c":1E-7}'; // an upstream's uppercase E is left as sent
    assert.equal(plainDecimals(untouched), untouched);
    const noExponent = '{"a":1,"b":"x"}';
    assert.equal(plainDecimals(noExponent), noExponent);
    assert.equal(plainDecimals('[DONE]'), '[DONE]');
  });

  it('every double it rewrites reads back as the same number', () => {
    for (let i = 0; i < 2000; i++) {
      const n = (Math.random() - 0.5) * 10 ** -(7 + Math.floor(Math.random() * 20));
      const text = toJson(n);
      assert.doesNotMatch(text, /e/, text);
      assert.equal(Number(text), n, `${n} → ${text}`);
    }
  });
});
