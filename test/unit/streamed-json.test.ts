// The streamed JSON reader (api/streamedJson.ts) against JSON.parse: the same items and fields
// whatever the chunk boundaries (down to a byte at a time, inside strings, escapes and multi-byte
// characters), the same refusals for what JSON.parse refuses, and the body limits counted as the
// bytes pass.
import assert from 'node:assert/strict';
import { RequestError } from '../../activities/core/errors.js';
import { readStreamedObject } from '../../api/streamedJson.js';

const LIMITS = { maxDepth: 64, maxValues: 100_000 };

async function* pieces(text: string, size: number): AsyncGenerator<Buffer> {
  const bytes = Buffer.from(text);
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}

async function read(text: string, size: number, limits = LIMITS) {
  const items: unknown[] = [];
  const out = await readStreamedObject(pieces(text, size), 'requests', limits, (item, i) => {
    assert.equal(i, items.length);
    items.push(item);
  });
  return { ...out, list: items };
}

async function refusal(text: string, size = 7, limits = LIMITS): Promise<RequestError> {
  try {
    await read(text, size, limits);
  } catch (err) {
    assert.ok(err instanceof RequestError, String(err));
    return err;
  }
  assert.fail(`accepted ${text.slice(0, 80)}`);
}

describe('streamed JSON bodies (one array read item by item)', () => {
  const valid = [
    '{"requests":[]}',
    ' { "requests" : [ 1 , "two", {"a":[1,2,{"b":"c\\"]}"}]}, [ ], null, true, -1.5e3 ] , "x" : {"y": "z"} } ',
    '{"a":1,"requests":[{"custom_id":"é€😀","params":{"t":"\\\\","u":"\\u00e9\\ud83d\\ude00"}}],"b":[{}]}',
    '{}',
    '{"other":"requests"}',
    '{"requests":"not an array"}',
  ];
  for (const text of valid) {
    it(`reads ${text.slice(0, 40)} as JSON.parse does, in pieces of any size`, async () => {
      const whole = JSON.parse(text);
      for (const size of [1, 2, 3, 5, 64, 1 << 20]) {
        const { fields, items, list } = await read(text, size);
        const { requests, ...rest } = whole;
        if (Array.isArray(requests)) {
          assert.deepEqual(list, requests);
          assert.equal(items, requests.length);
          assert.deepEqual(fields, rest);
        } else {
          assert.equal(items, undefined);
          assert.deepEqual(fields, whole);
        }
      }
    });
  }

  it('an empty body is an empty object', async () => {
    assert.deepEqual((await read('', 4)).fields, {});
  });

  const invalid = [
    '[]',
    'null',
    '{"requests":[1,]}',
    '{"requests":[,1]}',
    '{"requests":[1 2]}',
    '{"a":1,}',
    '{,"a":1}',
    '{"a" 1}',
    '{"a":}',
    '{"requests":[{"a":1}',
    '{"requests":[{"a":1}]',
    '{"requests":[tru]}',
    '{"requests":[{"a":1]]}',
    '{"requests":[]} x',
    '{"requests":[],"requests":[]}',
    '{"__proto__":{"x":1}}',
    '{"requests":[{"__proto__":{"x":1}}]}',
    ' ',
  ];
  for (const text of invalid) {
    it(`refuses ${JSON.stringify(text)} as JSON.parse (or the body reader) does`, async () => {
      const err = await refusal(text);
      assert.equal(err.status, 400);
      assert.equal(err.code, 'invalid_json');
    });
  }

  it('names the item holding a NUL or a lone surrogate', async () => {
    const nul = await refusal('{"requests":[{"a":"x"},{"b":["ok","x\\u0000y"]}]}', 3);
    assert.equal(nul.opts.param, 'requests[1].b[1]');
    const lone = await refusal('{"requests":[{"a":"\\ud800"}]}', 3);
    assert.equal(lone.opts.param, 'requests[0].a');
  });

  it('counts nesting and values across the whole body, as the body reader does', async () => {
    const deep = `{"requests":[${'['.repeat(5)}${']'.repeat(5)}]}`;
    await read(deep, 3, { maxDepth: 7, maxValues: 100 });
    assert.match((await refusal(deep, 3, { maxDepth: 6, maxValues: 100 })).message, /nested more than 6/);
    const many = `{"requests":[${Array(50).fill('{}').join(',')}]}`;
    await read(many, 5, { maxDepth: 8, maxValues: 101 });
    assert.match((await refusal(many, 5, { maxDepth: 8, maxValues: 100 })).message, /more than 100 values/);
  });
});
