// biome-ignore-all lint/suspicious/noExplicitAny: wire JSON, read field by field
// Tavily's search API: POST {base}/search with `Authorization: Bearer <TAVILY_API_KEY>` and
// {query, search_depth ("basic" | "advanced": our standard and deep), max_results (at most 20),
// include_answer, include_images, include_domains, exclude_domains, start_date, end_date}. The
// answer: {query, answer, images:[url | {url, description}], results:[{title, url, content,
// score, published_date?}], response_time}. Failures: {detail:{error}} with 400, 401, 429, 432
// (plan limit), 433 (pay-as-you-go limit), 5xx. Tavily has no structured output.
import type { Provider, SearchAdapter, SearchHit } from '../types.js';
import { badAnswer, checkOutputType, searchJson, text } from '../searchWire.js';

const OUTPUT_TYPES = ['searchResults', 'sourcedAnswer'] as const;
const MAX_RESULTS = 20;

const tavilySearch: SearchAdapter = {
  outputTypes: OUTPUT_TYPES,
  async search(req, target, signal) {
    checkOutputType(target.providerId, OUTPUT_TYPES, req);
    const deep = req.depth === 'deep';
    const body: Record<string, unknown> = {
      query: req.query,
      search_depth: deep ? 'advanced' : 'basic',
      max_results: Math.min(req.maxResults, MAX_RESULTS),
      include_answer: req.outputType === 'sourcedAnswer' ? (deep ? 'advanced' : 'basic') : false,
      include_images: req.includeImages === true,
    };
    if (req.includeDomains?.length) body.include_domains = req.includeDomains;
    if (req.excludeDomains?.length) body.exclude_domains = req.excludeDomains;
    if (req.fromDate) body.start_date = req.fromDate;
    if (req.toDate) body.end_date = req.toDate;
    const json = await searchJson(target.providerId, `${target.baseUrl.replace(/\/+$/, '')}/search`, {
      method: 'POST',
      headers: { authorization: `Bearer ${target.apiKey ?? ''}`, 'content-type': 'application/json' },
      body,
      signal,
    });
    if (!Array.isArray(json.results)) throw badAnswer(target.providerId, 'has no results array');
    const results: SearchHit[] = json.results
      .filter((r: any) => typeof r?.url === 'string')
      .map((r: any) => ({
        type: 'text' as const,
        title: text(r.title),
        url: r.url,
        content: text(r.content),
        ...(typeof r.published_date === 'string' ? { publishedDate: r.published_date } : {}),
      }));
    if (req.includeImages && Array.isArray(json.images))
      for (const img of json.images) {
        const url = typeof img === 'string' ? img : img?.url;
        if (typeof url === 'string')
          results.push({ type: 'image', title: text(img?.description), url, content: '', imageUrl: url });
      }
    if (req.outputType === 'sourcedAnswer') {
      if (typeof json.answer !== 'string' || !json.answer) throw badAnswer(target.providerId, 'has no answer');
      return { answer: json.answer, results };
    }
    return { results };
  },
};

export const tavilyProvider: Provider = { protocol: 'tavily', search: tavilySearch };
