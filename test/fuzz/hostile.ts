// Hand-written hostile requests, the kinds a schema never suggests: byte encodings, nesting depth,
// NUL, numbers no double holds, content types, compression bombs, HTTP framing, methods a route
// does not take, and paths no route serves. Each served route gets the ones that apply to it.
import { brotliCompressSync, constants, deflateSync, gzipSync } from 'node:zlib';
import type { Case } from './routes.js';
import type { ServedRoute } from './served.js';
import { jsonText, NUL, RAW_NUMBERS, RawJson } from './values.js';

/** A body each POST route accepts, so a hostile variant of it gets as far as the route's real work. */
function baseBody(path: string): Record<string, unknown> {
  const p = path.replace(/^\/api\/v1|^\/v1/, '');
  const chat = {
    model: 'openai/gpt-4o-mini',
    messages: [{ role: 'user', content: 'Once upon a time' }],
    max_tokens: 8,
  };
  const messages = {
    model: 'anthropic/claude-3-5-haiku',
    messages: [{ role: 'user', content: 'Once upon a time' }],
    max_tokens: 8,
  };
  switch (p) {
    case '/chat/completions':
      return chat;
    case '/completions':
      return { model: 'openai/gpt-4o-mini', prompt: 'Once upon a time', max_tokens: 8 };
    case '/messages':
      return messages;
    case '/messages/count_tokens':
      return { model: messages.model, messages: messages.messages };
    case '/responses':
      return {
        model: 'openai/gpt-4o-mini',
        input: 'Once upon a time',
        instructions: 'Be brief.',
        max_output_tokens: 8,
      };
    case '/audio/speech':
      return { model: 'openai/tts-1', input: 'Once upon a time', voice: 'alloy' };
    case '/api/talk-to-gpt':
      return { model: 'openai/gpt-4o-mini', prompt: 'Once upon a time' };
    case '/api/tts':
      return { model: 'elevenlabs/eleven_multilingual_v2', text: 'Once upon a time', voice: 'rachel' };
    case '/api/generate-video':
      return { model: 'kling/v2.1-master-text-to-video', prompt: 'a lighthouse', duration: '5' };
    case '/api/generate-video/extend':
      return { runId: '{{mjVideo}}', index: 0, prompt: 'further' };
    case '/api/generate-video/cancel':
      return { runId: '{{spareVideo}}' };
    default:
      return {};
  }
}

/** A concrete path for a router path (params filled with a fixture of the rich account). */
function concretePath(path: string): string {
  return path
    .replace(':id', path.includes('responses') ? '{{ownResponse}}' : '{{mediaId}}')
    .replace('*canonicalId', 'openai%2Fgpt-4o-mini');
}

/** Header values that have meant something to someone's parser (visible Latin-1, as Node sends). */
// biome-ignore lint/suspicious/noTemplateCurlyInString: a log4j-style lookup, as text
const HEADER_VALUES = ['%s%s%s%n', '${jndi:ldap://127.0.0.1/a}', "'; DROP TABLE accounts; --", 'x'.repeat(4000)];

const JSON_HEADERS = (key = '{{key:rich}}') => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });

/** The string fields of a body (top level, and the first message's content), by path. */
function stringSpots(body: Record<string, unknown>): Array<(b: Record<string, any>, v: unknown) => void> {
  const spots: Array<(b: Record<string, any>, v: unknown) => void> = [];
  for (const [k, v] of Object.entries(body)) if (typeof v === 'string') spots.push((b, x) => (b[k] = x));
  if (Array.isArray(body.messages)) spots.push((b, x) => (b.messages[0].content = x));
  return spots;
}

const clone = <T>(v: T): T => JSON.parse(JSON.stringify(v));

let bombs: Record<'gzip' | 'deflate' | 'br', Buffer> | undefined;
/** Small bodies that inflate far past any body limit: 1 GiB of gzip (concatenated members), 64 MiB deflate and br. */
function compressionBombs(): Record<'gzip' | 'deflate' | 'br', Buffer> {
  if (bombs) return bombs;
  const zeros = Buffer.alloc(16 * 1024 * 1024, 0x20);
  const member = gzipSync(zeros, { level: 9 });
  const big = Buffer.alloc(64 * 1024 * 1024, 0x20);
  bombs = {
    gzip: Buffer.concat(Array.from({ length: 64 }, () => member)),
    deflate: deflateSync(big, { level: 9 }),
    br: brotliCompressSync(big, { params: { [constants.BROTLI_PARAM_QUALITY]: 5 } }),
  };
  return bombs;
}

