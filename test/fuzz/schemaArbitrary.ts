// fast-check arbitraries derived from a route's own Ajv schema (activities/surfaces/schemas/, or the query schema a
// route declares), so the fuzzer follows the API as it changes: `valid()` makes values the schema
// accepts (with hints where a schema is too loose to reach the route's real work, e.g. a catalog
// model), `mutated()` takes one of them and breaks it in one place (a wrong type, a hostile
// string or number, a missing required field, an unknown or prototype-polluting key, depth).
import fc from 'fast-check';
import { fuzzText, hostileValue, RawJson, setOwn } from './values.js';

type Schema = Record<string, any>;

/**
 * Arbitraries that replace the schema's at a path: `model`, `messages[]`, `messages[].content`.
 * `[]` stands for any array index.
 */
export type Hints = Record<string, fc.Arbitrary<unknown>>;

const child = (path: string, key: string) => (path ? `${path}.${key}` : key);

/** Values `schema` accepts (hints override the schema where given). */
export function valid(schema: Schema, hints: Hints = {}, path = '', nul = false): fc.Arbitrary<unknown> {
  const hint = hints[path];
  if (hint) return hint;
  if ('const' in schema) return fc.constant(schema.const);
  if (schema.enum) return fc.constantFrom(...(schema.enum as unknown[]));
  const union = schema.anyOf ?? schema.oneOf;
  if (union) return fc.oneof(...(union as Schema[]).map((s) => valid(s, hints, path, nul)));
  const type = schema.type;
  if (Array.isArray(type)) return fc.oneof(...type.map((t: string) => valid({ ...schema, type: t }, hints, path, nul)));
  switch (type) {
    case 'string':
      return fuzzText({ minLength: schema.minLength, maxLength: schema.maxLength, nul });
    case 'integer':
      return integer(schema);
    case 'number':
      return number(schema);
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      return fc.array(valid(schema.items ?? {}, hints, `${path}[]`, nul), {
        minLength: schema.minItems ?? 0,
        maxLength: Math.min(schema.maxItems ?? 3, Math.max(3, schema.minItems ?? 0)),
      });
    case 'object':
      return object(schema, hints, path, nul);
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

function integer(schema: Schema): fc.Arbitrary<number> {
  const min = schema.minimum ?? -(2 ** 31);
  const max = schema.maximum ?? 2 ** 31;
  // small values reach the route's real work (an output cap the balance covers); any value tests the range
  return fc.oneof(
    { arbitrary: fc.integer({ min, max: Math.min(max, Math.max(min, 0) + 64) }), weight: 3 },
    { arbitrary: fc.integer({ min, max }), weight: 1 },
  );
}

function number(schema: Schema): fc.Arbitrary<number> {
  const min = schema.minimum ?? -1e6;
  const max = schema.maximum ?? 1e6;
  return fc.oneof(
    fc.double({ min, max, noNaN: true, noDefaultInfinity: true }),
    fc.integer({ min: Math.ceil(min), max: Math.floor(max) }),
    fc.constantFrom(min, max),
  );
}

function object(schema: Schema, hints: Hints, path: string, nul: boolean): fc.Arbitrary<unknown> {
  const properties: Record<string, Schema> = schema.properties ?? {};
  const required = new Set<string>(schema.required ?? []);
  const keys = Object.keys(properties);
  const max = schema.maxProperties ?? Number.POSITIVE_INFINITY;
  const fields = fc.record(Object.fromEntries(keys.map((k) => [k, valid(properties[k], hints, child(path, k), nul)])), {
    requiredKeys: keys.filter((k) => required.has(k)),
  });
  // unknown keys, where the schema allows them (clients send vendor extensions)
  const extra =
    schema.additionalProperties === false
      ? fc.constant({})
      : fc.dictionary(
          schema.propertyNames?.maxLength ? fuzzText({ maxLength: schema.propertyNames.maxLength }) : fuzzText(),
          typeof schema.additionalProperties === 'object'
            ? valid(schema.additionalProperties, hints, child(path, '*'), nul)
            : fc.jsonValue({ maxDepth: 2 }),
          { maxKeys: keys.length ? 2 : 4 },
        );
  return fc
    .tuple(
      // optional fields are present about a third of the time: enough to meet, few enough to stay valid
      fields,
      fc.array(fc.boolean(), { minLength: keys.length, maxLength: keys.length }),
      fc.oneof({ arbitrary: fc.constant({}), weight: 4 }, { arbitrary: extra, weight: 1 }),
    )
    .map(([record, coin, more]) => {
      const out: Record<string, unknown> = {};
      for (const [i, k] of keys.entries()) {
        if (!(k in record)) continue;
        if (required.has(k) || (coin[i] && coin[(i + 1) % keys.length])) out[k] = record[k];
      }
      for (const [k, v] of Object.entries(more as Record<string, unknown>)) {
        if (Object.keys(out).length >= max) break;
        if (!(k in properties)) setOwn(out, k, v);
      }
      return out;
    });
}

type Mutation =
  | { kind: 'replace'; value: unknown }
  | { kind: 'delete' }
  | { kind: 'add'; key: string; value: unknown }
  | { kind: 'wrap' };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  { arbitrary: hostileValue.map((value) => ({ kind: 'replace' as const, value })), weight: 6 },
  { arbitrary: fc.constant({ kind: 'delete' as const }), weight: 2 },
  {
    arbitrary: fc
      .tuple(fc.oneof(fc.constantFrom('__proto__', 'constructor', 'prototype', ''), fuzzText()), hostileValue)
      .map(([key, value]) => ({ kind: 'add' as const, key, value })),
    weight: 2,
  },
  { arbitrary: fc.constant({ kind: 'wrap' as const }), weight: 1 },
);

/** A value `schema` accepts, broken in exactly one place. */
export function mutated(schema: Schema, hints: Hints = {}): fc.Arbitrary<unknown> {
  return fc.tuple(valid(schema, hints), fc.nat(), mutation).map(([value, pick, m]) => mutate(copy(value), pick, m));
}

/** A deep copy (hints and constants may hand out one shared object; a mutation must not reach it). */
function copy(v: unknown): unknown {
  if (v === null || typeof v !== 'object' || v instanceof RawJson) return v;
  if (Array.isArray(v)) return v.map(copy);
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(v)) setOwn(out, k, copy((v as Record<string, unknown>)[k]));
  return out;
}

