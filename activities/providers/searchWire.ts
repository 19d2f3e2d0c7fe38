// What the web search adapters (linkup/, tavily/, searxng/) share: one JSON round trip through the
// shared HTTP client, the checks every answer gets, and the domain rule (`example.com` admits its
// subdomains) for upstreams that filter loosely or not at all.
import { RequestError, upstreamError } from '../core/errors.js';
import { readJson, send, statusError } from './http.js';
import type { SearchHit, SearchOutputType, SearchRequest } from './types.js';

/** A request the upstream answers 2xx with JSON; anything else is the upstream's failure. */
export async function searchJson(
  providerId: string,
  url: string,
  init: { method: 'GET' | 'POST'; headers: Record<string, string>; body?: unknown; signal: AbortSignal },
  // biome-ignore lint/suspicious/noExplicitAny: wire JSON, read field by field by each adapter
): Promise<any> {
  const res = await send(providerId, url, {
    method: init.method,
    headers: { accept: 'application/json', ...init.headers },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
    signal: init.signal,
  });
  if (res.status < 200 || res.status >= 300) throw await statusError(providerId, res);
  const json = await readJson(providerId, res);
  if (!json || typeof json !== 'object')
    throw upstreamError('the search answer is not a JSON object', 502, true, {
      code: 'upstream_bad_response',
      providerId,
    });
  return json;
}

/** An answer that breaks the protocol: retryable (another provider may do better). */
export const badAnswer = (providerId: string, why: string) =>
  upstreamError(`the search answer ${why}`, 502, true, { code: 'upstream_bad_response', providerId });

/** Refuse, before any call, an output type this protocol cannot give (400, the caller can change it). */
export function checkOutputType(providerId: string, supported: readonly SearchOutputType[], req: SearchRequest): void {
  if (supported.includes(req.outputType)) return;
  throw new RequestError(
    400,
    'invalid_parameter_value',
    `The search provider '${providerId}' cannot give outputType '${req.outputType}' (it gives ${supported.join(', ')}). Pick another outputType or provider.`,
    { param: 'outputType', providerId },
  );
}

/** `url`'s host is `domain` or one of its subdomains. */
function inDomain(url: string, domain: string): boolean {
  let host: string;
  try {
    host = new URL(url).hostname.toLowerCase();
  } catch {
    return false;
  }
  const d = domain.toLowerCase().replace(/^\.+|\.+$/g, '');
  return host === d || host.endsWith(`.${d}`);
}

/** The hits the request's domain and date filters admit (undated hits pass the date filters). */
export function filtered(hits: SearchHit[], req: SearchRequest): SearchHit[] {
  return hits.filter((h) => {
    if (req.includeDomains?.length && !req.includeDomains.some((d) => inDomain(h.url, d))) return false;
    if (req.excludeDomains?.some((d) => inDomain(h.url, d))) return false;
    const day = h.publishedDate?.slice(0, 10);
    if (day && /^\d{4}-\d{2}-\d{2}$/.test(day)) {
      if (req.fromDate && day < req.fromDate) return false;
      if (req.toDate && day > req.toDate) return false;
    }
    return true;
  });
}

/** Text of a wire field: a string, else ''. */
export const text = (v: unknown): string => (typeof v === 'string' ? v : '');