/**
 * Hostile bodies and encodings for one POST route. `heavy`: megabyte bodies and compression bombs
 * too (each costs the server a fraction of a second reading or inflating up to the body limit; the
 * reader is shared, so one route of each envelope gets them).
 */
function bodyCases(route: ServedRoute, path: string, heavy: boolean): Case[] {
  const base = baseBody(route.path);
  const out: Case[] = [];
  const add = (
    kind: string,
    body: unknown,
    headers: Record<string, string> = JSON_HEADERS(),
    encoding?: Case['encoding'],
  ) => out.push({ route: route.path, envelope: route.envelope, method: 'POST', path, headers, body, encoding, kind });
  const bytes = (s: string) => Buffer.from(s, 'latin1');
  const text = jsonText(base);

  // NUL and other characters a database or a C library may not hold, in every string field
  for (const [i, set] of stringSpots(base).entries()) {
    for (const [name, value] of [
      ['NUL', `a${NUL}b`],
      ['lone surrogate', 'a\ud800b'],
      ...(i
        ? []
        : ([
            ['BOM and bidi', '\ufeff\u202eabc'],
            ['C0 controls', '\u0001\u001b[31m\u0007'],
          ] as const)),
    ] as const) {
      const b = clone(base);
      set(b, value);
      add(`${name} in string field ${i}`, b);
    }
  }
  // byte encodings
  add('invalid UTF-8 in a string', Buffer.concat([bytes(text.slice(0, -1)), bytes(',"x":"\xff\xfe\xc0\xaf"}')]));
  add('CESU-8 surrogate bytes', Buffer.concat([bytes(text.slice(0, -1)), bytes(',"x":"\xed\xa0\x80"}')]));
  add('UTF-8 BOM', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text)]));
  add('UTF-16LE body', Buffer.from(text, 'utf16le'), {
    ...JSON_HEADERS(),
    'content-type': 'application/json; charset=utf-16',
  });
  add('UTF-32 body', Buffer.concat([...text].map((c) => Buffer.from([c.charCodeAt(0), 0, 0, 0]))));
  // depth: whole body, a passed-through field, and a schema the gateway reads
  add('body nested 10,000 deep', new RawJson(`${'['.repeat(10000)}${']'.repeat(10000)}`));
  add(
    'field nested 10,000 deep',
    new RawJson(`${text.slice(0, -1)},"x_deep":${'{"a":'.repeat(10000)}1${'}'.repeat(10000)}}`),
  );
  add('field nested 200 deep', new RawJson(`${text.slice(0, -1)},"x_deep":${'['.repeat(200)}${']'.repeat(200)}}`));
  if (route.path.endsWith('/messages')) {
    const b = {
      ...base,
      output_config: {
        format: {
          type: 'json_schema',
          schema: new RawJson(`${'{"type":"object","properties":{"a":'.repeat(5000)}{}${'}}'.repeat(5000)}`),
        },
      },
    };
    add('output_config.format.schema nested 5,000 deep', b);
  }
  // numbers
  for (const [k, v] of Object.entries(base))
    if (typeof v === 'number')
      for (const raw of RAW_NUMBERS.slice(0, 5)) add(`${k} = ${raw.slice(0, 20)}`, { ...base, [k]: new RawJson(raw) });
  // JSON that is not a request
  for (const [kind, raw] of [
    ['null body', 'null'],
    ['array body', '[]'],
    ['string body', '"hello"'],
    ['number body', '1e400'],
    ['truncated JSON', text.slice(0, -3)],
    ['trailing garbage', `${text} x`],
    ['trailing NUL byte', `${text}\u0000`],
    ['duplicate keys', `{"model":"a",${text.slice(1, -1)},"model":"b"}`],
    ['__proto__ key', `{"__proto__":{"polluted":1},${text.slice(1)}`],
    ['constructor.prototype key', `{"constructor":{"prototype":{"polluted":1}},${text.slice(1)}`],
    ['comments', `/* c */${text}`],
    ['single quotes', text.replace(/"/g, "'")],
  ] as const)
    add(kind, Buffer.from(raw, 'utf8'));
  // content types
  for (const type of [
    'text/plain',
    'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=b',
    'application/xml',
    'application/json; charset=latin1',
    '',
  ])
    add(
      `content-type '${type}'`,
      Buffer.from(
        type.startsWith('multipart')
          ? '--b\r\nContent-Disposition: form-data; name="model"\r\n\r\nx\r\n--b--\r\n'
          : type === 'application/xml'
            ? '<model>x</model>'
            : type.includes('form')
              ? 'model=x&prompt=y'
              : text,
      ),
      { ...JSON_HEADERS(), 'content-type': type },
    );
  add('empty JSON body', Buffer.alloc(0));
  // compression: real, bombs, broken, unknown
  add('gzip', base, JSON_HEADERS(), 'gzip');
  add('br', base, JSON_HEADERS(), 'br');
  if (heavy) {
    add('leading megabyte of spaces', Buffer.from(`${' '.repeat(1 << 20)}${text}`));
    add(
      'body over the size limit',
      Buffer.concat([Buffer.from('{"x":"'), Buffer.alloc(11 * 1024 * 1024, 0x61), Buffer.from('"}')]),
    );
    const b = compressionBombs();
    add('gzip bomb (1 GiB)', b.gzip, { ...JSON_HEADERS(), 'content-encoding': 'gzip' });
    add('deflate bomb (64 MiB)', b.deflate, { ...JSON_HEADERS(), 'content-encoding': 'deflate' });
    add('br bomb (64 MiB)', b.br, { ...JSON_HEADERS(), 'content-encoding': 'br' });
  }
  add('corrupt gzip', Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0xde, 0xad, 0xbe, 0xef]), {
    ...JSON_HEADERS(),
    'content-encoding': 'gzip',
  });
  add('truncated gzip', gzipSync(Buffer.from(text)).subarray(0, 20), { ...JSON_HEADERS(), 'content-encoding': 'gzip' });
  add('gzip bytes, no content-encoding', gzipSync(Buffer.from(text)));
  for (const enc of ['compress', 'gzip, gzip', 'identity, gzip', 'GZIP', 'x-gzip', 'zstd', '*'])
    add(
      `content-encoding '${enc}'`,
      enc.toLowerCase().includes('gzip') && !enc.includes(',') ? gzipSync(Buffer.from(text)) : Buffer.from(text),
      { ...JSON_HEADERS(), 'content-encoding': enc },
    );
  // hostile header values the route reads
  for (const h of ['x-provider', 'x-billing-mode', 'anthropic-beta', 'accept'])
    for (const v of HEADER_VALUES) add(`${h}: ${JSON.stringify(v).slice(0, 20)}`, base, { ...JSON_HEADERS(), [h]: v });
  add('a poor account', base, JSON_HEADERS('{{key:poor}}'));
  add('a revoked key', base, JSON_HEADERS('{{key:revoked}}'));
  return out;
}

