// What a route's schema cannot know, per router path: which models it serves (so a request gets as
// far as the route's real work), ids of things that exist (a stored response, a video job, a signed
// media URL, written as {{placeholders}} filled in when a case is sent, so a seed makes the same
// cases every run), plausible message and content shapes, voices, and URLs a caller may hand the
// gateway to fetch, including ones it must never fetch.
import fc from 'fast-check';
import { catalog } from '../../activities/catalog/catalog.js';
import type { ServedRoute } from './served.js';
import type { Hints } from './schemaArbitrary.js';
import { fuzzText, NUL } from './values.js';

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

/**
 * A model name for a route: mostly the models it serves (so the route does its real work), then
 * aliases, suffixes and nonsense.
 */
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
export const toWellFormed = (s: string) =>
  s.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd');

function encodeSegment(s: string): string {
  return encodeURIComponent(toWellFormed(s));
}

export interface RouteHints {
  body?: Hints;
  query?: Hints;
  /** the request path (params filled in, query added) */
  path?: fc.Arbitrary<string>;
}

const videoModels = () => ids('/api/generate-video');
const imageModels = () => ids('/api/v1/images', ['image']);

/** An image request's fields: real image models, their sizes, references in every accepted shape and some refused ones. */
function imageBody(): Hints {
  const ref = fc.oneof(
    imageUrl,
    imageUrl.map((url) => ({ type: 'image_url', image_url: { url } })),
    fc.constant({}),
  );
  return {
    model: modelName(imageModels()),
    prompt: text(),
    n: fc.integer({ min: 0, max: 12 }),
    nImages: fc.integer({ min: 0, max: 5 }),
    size: fc.constantFrom('1024x1024', '1536x1024', '1792x1024', '999x999', 'big'),
    resolution: fc.constantFrom('1024x1024', '512x512', '1x1'),
    quality: fc.constantFrom('low', 'medium', 'high', 'standard', 'hd', 'ultra'),
    aspect_ratio: fc.constantFrom('1:1', '16:9', '5:1'),
    input_references: fc.array(ref, { maxLength: 3 }),
    imageDataUrl: imageUrl,
    maskDataUrl: imageUrl,
    image: imageUrl,
    provider: fc.constantFrom({}, '', { order: ['openai'] }),
    stream: fc.boolean(),
    response_format: fc.constantFrom('b64_json', 'url'),
  };
}

/** Hints per router path: what the schema cannot know. */
export function hintsFor(route: ServedRoute): RouteHints {
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
          // the advisor: another chat model (sometimes the same one, or nonsense), either mode
          'advisor.model': modelName(ids('/v1/chat/completions')),
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
    case '/messages/batches':
      // each request's params as the messages route's; ids mostly well-formed (and sometimes repeated)
      return {
        body: {
          'requests[].custom_id': fc.oneof(fc.stringMatching(/^[a-zA-Z0-9_-]{1,12}$/), fc.constant('same')),
          ...Object.fromEntries(Object.entries(messagesHints()).map(([k, v]) => [`requests[].params.${k}`, v])),
        },
      };
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
    case '/embeddings':
      return {
        body: {
          model: modelName(ids('/v1/embeddings')),
          input: fc.oneof(
            fuzzText({ minLength: 1, maxLength: 40, nul: true }),
            fc.array(text(), { maxLength: 3 }),
            fc.array(fc.integer({ min: -1, max: 100_000 }), { maxLength: 4 }),
          ),
          encoding_format: fc.constantFrom('float', 'base64', 'int8'),
          dimensions: fc.oneof(fc.integer({ min: 0, max: 4000 }), fc.constant(384)),
        },
      };
    case '/moderations':
      return {
        body: {
          model: modelName(ids('/v1/moderations')),
          input: fc.oneof(
            fuzzText({ minLength: 0, maxLength: 40, nul: true }),
            fc.array(text(), { maxLength: 3 }),
            fc.array(fc.record({ type: fc.constantFrom('text', 'image_url'), text: text() }), { maxLength: 2 }),
          ),
        },
      };
    case '/decisions':
    case '/systemone':
      return {
        body: {
          model: modelName(ids('/v1/decisions')),
          state: fc.oneof(text(), fc.array(text(), { maxLength: 3 })),
          questions: fc.dictionary(
            fc.constantFrom('a', 'b', 'c'),
            fc.oneof(
              fc.record({ type: fc.constant('noul'), instructions: text() }),
              fc.record({
                type: fc.constant('choice'),
                instructions: text(),
                criteria: fc.dictionary(text(), fc.oneof(text(), fc.constant(null)), { maxKeys: 4 }),
              }),
              fc.record({
                type: fc.constant('score'),
                instructions: text(),
                criteria: fc.array(text(), { maxLength: 11 }),
                isolated: fc.boolean(),
              }),
            ),
            { maxKeys: 3 },
          ),
        },
      };
    case '/memory':
      return {
        body: {
          messages: fc.oneof(chatMessages, fc.constant([])),
          expiration_days: fc.integer({ min: 0, max: 400 }),
          model_context_limit: fc.integer({ min: 0, max: 200_000 }),
        },
      };
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
    case '/images':
    case '/images/generations':
    case '/images/edits':
    case '/images/edit':
    case '/api/generate-image':
      return { body: imageBody() };
    case '/images/models/*modelId/endpoints':
      return {
        path: fc
          .oneof(fc.constantFrom(...imageModels()), fuzzText({ minLength: 1, maxLength: 40 }))
          .map((id) => `${route.path.startsWith('/v1') ? '' : '/api'}/v1/images/models/${encodeSegment(id)}/endpoints`),
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
    case '/files/:id':
    case '/files/:id/content':
      return {
        path: segment(idOf(['ownFile', 'spareFile'], ['foreignFile'], 'file_')).map((id) =>
          route.path.replace(':id', id),
        ),
      };
    case '/files':
      return {
        query: {
          after: idOf(['ownFile', 'spareFile'], ['foreignFile'], 'file_'),
          before: idOf(['ownFile'], ['foreignFile'], 'file_'),
          purpose: fc.oneof(fc.constantFrom('batch', 'batch_output', 'fine-tune'), fuzzText({ maxLength: 20 })),
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
