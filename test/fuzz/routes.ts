// Every served route, read off the live router (path, methods, envelope, whether it takes a key, the
// Ajv body or query schema it validates), and the cases the fuzzer sends it: values its schema
// accepts or breaks in one place (schemaArbitrary.ts), with hints where the schema alone would
// never reach the route's real work (a catalog model, an id of a job that exists, a voice).
//
// Ids of things made at run time (a stored response, a video job, a signed media URL) are written
// as {{placeholders}} and filled in when the case is sent, so a seed makes the same cases every run.
import type Koa from 'koa';
import fc from 'fast-check';
import type { Envelope } from '../../api/errors.js';
import { authenticate } from '../../api/middleware/auth.js';
import { declaredEnvelope } from '../../api/middleware/surface.js';
import { declaredSchema } from '../../api/validate.js';
import { catalog } from '../../activities/catalog/catalog.js';
import { type Hints, mutated, valid } from './schemaArbitrary.js';
import { fuzzText, NUL } from './values.js';

type Schema = Record<string, any>;

export interface ServedRoute {
  /** as the router has it: `/api/v1/responses/:id` */
  path: string;
  methods: string[];
  envelope: Envelope;
  auth: boolean;
  body?: Schema;
  query?: Schema;
}

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
        if (fn === authenticate) route.auth = true;
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

const ids = (endpoint: string, categories?: string[]) =>
  catalog()
    .models.filter(
      (m) => m.supportedEndpoints.includes(endpoint) || (categories?.includes(m.category) && m.routes.length > 0),
    )
    .flatMap((m) => [m.id]);

const aliases = (modelIds: string[]) =>
  modelIds.flatMap((id) => catalog().model(id)?.aliases ?? []).filter((a) => a.length > 0);

const SUFFIXES = [
  ':cheap',
  ':fast',
  ':latency',
  ':throughput',
  ':thinking',
  ':online',
  ':memory',
  ':reasoning-effort/high',
  ':reasoning-exclude',
  ':tools',
  ':caching',
  ':redact',
  ':bogus',
];

/** A model name for a route: mostly the models it serves (so the route does its real work), then aliases, suffixes and nonsense. */
function modelName(modelIds: string[]): fc.Arbitrary<unknown> {
  const known = modelIds.length ? modelIds : ['openai/gpt-4o-mini'];
  // the built-in engines run on this machine's CPU (seconds a request): met, but rarely
  const isLocal = (id: string) =>
    catalog()
      .model(id)
      ?.routes.every((r) => r.provider.protocol === 'local') ?? false;
  const remote = known.filter((id) => !isLocal(id));
  const local = known.filter(isLocal);
  const others = catalog().models.map((m) => m.id);
  const arbs: Array<fc.WeightedArbitrary<unknown>> = [
    { arbitrary: fc.constantFrom(...(remote.length ? remote : known)), weight: 12 },
    { arbitrary: fc.constantFrom(...(aliases(remote).length ? aliases(remote) : known)), weight: 2 },
    { arbitrary: fc.tuple(fc.constantFrom(...known), fc.constantFrom(...SUFFIXES)).map(([m, s]) => m + s), weight: 2 },
    { arbitrary: fc.constantFrom(...others), weight: 1 },
    { arbitrary: fc.constantFrom(...known).map((m) => m.toUpperCase()), weight: 1 },
    { arbitrary: fuzzText({ minLength: 1, maxLength: 80 }), weight: 1 },
  ];
  if (local.length) arbs.push({ arbitrary: fc.constantFrom(...local), weight: 1 });
  return fc.oneof(...arbs);
}

// a 1x1 PNG, as base64 and as a data URL
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
const PDF = Buffer.from('%PDF-1.1\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF').toString('base64');

/** URLs a caller may hand the gateway to fetch: ordinary, malformed, and ones that must never be fetched. */
const imageUrl = fc.constantFrom(
  `data:image/png;base64,${PNG}`,
  'data:image/png;base64,!!!not-base64',
  'data:text/html,<script>1</script>',
  'data:,',
  'https://example.com/cat.png',
  'http://10.0.0.1/x.png',
  'http://169.254.169.254/latest/meta-data/',
  'http://[::1]:1/x.png',
  'http://0.0.0.0:1/',
  'file:///etc/passwd',
  'gopher://127.0.0.1:1/_x',
  'not a url',
  'http://',
);