/** Hand-framed requests: what an HTTP parser, not a schema, has to survive. */
function framingCases(route: ServedRoute, path: string): Case[] {
  const body = jsonText(baseBody(route.path));
  const auth = 'Authorization: Bearer {{key:rich}}';
  const json = 'Content-Type: application/json';
  const head = (extra: string, method = 'POST', target = path) =>
    `${method} ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}\r\n${json}\r\n${extra}`;
  const chunked = 'Transfer-Encoding: chunked\r\n';
  const raw = (
    kind: string,
    parts: Array<string | Buffer>,
    opts: { end?: boolean; gapMs?: number; expect?: number } = {},
  ): Case => ({
    route: route.path,
    envelope: route.envelope,
    method: 'POST',
    path,
    headers: {},
    raw: { parts, ...opts },
    kind: `framing: ${kind}`,
  });
  const len = Buffer.byteLength(body);
  return [
    raw(
      'content-length longer than the body, then half-closed',
      [`${head(`Content-Length: ${len + 50}\r\n`)}\r\n${body}`],
      { end: true },
    ),
    raw('content-length shorter than the body', [`${head(`Content-Length: ${len - 5}\r\n`)}\r\n${body}`]),
    raw('chunked and content-length', [
      `${head(`Content-Length: ${len}\r\n${chunked}`)}\r\n${len.toString(16)}\r\n${body}\r\n0\r\n\r\n`,
    ]),
    raw('two different content-lengths', [
      `${head(`Content-Length: ${len}\r\nContent-Length: ${len + 1}\r\n`)}\r\n${body}`,
    ]),
    raw('invalid chunk size', [`${head('Transfer-Encoding: chunked\r\n')}\r\nzz\r\n${body}\r\n0\r\n\r\n`]),
    raw('chunk extension garbage', [
      `${head('Transfer-Encoding: chunked\r\n')}\r\n${len.toString(16)};${'x'.repeat(5000)}\r\n${body}\r\n0\r\n\r\n`,
    ]),
    raw(
      'chunked body cut off',
      [`${head('Transfer-Encoding: chunked\r\n')}\r\n${len.toString(16)}\r\n${body.slice(0, 5)}`],
      { end: true },
    ),
    raw(
      'chunked, slow',
      [
        `${head('Transfer-Encoding: chunked\r\n')}\r\n3\r\n${body.slice(0, 3)}\r\n`,
        `${(len - 3).toString(16)}\r\n${body.slice(3)}\r\n0\r\n\r\n`,
      ],
      { gapMs: 300 },
    ),
    raw('transfer-encoding gzip, chunked', [
      `${head('Transfer-Encoding: gzip, chunked\r\n')}\r\n${len.toString(16)}\r\n${body}\r\n0\r\n\r\n`,
    ]),
    raw('header 20 KB long', [`${head(`X-Big: ${'a'.repeat(20000)}\r\nContent-Length: ${len}\r\n`)}\r\n${body}`]),
    raw('request target 20 KB long', [
      `${head(`Content-Length: ${len}\r\n`, 'POST', `${path}?${'a'.repeat(20000)}`)}\r\n${body}`,
    ]),
    raw('header without a colon', [`${head(`Content-Length: ${len}\r\nNoColonHere\r\n`)}\r\n${body}`]),
    raw('obs-fold header', [`${head(`Content-Length: ${len}\r\nX-Fold: a\r\n b\r\n`)}\r\n${body}`]),
    raw('NUL in a header value', [
      Buffer.from(`${head(`Content-Length: ${len}\r\nX-Nul: a\u0000b\r\n`)}\r\n${body}`, 'latin1'),
    ]),
    raw('bare LF line ends', [
      `POST ${path} HTTP/1.1\nHost: 127.0.0.1\n${auth}\n${json}\nContent-Length: ${len}\n\n${body}`,
    ]),
    raw('HTTP/1.0 without Host', [
      `POST ${path} HTTP/1.0\r\n${auth}\r\n${json}\r\nContent-Length: ${len}\r\n\r\n${body}`,
    ]),
    raw('absolute-form target', [
      `${head(`Content-Length: ${len}\r\n`, 'POST', `http://evil.example${path}`)}\r\n${body}`,
    ]),
    raw(
      'two requests pipelined',
      [`${head(`Content-Length: ${len}\r\n`)}\r\n${body}${head(`Content-Length: ${len}\r\n`)}\r\n${body}`],
      { expect: 2 },
    ),
    raw('smuggled second request in the body', [
      `${head(`Content-Length: 4\r\n${chunked}`)}\r\n0\r\n\r\nGET /api/check-balance HTTP/1.1\r\nHost: x\r\n\r\n`,
    ]),
    raw('expect 100-continue', [`${head(`Content-Length: ${len}\r\nExpect: 100-continue\r\n`)}\r\n`, body], {
      gapMs: 100,
    }),
    raw('expect something else', [`${head(`Content-Length: ${len}\r\nExpect: 200-ok\r\n`)}\r\n${body}`]),
    raw('closed in the middle of the headers', [`${head('Content-Le')}`], { end: true }),
    raw('body in the request line', [`POST ${path} {"a":1} HTTP/1.1\r\nHost: x\r\n\r\n`]),
    raw('unknown HTTP version', [`POST ${path} HTTP/9.9\r\nHost: x\r\nContent-Length: ${len}\r\n\r\n${body}`]),
    raw('lowercase method', [`post ${path} HTTP/1.1\r\nHost: x\r\nContent-Length: ${len}\r\n\r\n${body}`]),
  ];
}

