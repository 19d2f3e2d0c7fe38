// Web search: the search capability's contract.
import type { ProviderTarget } from './target.js';

export type SearchDepth = 'standard' | 'deep';
export type SearchOutputType = 'searchResults' | 'sourcedAnswer' | 'structured';

/** A web search as every search protocol gets it; the adapter maps it to its own field names. */
export interface SearchRequest {
  query: string;
  depth: SearchDepth;
  outputType: SearchOutputType;
  /** a JSON schema (as text, root of type object) for `structured` */
  structuredOutputSchema?: string;
  includeImages?: boolean;
  /** YYYY-MM-DD, inclusive */
  fromDate?: string;
  toDate?: string;
  /** bare host names (`example.com` also admits its subdomains) */
  includeDomains?: string[];
  excludeDomains?: string[];
  /** results wanted (an upstream may give fewer) */
  maxResults: number;
}

/** One result, in the spec's `searchResults` shape. */
export interface SearchHit {
  type: 'text' | 'image';
  title: string;
  url: string;
  /** the text the provider returned for it (a snippet, or the page's text for a fetched page) */
  content: string;
  imageUrl?: string;
  /** YYYY-MM-DD or an ISO timestamp, when the provider says */
  publishedDate?: string;
}

export interface SearchAnswer {
  /** what was found, best first */
  results: SearchHit[];
  /** `sourcedAnswer`: the provider's answer (its sources are `results`) */
  answer?: string;
  /** `structured`: the object the provider filled in */
  structured?: unknown;
}

/**
 * Query in, results out, in one call. A provider that cannot give the output type asked for (an
 * answer, a structured object) refuses with a RequestError (400, not retried) before calling its
 * upstream; other failures are RequestErrors, as for chat. Nothing is billed for a failure.
 */
export interface SearchAdapter {
  /** the output types this protocol can give */
  readonly outputTypes: readonly SearchOutputType[];
  search(req: SearchRequest, target: ProviderTarget, signal: AbortSignal): Promise<SearchAnswer>;
}