const text = (maxLength = 40) => fuzzText({ maxLength, nul: true });

const chatContent = fc.oneof(
  { arbitrary: text(), weight: 6 },
  { arbitrary: fc.constant(null), weight: 1 },
  {
    arbitrary: fc.array(
      fc.oneof(
        fc.record({ type: fc.constant('text'), text: text() }),
        fc.record({ type: fc.constant('image_url'), image_url: fc.record({ url: imageUrl }) }),
        fc.record({
          type: fc.constant('input_audio'),
          input_audio: fc.record({ data: fc.constant('AAAA'), format: fc.constant('wav') }),
        }),
        fc.record({ type: text(12) }),
      ),
      { minLength: 1, maxLength: 3 },
    ),
    weight: 2,
  },
);

const jsonSchema = fc.oneof(
  fc.constant({ type: 'object', properties: { a: { type: 'string' } }, required: ['a'], additionalProperties: false }),
  fc.constant({ type: 'object' }),
  fc.jsonValue({ maxDepth: 3 }),
);

const functionTool = fc.record({
  type: fc.constant('function'),
  function: fc.record(
    { name: fc.oneof(fc.constantFrom('get_weather', 'lookup'), text(70)), description: text(), parameters: jsonSchema },
    { requiredKeys: ['name'] },
  ),
});

const chatMessages = fc.array(
  fc.record(
    {
      role: fc.oneof(
        { arbitrary: fc.constant('user'), weight: 4 },
        fc.constantFrom('system', 'developer', 'assistant', 'tool'),
      ),
      content: chatContent,
      tool_call_id: fc.constantFrom('call_1', 'call_x'),
      tool_calls: fc.array(
        fc.record({
          id: fc.constantFrom('call_1', 'call_2'),
          type: fc.constant('function'),
          function: fc.record({
            name: fc.constant('get_weather'),
            arguments: fc.oneof(fc.constant('{"city":"Paris"}'), text()),
          }),
        }),
        { maxLength: 2 },
      ),
    },
    { requiredKeys: ['role', 'content'] },
  ),
  { minLength: 1, maxLength: 4 },
);

const smallTokens = fc.oneof(
  { arbitrary: fc.integer({ min: 1, max: 32 }), weight: 6 },
  fc.integer({ min: 1, max: 2 ** 31 }),
);

const messageBlock = fc.oneof(
  { arbitrary: fc.record({ type: fc.constant('text'), text: text() }), weight: 6 },
  fc.record({
    type: fc.constant('image'),
    source: fc.oneof(
      fc.record({
        type: fc.constant('base64'),
        media_type: fc.constantFrom('image/png', 'image/gif', 'text/plain'),
        data: fc.constantFrom(PNG, '!!!'),
      }),
      fc.record({ type: fc.constant('url'), url: imageUrl }),
    ),
  }),
  fc.record({
    type: fc.constant('document'),
    source: fc.record({
      type: fc.constant('base64'),
      media_type: fc.constant('application/pdf'),
      data: fc.constant(PDF),
    }),
  }),
  fc.record({
    type: fc.constant('tool_use'),
    id: fc.constantFrom('toolu_1', 'toolu_2'),
    name: fc.constant('get_weather'),
    input: fc.jsonValue({ maxDepth: 2 }),
  }),
  fc.record({
    type: fc.constant('tool_result'),
    tool_use_id: fc.constantFrom('toolu_1', 'toolu_9'),
    content: fc.oneof(text(), fc.constant([{ type: 'text', text: 'ok' }])),
  }),
  fc.record({ type: fc.constant('thinking'), thinking: text(), signature: text() }),
  fc.record({ type: fc.constant('redacted_thinking'), data: text() }),
  fc.record({ type: text(12) }),
);

