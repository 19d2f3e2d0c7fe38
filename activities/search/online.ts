// Web search before a model call (`:online`, `web_search`, `web_search_options` on chat, responses
// and talk-to-gpt), in the order that spends nothing the caller cannot pay for:
//   1. reserve the search fee (a balance that cannot pay it: 402 `webSearch_balance_required`);
//   2. reserve the model call's worst case, with room for the results in its prompt estimate (a
//      balance that pays the search but not both: 402 `both_balance_required`, the search released);
//   3. search for the latest user message (a metered call of its own, charged once under
//      `<requestId>:search` on the provider that answered), and put the results before that
//      message as a system message (context.ts);
//   4. call the model; the answer's [n] markers become citations.
// Like `:memory`, the search's charge is given back if the answer it was for never reaches the
// caller (the web search add-on, activities/inference/addOns/webSearch.ts), and a failed search
// is not charged (nor is the model called).
import type { Caller } from '../core/caller.js';
import { RequestError } from '../core/errors.js';
import type { Message } from '../core/types.js';
import type { SearchHit } from '../providers/types.js';
import { billOf } from '../metering/meteredCall.js';
import { RESULT_MAX_CHARS, searchPrompt, searchQuery, withSearchContext } from './context.js';
import { SearchCall, type SearchOutcome, searchBalanceError } from './search.js';
import type { WebSearchSettings } from './settings.js';

/** longest query sent to a search provider (the latest user message, cut) */
const QUERY_MAX_CHARS = 1_000;
/** a result's title, URL and date in the prompt, at most (the text is cut at RESULT_MAX_CHARS) */
const RESULT_HEAD_CHARS = 1_200;

export class OnlineSearch {
  readonly call: SearchCall;
  private readonly query: string;
  /** after run(): the results put before the model, and what the search cost */
  hits?: SearchHit[];
  outcome?: SearchOutcome;

  constructor(
    caller: Caller,
    requestId: string,
    messages: Message[],
    readonly settings: WebSearchSettings,
  ) {
    this.query = searchQuery(messages).slice(0, QUERY_MAX_CHARS);
    if (!this.query)
      throw new RequestError(
        400,
        'invalid_parameter_value',
        `Web search (asked for by ${settings.source}) searches for the latest user message, and there is no user message with text.`,
        { param: 'messages' },
      );
    this.call = new SearchCall(
      caller,
      `${requestId}:search`,
      {
        query: this.query,
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
  }

  /** Step 1: the fee, or 402 `webSearch_balance_required`. */
  async reserve(): Promise<void> {
    try {
      await this.call.reserve();
    } catch (err) {
      if (err instanceof RequestError && err.status === 402 && err.code === 'insufficient_balance')
        throw searchBalanceError(err, 'webSearch_balance_required', `the web search (${this.settings.source})`);
      throw err;
    }
  }

  /** Step 2's messages: the largest results this search can put there, for the model call's reservation. */
  withRoom(messages: Message[]): Message[] {
    const room = 'x'.repeat(this.settings.maxResults * (RESULT_MAX_CHARS + RESULT_HEAD_CHARS));
    return withSearchContext(messages, `${searchPrompt(this.query, [])}\n${room}`);
  }

  /** Step 3: search, settle the fee, and the messages with the results in them. */
  async run(messages: Message[], signal: AbortSignal): Promise<Message[]> {
    this.outcome = await this.call.search(signal);
    this.hits = this.outcome.answer.results.filter((h) => h.type === 'text').slice(0, this.settings.maxResults);
    return withSearchContext(messages, searchPrompt(this.query, this.hits));
  }

  /** What the search cost, shown beside the answer's own bill. */
  get fee(): { provider: string; depth: string; cost: number } | undefined {
    if (!this.outcome) return undefined;
    return {
      provider: this.outcome.route.provider.id,
      depth: this.settings.depth,
      cost: billOf(this.outcome.charge).cost,
    };
  }
}

/** The model call's own 402 after the search's fee was reserved: the balance pays the search but not both. */
export function bothBalanceError(err: unknown): unknown {
  if (!(err instanceof RequestError) || err.status !== 402 || err.code !== 'insufficient_balance') return err;
  return searchBalanceError(err, 'both_balance_required', 'the web search and the model call together');
}
