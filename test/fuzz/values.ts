// The hostile values the fuzzer mixes into requests, and a JSON writer that can put number text
// JavaScript cannot hold (1e400, a 400-digit integer) into a body, as a hostile client would.
import fc from 'fast-check';

/** JSON text written as is (a number JavaScript would round or overflow, a duplicate key...). */
export class RawJson {
  constructor(readonly text: string) {}
}

/** JSON text of `v`; RawJson parts are written verbatim, `__proto__` keys as own keys. */
export function jsonText(v: unknown): string {
  if (v instanceof RawJson) return v.text;
  if (Array.isArray(v)) return `[${v.map(jsonText).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const parts = Object.keys(v).map((k) => `${JSON.stringify(k)}:${jsonText((v as Record<string, unknown>)[k])}`);
    return `{${parts.join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

/** Sets an own enumerable property even when the key is `__proto__`. */
export function setOwn(o: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true });
}

export const NUL = '\u0000';

/** Strings that have broken parsers, databases, loggers and templates somewhere. NUL is kept apart (see hasNul). */
const HOSTILE_STRINGS: string[] = [
  '',
  ' ',
  '\t\r\n',
  '\ud800', // a lone high surrogate: valid JSON escape, not valid Unicode
  '\udfff',
  'a\ud83d',
  '\ufeff',
  '\u202eevil',
  '\u0001\u0002\u001f\u007f',
  '\u2028\u2029',
  'e\u0301\u0301\u0301',
  '𝕏🧑‍🚀👍🏽',
  '%00',
  '%s%s%s%n',
  '../../../../etc/passwd',
  '..%2F..%2F',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a log4j-style lookup, as text
  '${jndi:ldap://127.0.0.1/a}',
  "'; DROP TABLE accounts; --",
  '" OR 1=1 --',
  '<script>alert(1)</script>',
  '{{7*7}}',
  '\r\nX-Injected: 1',
  '\\',
  '"',
  '__proto__',
  'constructor',
  'toString',
  'null',
  'undefined',
  'NaN',
  '-1',
  '1e400',
  'x'.repeat(5000),
  'ü'.repeat(3000),
];

/** Numbers JavaScript can hold that are still edge cases. */
const HOSTILE_NUMBERS: number[] = [
  0,
  -0,
  -1,
  0.5,
  1.5,
  2 ** 31,
  2 ** 31 - 1,
  2 ** 53 + 2,
  -(2 ** 53),
  1e21,
  1e308,
  -1e308,
  5e-324,
];

/** Number text a parser must survive: overflow, underflow, absurd length. */
export const RAW_NUMBERS: string[] = [
  '1e400',
  '-1e400',
  '1e-400',
  `1${'0'.repeat(400)}`,
  `0.${'0'.repeat(400)}1`,
  '1.0000000000000000000000001',
  '9007199254740993',
  '-0.0',
  '1E+99999',
];

/** A text arbitrary: mostly ordinary, sometimes any code point, sometimes one of the hostile strings. */
export function fuzzText(opts: { minLength?: number; maxLength?: number; nul?: boolean } = {}): fc.Arbitrary<string> {
  const min = opts.minLength ?? 0;
  const max = Math.max(min, Math.min(opts.maxLength ?? 40, 40));
  const sized = (s: string) => (opts.maxLength !== undefined && s.length > opts.maxLength) || s.length < min;
  const arbs: Array<fc.WeightedArbitrary<string>> = [
    { arbitrary: fc.string({ minLength: min, maxLength: max }), weight: 6 },
    { arbitrary: fc.string({ minLength: min, maxLength: max, unit: 'grapheme' }), weight: 3 },
    { arbitrary: fc.string({ minLength: min, maxLength: max, unit: 'binary' }), weight: 2 },
    {
      arbitrary: fc.constantFrom(...HOSTILE_STRINGS).filter((s) => !sized(s)),
      weight: 2,
    },
  ];
  if (opts.nul) {
    // NUL is hostile for PostgreSQL text; kept at a low rate so it does not drown the rest
    arbs.push({ arbitrary: fc.string({ minLength: min, maxLength: max }).map((s) => `${s}${NUL}x`), weight: 1 });
  }
  return fc.oneof(...arbs);
}

/** A value of any JSON type, hostile ones included: the "wrong type" of a mutation. */
export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(...HOSTILE_STRINGS),
  fc.constantFrom(...HOSTILE_NUMBERS),
  fc.constantFrom(...RAW_NUMBERS).map((t) => new RawJson(t)),
  fc.constantFrom<unknown>(null, true, false, [], {}, [null], { '': '' }),
  fc.jsonValue({ maxDepth: 3 }),
  fc.integer({ min: 5, max: 60 }).map((d) => nested(d)),
  fc.integer({ min: 100, max: 2000 }).map((n) => Array.from({ length: n }, (_, i) => i)),
);

/** An array nested `depth` deep around a string. */
function nested(depth: number): unknown {
  let v: unknown = 'deep';
  for (let i = 0; i < depth; i++) v = i % 2 ? { d: v } : [v];
  return v;
}
