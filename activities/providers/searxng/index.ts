// biome-ignore-all lint/suspicious/noExplicitAny: wire JSON, read field by field
// A self-hosted SearXNG (its base URL is the setting SEARXNG_URL; no key): GET
// {base}/search?q=…&format=json&pageno=1 (the instance must list `json` under search.formats,
// else it answers 403), with `time_range` (day | month | year) for date filters. The answer:
// {query, number_of_results, results:[{url, title, content, engine, publishedDate?, img_src?,
// score}], answers, infoboxes, suggestions, unresponsive_engines}. SearXNG has no domain filter of
// its own (`site:` reaches only some engines), so domains and exact dates are applied to what it
// returns; it only gives results (no answer, no structured output).
//
// Deep search fetches the top results' pages (route option `fetch_pages`, default 3) and uses
// their text in place of the snippets. Those URLs come from the open web, so they are fetched
// through the gateway's SSRF guard (core/safeFetch.ts: public addresses only, each redirect
// vetted, size and time capped); a page that cannot be fetched keeps its snippet.
import { MediaFetchError, safeFetch } from '../../core/safeFetch.js';
import { badAnswer, checkOutputType, filtered, searchJson, text } from '../searchWire.js';
import type { Provider, SearchAdapter, SearchHit, SearchRequest } from '../types.js';

const OUTPUT_TYPES = ['searchResults'] as const;
const PAGE_MAX_BYTES = 2 * 1024 * 1024;
const PAGE_TIMEOUT_MS = 10_000;
/** characters of a fetched page's text kept as its content */
const PAGE_MAX_CHARS = 6_000;

/** SearXNG's coarse `time_range` that covers `fromDate` (the exact day is filtered afterwards). */
function timeRange(fromDate: string | undefined): string | undefined {
  if (!fromDate) return undefined;
  const days = (Date.now() - Date.parse(`${fromDate}T00:00:00Z`)) / 86_400_000;
  if (!(days >= 0)) return undefined; // a date in the future: nothing coarse to add
  return days <= 1 ? 'day' : days <= 31 ? 'month' : days <= 366 ? 'year' : undefined;
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' };

/** The readable text of an HTML page: scripts, styles and tags removed, entities decoded, spaces collapsed. */
function pageText(html: string): string {
  return html
    .replace(/<(script|style|noscript|template|svg)\b[\s\S]*?<\/\1\s*>/gi, ' ')
    .replace(/<!--[\s\S]*?-->/g, ' ')
    .replace(/<\/(p|div|h[1-6]|li|tr|br|section|article)\s*>|<br\s*\/?>/gi, '\n')
    .replace(/<[^>]+>/g, ' ')
    .replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (m, e: string) => {
      if (e[0] === '#') {
        const n = e[1].toLowerCase() === 'x' ? Number.parseInt(e.slice(2), 16) : Number(e.slice(1));
        return Number.isFinite(n) && n > 0 && n < 0x110000 ? String.fromCodePoint(n) : ' ';
      }
      return ENTITIES[e.toLowerCase()] ?? m;
    })
    .replace(/[ \t\f\v\r]+/g, ' ')
    .replace(/\s*\n\s*/g, '\n')
    .trim();
}

/** Replace the first `n` text hits' snippets with their pages' text, fetched through the SSRF guard. */
async function withPages(providerId: string, hits: SearchHit[], n: number, signal: AbortSignal): Promise<void> {
  const targets = hits.filter((h) => h.type === 'text').slice(0, n);
  await Promise.all(
    targets.map(async (h) => {
      try {
        const page = await safeFetch(h.url, {
          signal,
          maxBytes: PAGE_MAX_BYTES,
          timeoutMs: PAGE_TIMEOUT_MS,
          errorCode: 'search_page_unavailable',
        });
        if (page.mediaType && !/^text\/(html|plain)$|^application\/xhtml\+xml$/.test(page.mediaType)) return;
        const body = page.data.toString('utf8');
        const content = page.mediaType === 'text/plain' ? body.trim() : pageText(body);
        if (content) h.content = content.slice(0, PAGE_MAX_CHARS);
      } catch (err) {
        if (!(err instanceof MediaFetchError)) throw err;
        console.warn(
          `[search] ${providerId}: page ${h.url.slice(0, 200)} kept as a snippet: ${err.reason} ${err.detail ?? ''}`,
        );
      }
    }),
  );
}

const searxngSearch: SearchAdapter = {
  outputTypes: OUTPUT_TYPES,
  async search(req: SearchRequest, target, signal) {
    checkOutputType(target.providerId, OUTPUT_TYPES, req);
    const url = new URL(`${target.baseUrl.replace(/\/+$/, '')}/search`);
    url.searchParams.set('q', req.query);
    url.searchParams.set('format', 'json');
    url.searchParams.set('pageno', '1');
    const range = timeRange(req.fromDate);
    if (range) url.searchParams.set('time_range', range);
    if (req.includeImages) url.searchParams.set('categories', 'general,images');
    const headers: Record<string, string> = {};
    if (target.apiKey) headers.authorization = `Bearer ${target.apiKey}`;
    const json = await searchJson(target.providerId, url.href, { method: 'GET', headers, signal });
    if (!Array.isArray(json.results)) throw badAnswer(target.providerId, 'has no results array');
    const hits: SearchHit[] = json.results
      .filter((r: any) => typeof r?.url === 'string')
      .map((r: any): SearchHit => {
        const image = r.category === 'images' && typeof r.img_src === 'string';
        return {
          type: image ? 'image' : 'text',
          title: text(r.title),
          url: r.url,
          content: text(r.content),
          ...(image ? { imageUrl: r.img_src } : {}),
          ...(typeof r.publishedDate === 'string' ? { publishedDate: r.publishedDate } : {}),
        };
      });
    const results = filtered(hits, req).slice(0, req.maxResults);
    if (req.depth === 'deep') {
      const pages = Number(target.options.fetch_pages ?? 3);
      await withPages(target.providerId, results, Number.isInteger(pages) && pages >= 0 ? pages : 3, signal);
    }
    return { results };
  },
};

export const searxngProvider: Provider = { protocol: 'searxng', search: searxngSearch };