const messageTurns = fc
  .array(
    fc.record({
      role: fc.constantFrom('user', 'assistant'),
      content: fc.oneof(text(), fc.array(messageBlock, { minLength: 1, maxLength: 3 })),
    }),
    { minLength: 1, maxLength: 4 },
  )
  .map((turns) =>
    turns[0].role === 'user' || turns.length % 3 === 0 ? turns : [{ role: 'user', content: 'hi' }, ...turns],
  );

const messagesHints = (): Hints => ({
  model: modelName(ids('/v1/messages')),
  messages: messageTurns,
  max_tokens: smallTokens,
  tools: fc.array(
    fc.record({ name: fc.oneof(fc.constant('get_weather'), text(70)), description: text(), input_schema: jsonSchema }),
    { maxLength: 2 },
  ),
  'output_config.format': fc.oneof(
    fc.constant(null),
    fc.record({ type: fc.constantFrom('json_schema', 'text', 'bogus'), schema: jsonSchema }),
  ),
  'thinking.budget_tokens': fc.integer({ min: -5, max: 4096 }),
});

const responsesInputItem = fc.oneof(
  fc.record({
    role: fc.constantFrom('user', 'system', 'developer', 'assistant'),
    content: fc.oneof(
      text(),
      fc.array(
        fc.oneof(
          fc.record({ type: fc.constant('input_text'), text: text() }),
          fc.record({ type: fc.constant('input_image'), image_url: imageUrl }),
          fc.record({ type: text(12) }),
        ),
        { minLength: 1, maxLength: 2 },
      ),
    ),
  }),
  fc.record({
    type: fc.constant('message'),
    role: fc.constant('user'),
    content: fc.constant([{ type: 'input_text', text: 'hello' }]),
  }),
  fc.record({
    type: fc.constant('function_call'),
    call_id: fc.constantFrom('c1', 'c2'),
    name: fc.constant('get_weather'),
    arguments: fc.constant('{}'),
  }),
  fc.record({ type: fc.constant('function_call_output'), call_id: fc.constantFrom('c1', 'c9'), output: text() }),
  fc.record({ type: text(12) }),
);

const speechModels = () => ids('/v1/audio/speech', ['speech', 'music']);
const voice = fc.oneof(
  { arbitrary: fc.constantFrom('alloy', 'nova', 'rachel', 'en-us', 'echo'), weight: 5 },
  { arbitrary: fuzzText({ minLength: 1, maxLength: 30 }), weight: 1 },
);
const speechHints = (textField: 'input' | 'text'): Hints => ({
  model: modelName(speechModels()),
  [textField]: fc.oneof(
    { arbitrary: fuzzText({ minLength: 1, maxLength: 40, nul: true }), weight: 5 },
    // longer than any speech model takes (a synthesis this long would take the built-in engine a minute)
    fc.constant('x'.repeat(12_000)),
  ),
  voice,
  response_format: fc.oneof(fc.constantFrom('mp3', 'wav', 'pcm', 'opus'), fuzzText({ maxLength: 10 })),
  duration: fc.integer({ min: 1, max: 40 }),
});

/** Ids as a route's path, body or query takes them: the fixtures (own, another account's), lookalikes, hostile. */
function idOf(own: string[], foreign: string[], prefix: string): fc.Arbitrary<string> {
  return fc.oneof(
    { arbitrary: fc.constantFrom(...own.map((f) => `{{${f}}}`)), weight: 5 },
    { arbitrary: fc.constantFrom(...foreign.map((f) => `{{${f}}}`)), weight: 2 },
    { arbitrary: fc.stringMatching(/^[0-9a-f]{8,32}$/).map((h) => `${prefix}${h}`), weight: 2 },
    { arbitrary: fuzzText({ minLength: 1, maxLength: 120 }), weight: 2 },
    { arbitrary: fc.constantFrom(...own.map((f) => `{{${f}}}${NUL}`)), weight: 1 },
  );
}

/** A path segment as a client might write it: encoded, raw, or hostile encodings. */
const segment = (id: fc.Arbitrary<string>) =>
  fc.oneof(
    { arbitrary: id.map((s) => (s.startsWith('{{') && s.endsWith('}}') ? s : encodeSegment(s))), weight: 6 },
    fc.constantFrom('%', '%zz', '%E0%A4%A', '%C0%AF', '..', '%2e%2e', '%2F', '%00', '%ff%fe', 'a%00b', '~', '%u0041'),
    fc.constant('x'.repeat(4000)),
  );

