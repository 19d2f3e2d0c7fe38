// biome-ignore-all lint/suspicious/noExplicitAny: a caller's schema, walked node by node
// A caller's JSON Schema (chat's response_format, Responses' text.format): checked here before it is
// sent upstream, under the draft it declares. Clients add `$schema` on their own (zod 4 writes
// 2020-12 by default, zod 3 and many others draft-07), so each draft Ajv knows gets its own instance;
// a schema without `$schema` is read as draft-07, as it always was.
import { Ajv, type Options } from 'ajv';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { RequestError } from '../core/errors.js';

const options: Options = { strict: false, allErrors: false };
const draft07 = new Ajv(options);

/** Each draft by its address without scheme or trailing '#', as clients vary in both. */
const DRAFTS = new Map<string, Ajv>([
  ['json-schema.org/draft/2020-12/schema', new Ajv2020(options)],
  ['json-schema.org/draft/2019-09/schema', new Ajv2019(options)],
  ['json-schema.org/draft-07/schema', draft07],
]);
const CANONICAL: Record<string, string> = {
  'json-schema.org/draft-07/schema': 'http://json-schema.org/draft-07/schema#',
  'json-schema.org/draft/2020-12/schema': 'https://json-schema.org/draft/2020-12/schema',
  'json-schema.org/draft/2019-09/schema': 'https://json-schema.org/draft/2019-09/schema',
};

const bad = (message: string, param: string) => new RequestError(400, 'invalid_json_schema', message, { param });

const draftKey = (uri: string) => uri.replace(/^https?:\/\//, '').replace(/#$/, '');

/**
 * Throws `invalid_json_schema` naming `param` unless `schema` compiles under its declared draft.
 * Nothing is kept afterwards: caller schemas would otherwise pile up in Ajv's cache, and a second
 * request reusing an `$id` would be refused as a duplicate.
 */
export function checkJsonSchema(schema: Record<string, unknown>, param: string): void {
  const declared = schema.$schema;
  let ajv = draft07;
  let compiled = schema;
  if (declared !== undefined) {
    const key = typeof declared === 'string' ? draftKey(declared) : '';
    const found = DRAFTS.get(key);
    if (!found)
      throw bad(
        `${param}.$schema ${JSON.stringify(declared)} is not a draft this gateway reads; use ` +
          `${Object.values(CANONICAL).join(', ')}, or leave $schema out.`,
        `${param}.$schema`,
      );
    ajv = found;
    compiled = { ...schema, $schema: CANONICAL[key] };
  }
  try {
    ajv.compile(compiled);
  } catch (err) {
    throw bad(`${param} is not a valid JSON Schema: ${(err as Error).message}`, param);
  } finally {
    ajv.removeSchema(compiled);
  }
}

/** Strict mode's rules (as OpenAI enforces them): every object closed, every property required. */
export function checkStrictSchema(node: any, path: string, param: string): void {
  if (!node || typeof node !== 'object') return;
  if (Array.isArray(node)) {
    for (const [i, n] of node.entries()) checkStrictSchema(n, `${path}[${i}]`, param);
    return;
  }
  const isObject =
    node.type === 'object' || (Array.isArray(node.type) && node.type.includes('object')) || node.properties;
  if (isObject) {
    if (node.additionalProperties !== false)
      throw bad(`With strict: true, ${path} must set additionalProperties: false.`, param);
    const keys = Object.keys(node.properties ?? {});
    const missing = keys.filter((k) => !(node.required ?? []).includes(k));
    if (missing.length)
      throw bad(
        `With strict: true, every property of ${path} must be in 'required' (missing: ${missing.join(', ')}).`,
        param,
      );
  }
  for (const key of ['properties', '$defs', 'definitions'])
    for (const [k, v] of Object.entries(node[key] ?? {})) checkStrictSchema(v, `${path}.${k}`, param);
  for (const key of ['items', 'anyOf', 'oneOf', 'allOf', 'prefixItems'])
    if (node[key]) checkStrictSchema(node[key], `${path}.${key}`, param);
}