const OTHER_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD', 'TRACE', 'PURGE', 'FOO'];

/** Every method a route does not serve: 405 (with Allow) or 501, in the route's envelope. */
function methodCases(route: ServedRoute, path: string): Case[] {
  return OTHER_METHODS.filter((m) => !route.methods.includes(m)).map((method) => ({
    route: route.path,
    envelope: route.envelope,
    method,
    path,
    headers: { authorization: 'Bearer {{key:rich}}' },
    kind: `method ${method}`,
  }));
}

/** A GET route's query with NUL, bad percent-encoding, arrays, overflow, in each declared parameter. */
function queryCases(route: ServedRoute, path: string): Case[] {
  const names = Object.keys(route.query?.properties ?? {});
  return names.flatMap((name) =>
    ['%00', 'a%00b', '%zz', '%E0%A4', '%ff', 'x'.repeat(9000), '1e400', '-1', '%5B%5D', '{{ownVideo}}%00'].map((v) => ({
      route: route.path,
      envelope: route.envelope,
      method: 'GET',
      path: `${path}?${name}=${v}&${name === 'model' ? 'runId' : 'model'}=x`,
      headers: { authorization: 'Bearer {{key:rich}}' },
      kind: `query ${name}=${v.slice(0, 12)}`,
    })),
  );
}

