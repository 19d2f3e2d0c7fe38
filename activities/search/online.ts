// Web search before a model call (`:online`, `web_search`, `web_search_options` on chat, responses
// and talk-to-gpt): the latest user message is searched for (a metered call of its own, charged
// once under `<requestId>:search`), the results go before that message as a system message
// (context.ts), and the answer's citations are returned. Like `:memory`, the search is charged
// when it succeeds and given back if the answer it was for never reaches the caller (api/textRoute.ts).
// A balance that cannot pay for the search is the spec's 402 `webSearch_balance_required`; one that
// pays for the search but not for the model call as well, `both_balance_required`.
import type { Caller } from '../accounts/keys.js';
import { RequestError } from '../core/errors.js';
import type { Message } from '../core/types.js';
import type { SearchHit } from '../providers/types.js';
import { searchPrompt, searchQuery, withSearchContext } from './context.js';
import { SearchCall, type SearchOutcome, searchBalanceError } from './search.js';
import type { WebSearchSettings } from './settings.js';

/** longest query sent to a search provider (the latest user message, cut) */
const QUERY_MAX_CHARS = 1_000;

export interface OnlineSearch {
  messages: Message[];
  hits: SearchHit[];
  call: SearchCall;
  outcome: SearchOutcome;
  settings: WebSearchSettings;
}

export async function withWebSearch(
  caller: Caller,
  requestId: string,
  messages: Message[],
  settings: WebSearchSettings,
  signal: AbortSignal,
): Promise<OnlineSearch> {
  const query = searchQuery(messages).slice(0, QUERY_MAX_CHARS);
  if (!query)
    throw new RequestError(
      400,
      'invalid_parameter_value',
      `Web search (asked for by ${settings.source}) searches for the latest user message, and there is no user message with text.`,
      { param: 'messages' },
    );
  const call = new SearchCall(
    caller,
    `${requestId}:search`,
    {
      query,
      depth: settings.depth,
      outputType: 'searchResults',
      maxResults: settings.maxResults,
      includeDomains: settings.includeDomains,
      excludeDomains: settings.excludeDomains,
      fromDate: settings.fromDate,
      toDate: settings.toDate,
    },
    settings.provider,
  );
  let outcome: SearchOutcome;
  try {
    outcome = await call.run(signal);
  } catch (err) {
    if (err instanceof RequestError && err.status === 402 && err.code === 'insufficient_balance')
      throw searchBalanceError(err, 'webSearch_balance_required', `the web search (${settings.source})`);
    throw err;
  }
  const hits = outcome.answer.results.filter((h) => h.type === 'text').slice(0, settings.maxResults);
  return { messages: withSearchContext(messages, searchPrompt(query, hits)), hits, call, outcome, settings };
}

/**
 * The model call's own 402 after a search was paid for: the balance covers the search but not both.
 * (The search is given back: the answer it was for never came.)
 */
export function bothBalanceError(err: unknown): unknown {
  if (!(err instanceof RequestError) || err.status !== 402 || err.code !== 'insufficient_balance') return err;
  return searchBalanceError(err, 'both_balance_required', 'the web search and the model call together');
}