/** Lone surrogates become U+FFFD (encodeURIComponent cannot encode them; a client sends those bytes). */
const wellFormed = (s: string) =>
  s.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd');

function encodeSegment(s: string): string {
  return encodeURIComponent(wellFormed(s));
}

/** A query string from the route's query schema (valid or broken), or a hand-made hostile one. */
function queryString(schema: Schema | undefined, hints: Hints): fc.Arbitrary<string> {
  const fromSchema = (arb: fc.Arbitrary<unknown>) =>
    arb.map((q) => {
      const params = new URLSearchParams();
      if (q && typeof q === 'object' && !Array.isArray(q))
        for (const [k, v] of Object.entries(q))
          params.append(k, typeof v === 'string' ? wellFormed(v) : (JSON.stringify(v) ?? ''));
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

interface RouteHints {
  body?: Hints;
  query?: Hints;
  /** the request path (params filled in, query added) */
  path?: fc.Arbitrary<string>;
}

const videoModels = () => ids('/api/generate-video');

/** Hints per router path: what the schema cannot know. */
function hintsFor(route: ServedRoute): RouteHints {
  const p = route.path.replace(/^\/api\/v1|^\/v1/, '');
  switch (p) {
    case '/chat/completions':
      return {
        body: {
          model: modelName(ids('/v1/chat/completions')),
          messages: chatMessages,
          max_tokens: smallTokens,
          max_completion_tokens: smallTokens,
          tools: fc.array(functionTool, { maxLength: 2 }),
          'response_format.json_schema': fc.record({
            name: fc.constant('out'),
            schema: jsonSchema,
            strict: fc.boolean(),
          }),
        },
      };
    case '/completions':
      return {
        body: {
          model: modelName(ids('/v1/completions')),
          prompt: fc.oneof(text(), fc.array(text(), { maxLength: 2 }), fc.constant([1, 2, 3])),
          max_tokens: smallTokens,
        },
      };
    case '/messages':
    case '/messages/count_tokens':
      return { body: messagesHints() };
    case '/responses':
      return {
        body: {
          model: modelName(ids('/v1/responses')),
          input: fc.oneof(
            fuzzText({ minLength: 1, maxLength: 40, nul: true }),
            fc.array(responsesInputItem, { minLength: 1, maxLength: 3 }),
          ),
          instructions: text(),
          max_output_tokens: smallTokens,
          previous_response_id: idOf(['ownResponse'], ['foreignResponse'], 'resp_'),
          tools: fc.array(
            fc.record({ type: fc.constant('function'), name: fc.constant('get_weather'), parameters: jsonSchema }),
            { maxLength: 2 },
          ),
          'text.format.schema': jsonSchema,
          'metadata.*': text(),
        },
      };
    case '/responses/:id':
    case '/responses/:id/cancel':
      return {
        path: segment(idOf(['ownResponse', 'bgResponse'], ['foreignResponse'], 'resp_')).map((id) =>
          route.path.replace(':id', id),
        ),
      };
    case '/audio/speech':
      return { body: speechHints('input') };
    case '/audio/voices':
      return { query: { model: modelName(speechModels()) } };
    case '/models':
    case '/embedding-models':
      return {};
    case '/api/models/*canonicalId/providers':
      return {
        path: fc
          .oneof(
            { arbitrary: fc.constantFrom(...catalog().models.map((m) => encodeURIComponent(m.id))), weight: 3 },
            { arbitrary: fc.constantFrom(...catalog().models.map((m) => m.id)), weight: 2 },
            segment(fuzzText({ minLength: 1, maxLength: 60 })),
          )
          .map((id) => `/api/models/${id}/providers`),
      };
    case '/api/talk-to-gpt':
      return { body: { model: modelName(ids('/v1/chat/completions')), prompt: text(), messages: chatMessages } };
    case '/api/tts':
      return { body: speechHints('text') };
    case '/api/tts/status':
      return {
        query: { runId: idOf(['ownSpeechJob'], ['foreignSpeechJob'], 'tts_'), model: modelName(speechModels()) },
      };
    case '/api/media/:id':
      return {
        path: fc.oneof(
          { arbitrary: fc.constant('/api/media/{{mediaId}}?{{mediaQuery}}'), weight: 3 },
          fc.constant('/api/media/{{mediaId}}?{{mediaQuery}}0'),
          fc.constant('/api/media/{{mediaId}}?expires=1&signature=00'),
          fc.constant('/api/media/{{mediaId}}?expires=99999999999999999999&signature=%00'),
          fc.constant('/api/media/{{mediaId}}?expires[]=1&signature[]=2'),
          segment(fuzzText({ minLength: 1, maxLength: 60 })).map((id) => `/api/media/${id}?{{mediaQuery}}`),
        ),
      };
    case '/api/generate-video':
      return {
        body: {
          model: modelName(videoModels()),
          prompt: text(),
          duration: fc.oneof(fc.constantFrom('5', '10', 5, 10), fuzzText({ maxLength: 6 }), fc.integer()),
          seconds: fc.constantFrom('5', 5, '7'),
          aspect_ratio: fc.constantFrom('16:9', '9:16', '1:1', '4:3'),
          imageUrl: imageUrl,
          imageDataUrl: fc.constantFrom(`data:image/png;base64,${PNG}`, 'data:image/png;base64,', 'data:;base64,AAAA'),
          conversationUUID: fc.uuid(),
        },
      };
    case '/api/video/status':
    case '/api/generate-video/status':
      return {
        query: {
          requestId: idOf(['ownVideo', 'mjVideo'], ['foreignVideo'], 'vid_'),
          runId: idOf(['ownVideo'], ['foreignVideo'], 'vid_'),
        },
      };
    case '/api/generate-video/recover':
      return { query: { model: modelName(videoModels()) } };
    case '/api/generate-video/extend':
      return {
        body: {
          runId: idOf(['mjVideo', 'ownVideo'], ['foreignVideo'], 'vid_'),
          taskId: idOf(['mjVideo'], ['foreignVideo'], 'vid_'),
          index: fc.integer({ min: 0, max: 3 }),
        },
      };
    case '/api/generate-video/content':
      return {
        query: {
          runId: idOf(['ownVideo', 'mjVideo'], ['foreignVideo'], 'vid_'),
          model: fc.constantFrom('sora-2', 'openai/sora-2', 'midjourney/video'),
        },
      };
    case '/api/generate-video/cancel':
      return { body: { runId: idOf(['ownVideo', 'mjVideo'], ['foreignVideo'], 'vid_') } };
    default:
      return {};
  }
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
 * `wellFormed`: only bodies the schema accepts, the rich account's key, no hostile headers (to get
 * past the gateway's own checks, as when the upstreams are what fails).
 */
export function routeCases(route: ServedRoute, wellFormed = false): fc.Arbitrary<Case> {
  const hints = hintsFor(route);
  const readsBody = route.methods.includes('POST');
  const method = readsBody ? 'POST' : (route.methods.find((m) => m !== 'HEAD') ?? 'GET');
  const path = hints.path ?? queryString(route.query, hints.query ?? {}).map((q) => route.path + q);
  const body: fc.Arbitrary<unknown> = !readsBody
    ? fc.constant(undefined)
    : route.body && wellFormed
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
      auth: wellFormed
        ? fc.constant({ authorization: 'Bearer {{key:rich}}' })
        : route.auth
          ? authHeaders
          : fc.oneof(fc.constant({}), authHeaders),
      extra: wellFormed ? fc.constant({}) : extraHeaders,
      contentType: wellFormed ? fc.constant('application/json') : contentType,
      encoding: wellFormed ? fc.constant(undefined) : encoding,
      head: fc.boolean(),
    })
    .map(({ path: p, body: b, auth, extra, contentType: ct, encoding: enc, head }) => {
      const headers: Record<string, string> = { ...auth, ...extra };
      if (b !== undefined && ct) headers['content-type'] = ct;
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
