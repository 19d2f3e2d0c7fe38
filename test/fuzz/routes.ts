// Every served route, read off the live router (path, methods, envelope, whether it takes a key, the
// Ajv body or query schema it validates), and the cases the fuzzer sends it: values its schema
// accepts or breaks in one place (schemaArbitrary.ts), with hints where the schema alone would
// never reach the route's real work (hints.ts), and hostile keys, headers, content types and
// encodings mixed in.
import type Koa from 'koa';
import fc from 'fast-check';
import type { Envelope } from '../../activities/surfaces/errors.js';
import { authenticate } from '../../api/middleware/auth.js';
import { authenticateOrX402 } from '../../api/x402.js';
import { declaredEnvelope } from '../../api/middleware/surface.js';
import { declaredSchema } from '../../api/validate.js';
import { hintsFor, toWellFormed } from './hints.js';
import type { ServedRoute } from './served.js';
import { type Hints, mutated, valid } from './schemaArbitrary.js';
import { BOUNDARY, multipartBody } from './multipart.js';

type Schema = Record<string, any>;

/** The routes `app` serves, with the contract each declares. */
export function servedRoutes(app: Koa): ServedRoute[] {
  const out: ServedRoute[] = [];
  for (const mw of app.middleware) {
    const router = (mw as { router?: { stack: Array<{ path: string; methods: string[]; stack: unknown[] }> } }).router;
    if (!router) continue;
    for (const layer of router.stack) {
      const route: ServedRoute = { path: layer.path, methods: layer.methods, envelope: 'openai', auth: false };
      for (const fn of layer.stack) {
        route.envelope = declaredEnvelope(fn) ?? route.envelope;
        // x402 routes take a key too (without one they quote or take a payment)
        if (fn === authenticate || fn === authenticateOrX402) route.auth = true;
        const declared = declaredSchema(fn);
        if (declared) route[declared.where] = declared.schema as Schema;
      }
      out.push(route);
    }
  }
  return out;
}

/** A request before its placeholders are filled in. */
export interface Case {
  /** the router path it aims at (`(none)` for paths no route serves) */
  route: string;
  envelope: Envelope;
  method: string;
  /** path and query; may hold {{placeholders}} */
  path: string;
  /** header values may hold {{placeholders}} ({{key:rich}} is the rich account's key) */
  headers: Record<string, string>;
  /** a JSON value (written by jsonText), or bytes sent as they are */
  body?: unknown;
  /** compress the body this way and say so */
  encoding?: 'gzip' | 'deflate' | 'br';
  /** hand-framed request bytes (placeholders filled in); path, headers and body are then only for the report */
  raw?: { parts: Array<string | Buffer>; end?: boolean; gapMs?: number; expect?: number };
  /** what kind of case, for the report */
  kind: string;
}

/** A query string from the route's query schema (valid or broken), or a hand-made hostile one. */
function queryString(schema: Schema | undefined, hints: Hints): fc.Arbitrary<string> {
  const fromSchema = (arb: fc.Arbitrary<unknown>) =>
    arb.map((q) => {
      const params = new URLSearchParams();
      if (q && typeof q === 'object' && !Array.isArray(q))
        for (const [k, v] of Object.entries(q))
          params.append(k, typeof v === 'string' ? toWellFormed(v) : (JSON.stringify(v) ?? ''));
      const s = params.toString();
      return s ? `?${s}` : '';
    });
  const hostile = fc
    .tuple(
      fc.constantFrom(...Object.keys(schema?.properties ?? { q: {} })),
      fc.constantFrom(
        '%00',
        '%zz',
        '%',
        '%E0%A4',
        'a&a=b',
        '%5B%5D',
        '\u00ff'.repeat(3),
        'x'.repeat(9000),
        '1e400',
        '-0',
        '[]',
        '{}',
      ),
    )
    .map(([k, v]) => `?${k}=${v}&${k}[]=1&${k}[a]=2`);
  const arbs: Array<fc.WeightedArbitrary<string>> = [{ arbitrary: hostile, weight: 1 }];
  if (schema) {
    arbs.push({ arbitrary: fromSchema(valid(schema, hints, '', true)), weight: 4 });
    arbs.push({ arbitrary: fromSchema(mutated(schema, hints)), weight: 2 });
  } else arbs.push({ arbitrary: fc.constant(''), weight: 3 });
  arbs.push({
    arbitrary: fc.constantFrom('?__proto__[x]=1', '?constructor[prototype][x]=1', '?&&&', '?=', '?a=1&a=2&a=3'),
    weight: 1,
  });
  return fc.oneof(...arbs);
}

const ACCOUNT_KEYS = fc.oneof(
  { arbitrary: fc.constant('{{key:rich}}'), weight: 12 },
  { arbitrary: fc.constant('{{key:rich2}}'), weight: 4 },
  { arbitrary: fc.constant('{{key:poor}}'), weight: 2 },
  { arbitrary: fc.constant('{{key:revoked}}'), weight: 1 },
  {
    arbitrary: fc.constantFrom(
      'sk-nanogpt-00000000-0000-4000-8000-000000000000',
      'sk-nanogpt-',
      'Bearer',
      'x'.repeat(2000),
      'sk-nanogpt-../../',
      "sk-nanogpt-' OR '1'='1",
    ),
    weight: 1,
  },
);

