// biome-ignore-all lint/suspicious/noExplicitAny: wire JSON, read field by field
// Linkup's search API (the spec's default search provider): POST {base}/search with
// `Authorization: Bearer <LINKUP_API_KEY>` and {q, depth, outputType, structuredOutputSchema,
// includeImages, fromDate, toDate, includeDomains, excludeDomains, maxResults}. Its answers:
// `searchResults` {results:[{type:"text",name,url,content} | {type:"image",name,url}]},
// `sourcedAnswer` {answer, sources:[{name,url,snippet}]}, `structured` the object itself.
// Failures come as {statusCode, error:{code, message, details}} (read by http.ts's statusError).
import type { Provider, SearchAdapter, SearchHit } from '../types.js';
import { badAnswer, checkOutputType, searchJson, text } from '../searchWire.js';

const OUTPUT_TYPES = ['searchResults', 'sourcedAnswer', 'structured'] as const;

function hitOf(r: any): SearchHit | null {
  if (!r || typeof r.url !== 'string') return null;
  if (r.type === 'image') return { type: 'image', title: text(r.name), url: r.url, content: '', imageUrl: r.url };
  return { type: 'text', title: text(r.name), url: r.url, content: text(r.content) };
}

const linkupSearch: SearchAdapter = {
  outputTypes: OUTPUT_TYPES,
  async search(req, target, signal) {
    checkOutputType(target.providerId, OUTPUT_TYPES, req);
    const body: Record<string, unknown> = {
      q: req.query,
      depth: req.depth,
      outputType: req.outputType,
      includeImages: req.includeImages === true,
      maxResults: req.maxResults,
    };
    if (req.structuredOutputSchema !== undefined) body.structuredOutputSchema = req.structuredOutputSchema;
    if (req.fromDate) body.fromDate = req.fromDate;
    if (req.toDate) body.toDate = req.toDate;
    if (req.includeDomains?.length) body.includeDomains = req.includeDomains;
    if (req.excludeDomains?.length) body.excludeDomains = req.excludeDomains;
    const json = await searchJson(target.providerId, `${target.baseUrl.replace(/\/+$/, '')}/search`, {
      method: 'POST',
      headers: { authorization: `Bearer ${target.apiKey ?? ''}`, 'content-type': 'application/json' },
      body,
      signal,
    });
    if (req.outputType === 'structured') return { results: [], structured: json };
    if (req.outputType === 'sourcedAnswer') {
      if (typeof json.answer !== 'string' || !Array.isArray(json.sources))
        throw badAnswer(target.providerId, 'has no answer and sources');
      const results = json.sources
        .map((s: any) => (typeof s?.url === 'string' ? hitOf({ ...s, content: s.snippet }) : null))
        .filter(Boolean) as SearchHit[];
      return { answer: json.answer, results };
    }
    if (!Array.isArray(json.results)) throw badAnswer(target.providerId, 'has no results array');
    return { results: json.results.map(hitOf).filter(Boolean) as SearchHit[] };
  },
};

export const linkupProvider: Provider = { protocol: 'linkup', search: linkupSearch };