/** Every container and leaf position in a value: [parent, key] pairs (root has none). */
function positions(value: unknown): Array<[Record<string, unknown> | unknown[], string | number]> {
  const out: Array<[Record<string, unknown> | unknown[], string | number]> = [];
  const walk = (v: unknown) => {
    if (v === null || typeof v !== 'object' || v instanceof RawJson) return;
    if (Array.isArray(v))
      v.forEach((x, i) => {
        out.push([v, i]);
        walk(x);
      });
    else
      for (const k of Object.keys(v)) {
        out.push([v as Record<string, unknown>, k]);
        walk((v as Record<string, unknown>)[k]);
      }
  };
  walk(value);
  return out;
}

function mutate(value: unknown, pick: number, m: Mutation): unknown {
  const spots = positions(value);
  if (m.kind === 'add') {
    const objects = [value, ...spots.map(([p, k]) => (p as Record<string, unknown>)[k as string])].filter(
      (x): x is Record<string, unknown> => x !== null && typeof x === 'object' && !Array.isArray(x),
    );
    if (objects.length) setOwn(objects[pick % objects.length], m.key, m.value);
    return value;
  }
  if (!spots.length) return m.kind === 'replace' ? m.value : value;
  const [parent, key] = spots[pick % spots.length];
  const p = parent as Record<string | number, unknown>;
  if (m.kind === 'replace') p[key] = m.value;
  else if (m.kind === 'wrap') p[key] = [p[key]];
  else if (Array.isArray(parent)) parent.splice(key as number, 1);
  else delete p[key];
  return value;
}