/** How the key is presented (and the hostile ways not to). */
const authHeaders = fc.oneof(
  { arbitrary: ACCOUNT_KEYS.map((k) => ({ authorization: `Bearer ${k}` })), weight: 10 },
  { arbitrary: ACCOUNT_KEYS.map((k) => ({ 'x-api-key': k })), weight: 2 },
  { arbitrary: fc.constant({}), weight: 1 },
  {
    arbitrary: fc.constantFrom(
      { authorization: 'Basic dXNlcjpwYXNz' },
      { authorization: 'Bearer ' },
      { authorization: 'Bearer a b' },
      { authorization: `Bearer ${'\u00ff'.repeat(40)}` },
    ),
    weight: 1,
  },
);

const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'APPLICATION/JSON',
  'text/plain',
  'application/x-www-form-urlencoded',
  'application/vnd.api+json',
  'multipart/form-data; boundary=xyz',
  'application/xml',
  'application/json; charset=utf-16',
  'application/octet-stream',
  '*/*',
  'application/json, text/plain',
];

/** Extra headers the gateway reads: some hostile, most absent. */
const extraHeaders = fc.oneof(
  { arbitrary: fc.constant({}), weight: 8 },
  fc
    .record(
      {
        'x-provider': fc.oneof(
          fc.constantFrom('openai', 'anthropic', 'gemini', 'openrouter', 'local', 'fal', 'OPENAI', 'nope', ''),
          fc.string({ maxLength: 40 }),
        ),
        'x-billing-mode': fc.oneof(fc.constantFrom('paygo', 'PAYG', 'subscription', ''), fc.string({ maxLength: 40 })),
        'anthropic-beta': fc.string({ maxLength: 40 }),
        'anthropic-version': fc.constantFrom('2023-06-01', 'x'),
        accept: fc.constantFrom(
          'application/json',
          'audio/*',
          '*/*',
          'text/event-stream',
          'application/json;q=0.9, audio/mpeg;q=1',
          'x/y;q=abc',
        ),
        redaction: fc.constantFrom('true', 'false', 'pii'),
        moderation: fc.constantFrom('true', 'off'),
        'x-forwarded-for': fc.constantFrom('1.2.3.4', '::1, 10.0.0.1', 'garbage'),
      },
      { requiredKeys: [] },
    )
    .map((h) => Object.fromEntries(Object.entries(h).map(([k, v]) => [k, latin1(String(v))]))),
);

/** Node refuses header values outside visible Latin-1 (a client-side error, not a test of the server). */
const latin1 = (s: string) => s.replace(/[^\x20-\x7e\x80-\xff]/g, '?');

/**
 * The generated cases of one served route (valid, one-place-broken, hostile headers and queries).
 * `validOnly`: only bodies the schema accepts, the rich account's key, no hostile headers (to get
 * past the gateway's own checks, as when the upstreams are what fails).
 */
export function routeCases(route: ServedRoute, validOnly = false): fc.Arbitrary<Case> {
  const hints = hintsFor(route);
  const readsBody = route.methods.includes('POST');
  const method = readsBody ? 'POST' : (route.methods.find((m) => m !== 'HEAD') ?? 'GET');
  const path = hints.path ?? queryString(route.query, hints.query ?? {}).map((q) => route.path + q);
  const body: fc.Arbitrary<unknown> = !readsBody
    ? fc.constant(undefined)
    : route.multipart
      ? fc.oneof({ arbitrary: multipartBody(route.multipart), weight: 6 }, fc.jsonValue({ maxDepth: 2 }))
      : route.body && validOnly
        ? valid(route.body, hints.body ?? {})
        : route.body
          ? fc.oneof(
              { arbitrary: valid(route.body, hints.body ?? {}, '', true), weight: 5 },
              { arbitrary: mutated(route.body, hints.body ?? {}), weight: 3 },
              { arbitrary: fc.jsonValue({ maxDepth: 3 }), weight: 1 },
            )
          : fc.oneof(fc.constant(undefined), fc.jsonValue({ maxDepth: 2 }));
  const contentType = fc.oneof(
    { arbitrary: fc.constant('application/json'), weight: 12 },
    { arbitrary: fc.constantFrom(...CONTENT_TYPES), weight: 2 },
    { arbitrary: fc.constant(''), weight: 1 },
  );
  const encoding = fc.oneof(
    { arbitrary: fc.constant(undefined), weight: 10 },
    fc.constantFrom<'gzip' | 'deflate' | 'br'>('gzip', 'deflate', 'br'),
  );
  return fc
    .record({
      path,
      body,
      auth: validOnly
        ? fc.constant({ authorization: 'Bearer {{key:rich}}' })
        : route.auth
          ? authHeaders
          : fc.oneof(fc.constant({}), authHeaders),
      extra: validOnly ? fc.constant({}) : extraHeaders,
      contentType: validOnly ? fc.constant('application/json') : contentType,
      encoding: validOnly ? fc.constant(undefined) : encoding,
      head: fc.boolean(),
    })
    .map(({ path: p, body: b, auth, extra, contentType: ct, encoding: enc, head }) => {
      const headers: Record<string, string> = { ...auth, ...extra };
      if (b !== undefined && ct) headers['content-type'] = ct;
      // a form is sent as one, mostly (a JSON body or another type still tests the refusal)
      if (Buffer.isBuffer(b) && route.multipart && (validOnly || ct === 'application/json'))
        headers['content-type'] = `multipart/form-data; boundary=${BOUNDARY}`;
      const m = method === 'GET' && head && route.methods.includes('HEAD') ? 'HEAD' : method;
      return {
        route: route.path,
        envelope: route.envelope,
        method: m,
        path: p,
        headers,
        body: b,
        encoding: b !== undefined ? enc : undefined,
        kind: 'generated',
      };
    });
}
