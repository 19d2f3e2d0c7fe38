// biome-ignore-all lint/suspicious/noExplicitAny: request bodies are arbitrary JSON
// Loopback web search upstreams for tests, each speaking its real protocol over a shared corpus of
// documents (a document matches when its title or text holds a word of the query):
//   Linkup   POST {base}/v1/search, Bearer key; {q, depth, outputType, structuredOutputSchema,
//            includeImages, fromDate, toDate, includeDomains, excludeDomains, maxResults};
//            answers {results:[{type,name,url,content}]}, {answer, sources:[{name,url,snippet}]},
//            or the structured object; errors {statusCode, error:{code, message, details}}.
//   Tavily   POST {base}/search, Bearer key; {query, search_depth, max_results, include_answer,
//            include_domains, exclude_domains, start_date, end_date}; answers {query, answer,
//            images, results:[{title,url,content,score,published_date}], response_time};
//            errors {detail:{error}} (401, 400, 432 plan limit, 429).
//   SearXNG  GET {base}/search?q=…&format=json (403 HTML unless format=json); answers {query,
//            number_of_results, results:[{url,title,content,engine,publishedDate,score,category}],
//            answers, suggestions, unresponsive_engines}; time_range filters coarsely, no domains.
// Each can be scripted per request (a status, a dropped connection, a delay) and records requests.
// Also: a loopback web-page server (`startPages`), for SearXNG's deep search fetching pages.
import http from 'node:http';
import { listenOnLoopback, closeServer } from './loopback.js';

export interface Doc {
  title: string;
  url: string;
  content: string;
  /** YYYY-MM-DD */
  date?: string;
}

interface Failure {
  status?: number;
  /** a body in the provider's own error shape is written for `status` unless `raw` is given */
  raw?: string;
  drop?: boolean;
  delayMs?: number;
}

interface Recorded {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: http.IncomingHttpHeaders;
  body: any;
}

export interface SearchUpstream {
  url: string;
  apiKey: string;
  requests: Recorded[];
  script(...f: Failure[]): void;
  reset(): void;
  close(): Promise<void>;
}

type Kind = 'linkup' | 'tavily' | 'searxng';

const words = (s: string) => s.toLowerCase().match(/[a-z0-9]+/g) ?? [];
function matches(docs: Doc[], q: string): Doc[] {
  const want = new Set(words(q).filter((w) => w.length > 2));
  return docs.filter((d) => words(`${d.title} ${d.content}`).some((w) => want.has(w)));
}
const host = (u: string) => new URL(u).hostname;
const inDomain = (u: string, d: string) => host(u) === d || host(u).endsWith(`.${d}`);
function byDomainAndDate(docs: Doc[], inc?: string[], exc?: string[], from?: string, to?: string): Doc[] {
  return docs.filter(
    (d) =>
      (!inc?.length || inc.some((x) => inDomain(d.url, x))) &&
      !exc?.some((x) => inDomain(d.url, x)) &&
      (!from || !d.date || d.date >= from) &&
      (!to || !d.date || d.date <= to),
  );
}

function errorBody(kind: Kind, status: number): string {
  const message = status === 401 ? 'Invalid API key' : status === 429 ? 'Too many requests' : `failure ${status}`;
  if (kind === 'linkup')
    return JSON.stringify({
      statusCode: status,
      error: { code: status === 401 ? 'UNAUTHORIZED' : 'ERROR', message, details: [] },
    });
  if (kind === 'tavily') return JSON.stringify({ detail: { error: message } });
  return `<html><body><h1>${status}</h1><p>${message}</p></body></html>`;
}