/** Path parameters with NUL, bad percent-encoding, traversal and length. */
function paramCases(route: ServedRoute): Case[] {
  if (!route.path.includes(':') && !route.path.includes('*')) return [];
  return [
    '%00',
    '{{ownResponse}}%00',
    '%zz',
    '%',
    '%E0%A4%A',
    '%2e%2e%2f%2e%2e',
    '..',
    '%C0%AF',
    'x'.repeat(5000),
    '%ef%bf%bf',
    '%ed%a0%80',
  ].map((id) => ({
    route: route.path,
    envelope: route.envelope,
    method: route.methods.includes('POST')
      ? 'POST'
      : route.methods.includes('DELETE') && !route.methods.includes('GET')
        ? 'DELETE'
        : 'GET',
    path: route.path.includes('media')
      ? `/api/media/${id}?{{mediaQuery}}`
      : route.path.replace(/:id|\*canonicalId/, id),
    headers: { authorization: 'Bearer {{key:rich}}' },
    kind: `path parameter ${id.slice(0, 16)}`,
  }));
}

/** Paths no route serves (the default envelope), and lookalikes of served ones. */
function unroutedCases(): Case[] {
  return [
    '/api/v1/nope',
    '/v2/chat/completions',
    '/api/v1/chat/completions/',
    '//api/v1/models',
    '/api/v1/models%00',
    '/%2e%2e/%2e%2e/etc/passwd',
    '/api/v1/CHAT/COMPLETIONS',
    '/api/v1/chat%2Fcompletions',
    `/${'a/'.repeat(2000)}`,
    '/api/v1/responses/',
    '/api/v1/responses//cancel',
    '*',
  ].map((path) => ({
    route: '(none)',
    envelope: 'openai' as const,
    method: path.includes('chat') ? 'POST' : 'GET',
    path,
    headers: { authorization: 'Bearer {{key:rich}}', 'content-type': 'application/json' },
    body: path.includes('chat')
      ? { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }
      : undefined,
    kind: 'unrouted path',
  }));
}

/**
 * The hand-written cases for every served route, plus the unrouted ones. A `/v1` path is the same
 * route as its `/api/v1` twin (one registration, two paths): it gets the methods and a sample of
 * the body cases. HTTP framing and inflating are the server's and the body reader's, shared by
 * every route: the whole set goes to one route of each envelope, a few cases to the others.
 */
export function hostileCases(routes: ServedRoute[]): Case[] {
  const out: Case[] = [];
  const paths = new Set(routes.map((r) => r.path));
  const framed = new Set<string>();
  for (const route of routes) {
    const path = concretePath(route.path);
    const twin = route.path.startsWith('/v1/') && paths.has(`/api${route.path}`);
    if (route.methods.includes('POST')) {
      const first = !twin && !framed.has(route.envelope);
      if (first) framed.add(route.envelope);
      const bodies = bodyCases(route, path, first);
      out.push(...(twin ? bodies.filter((_, i) => i % 6 === 0) : bodies));
      const framing = framingCases(route, path);
      out.push(...(first ? framing : framing.filter((_, i) => i % 8 === 0)));
    }
    out.push(...methodCases(route, path));
    if (route.query) out.push(...queryCases(route, path));
    if (!twin) out.push(...paramCases(route));
  }
  return [...out, ...unroutedCases()];
}