export async function startSearchUpstream(
  kind: Kind,
  docs: Doc[],
  apiKey = `${kind}-loopback-key`,
): Promise<SearchUpstream> {
  const requests: Recorded[] = [];
  const queue: Failure[] = [];
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const u = new URL(req.url ?? '/', 'http://x');
    let body: any;
    try {
      body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : undefined;
    } catch {
      body = undefined;
    }
    requests.push({ method: req.method ?? '', path: u.pathname, query: u.searchParams, headers: req.headers, body });
    const send = (status: number, text: string, type = 'application/json') => {
      res.writeHead(status, { 'content-type': type });
      res.end(text);
    };
    const fail = queue.shift();
    if (fail?.delayMs) await new Promise((r) => setTimeout(r, fail.delayMs));
    if (fail?.drop) return void res.socket?.destroy();
    if (fail?.status)
      return send(
        fail.status,
        fail.raw ?? errorBody(kind, fail.status),
        kind === 'searxng' ? 'text/html' : 'application/json',
      );
    if (kind !== 'searxng' && req.headers.authorization !== `Bearer ${apiKey}`) return send(401, errorBody(kind, 401));

    if (kind === 'linkup') {
      if (req.method !== 'POST' || u.pathname !== '/v1/search') return send(404, errorBody(kind, 404));
      const bad = (message: string) =>
        send(400, JSON.stringify({ statusCode: 400, error: { code: 'VALIDATION_ERROR', message, details: [] } }));
      if (typeof body?.q !== 'string' || !body.q) return bad('q must be a non-empty string');
      if (!['standard', 'deep', 'fast'].includes(body.depth)) return bad('depth must be one of fast, standard, deep');
      if (!['searchResults', 'sourcedAnswer', 'structured'].includes(body.outputType)) return bad('invalid outputType');
      if (body.outputType === 'structured' && typeof body.structuredOutputSchema !== 'string')
        return bad('structuredOutputSchema is required');
      const found = byDomainAndDate(
        matches(docs, body.q),
        body.includeDomains,
        body.excludeDomains,
        body.fromDate,
        body.toDate,
      ).slice(0, body.maxResults ?? 10);
      if (body.outputType === 'structured') {
        const schema = JSON.parse(body.structuredOutputSchema);
        const out: Record<string, unknown> = {};
        for (const k of Object.keys(schema.properties ?? {})) out[k] = found[0]?.title ?? null;
        return send(200, JSON.stringify(out));
      }
      if (body.outputType === 'sourcedAnswer')
        return send(
          200,
          JSON.stringify({
            answer: found.length ? `According to ${found[0].title}: ${found[0].content}` : 'No answer found.',
            sources: found.map((d) => ({ name: d.title, url: d.url, snippet: d.content })),
          }),
        );
      const results: any[] = found.map((d) => ({ type: 'text', name: d.title, url: d.url, content: d.content }));
      if (body.includeImages && found[0])
        results.push({ type: 'image', name: found[0].title, url: `${found[0].url}/image.png` });
      return send(200, JSON.stringify({ results }));
    }

    if (kind === 'tavily') {
      if (req.method !== 'POST' || u.pathname !== '/search') return send(404, errorBody(kind, 404));
      if (typeof body?.query !== 'string' || !body.query)
        return send(400, JSON.stringify({ detail: { error: 'Query is missing.' } }));
      if (body.search_depth !== undefined && !['basic', 'advanced', 'fast', 'ultra-fast'].includes(body.search_depth))
        return send(400, JSON.stringify({ detail: { error: 'Invalid search depth.' } }));
      const found = byDomainAndDate(
        matches(docs, body.query),
        body.include_domains,
        body.exclude_domains,
        body.start_date,
        body.end_date,
      ).slice(0, body.max_results ?? 5);
      return send(
        200,
        JSON.stringify({
          query: body.query,
          follow_up_questions: null,
          answer: body.include_answer ? (found[0] ? `${found[0].title}: ${found[0].content}` : 'Nothing found.') : null,
          images:
            body.include_images && found[0] ? [{ url: `${found[0].url}/img.jpg`, description: found[0].title }] : [],
          results: found.map((d, i) => ({
            title: d.title,
            url: d.url,
            content: d.content,
            score: 0.9 - i / 10,
            raw_content: null,
            ...(d.date ? { published_date: d.date } : {}),
          })),
          response_time: 0.42,
          request_id: `req-${requests.length}`,
        }),
      );
    }

    // SearXNG
    if (req.method !== 'GET' || u.pathname !== '/search') return send(404, errorBody(kind, 404), 'text/html');
    if (u.searchParams.get('format') !== 'json') return send(403, errorBody(kind, 403), 'text/html');
    const q = u.searchParams.get('q') ?? '';
    const range = u.searchParams.get('time_range');
    const days = range === 'day' ? 1 : range === 'month' ? 31 : range === 'year' ? 366 : undefined;
    const since = days ? new Date(Date.now() - days * 86_400_000).toISOString().slice(0, 10) : undefined;
    const found = matches(docs, q).filter((d) => !since || !d.date || d.date >= since);
    return send(
      200,
      JSON.stringify({
        query: q,
        number_of_results: found.length,
        results: found.map((d, i) => ({
          url: d.url,
          title: d.title,
          content: d.content,
          engine: 'duckduckgo',
          engines: ['duckduckgo'],
          parsed_url: ['https', host(d.url), new URL(d.url).pathname, '', '', ''],
          template: 'default.html',
          positions: [i + 1],
          score: 1 / (i + 1),
          category: 'general',
          ...(d.date ? { publishedDate: `${d.date}T00:00:00` } : {}),
        })),
        answers: [],
        corrections: [],
        infoboxes: [],
        suggestions: [],
        unresponsive_engines: [],
      }),
    );
  });
  const { port } = await listenOnLoopback(server);
  return {
    url: kind === 'linkup' ? `http://127.0.0.1:${port}/v1` : `http://127.0.0.1:${port}`,
    apiKey,
    requests,
    script: (...f) => void queue.push(...f),
    reset: () => {
      requests.length = 0;
      queue.length = 0;
    },
    close: () => closeServer(server),
  };
}

/** A loopback web server answering each path with an HTML page (`/<name>` → pages[name]). */
export async function startPages(
  pages: Record<string, string>,
): Promise<{ url: string; hits: string[]; close(): Promise<void> }> {
  const hits: string[] = [];
  const server = http.createServer((req, res) => {
    const name = (req.url ?? '/').slice(1);
    hits.push(name);
    if (!(name in pages)) {
      res.writeHead(404, { 'content-type': 'text/html' });
      return void res.end('<h1>not found</h1>');
    }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(pages[name]);
  });
  const { origin } = await listenOnLoopback(server);
  return {
    url: origin,
    hits,
    close: () => closeServer(server),
  };
}
