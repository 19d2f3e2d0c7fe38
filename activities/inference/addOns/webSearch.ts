// Web search (`:online`, `web_search`, `web_search_options`; offered on chat, responses and
// talk-to-gpt). Native: the model's provider searches (routes with `native_web_search`), billed
// with the call (activities/search/native.ts). External: the gateway searches for the latest user
// message and puts the results before it (activities/search/online.ts): its fee is reserved
// before anything else, so a balance that cannot pay it spends nothing; the search runs once the
// answer is reserved and the preflight passed (TextRun.prepare), is charged with the answer, and
// is given back with it, or released when no call was made.
import { RequestError } from '../../core/errors.js';
import { nativeSearch } from '../../search/native.js';
import { bothBalanceError, OnlineSearch } from '../../search/online.js';
import { webSearchSettings } from '../../search/settings.js';
import type { AddOn } from './addOn.js';

/** The parameter a web search's refusal names: the model name for a suffix, else the body field. */
export const webParam = (source: string) => (source.startsWith('the') ? 'model' : source.replace(/'/g, ''));

export const webSearch: AddOn<'external' | 'native'> = {
  name: 'web search',
  at: 'translated',
  check(run) {
    const { body, model, input } = run;
    const web = webSearchSettings(run.name, body);
    if (!web) return undefined;
    if (!run.codec.webSearch)
      throw new RequestError(
        400,
        'invalid_parameter_value',
        `Web search (asked for by ${web.source}) is offered on chat completions, responses and talk-to-gpt, not on this endpoint. Remove it, or use one of those.`,
        { param: webParam(web.source) },
      );
    run.web = web;
    const native = nativeSearch(web, model, body.max_tool_calls);
    if (native) {
      input.request.webSearch = native.request;
      input.needs.nativeWebSearch = true;
      run.nativeSearchFee = native.fee;
      run.rewritten = true;
      return 'native';
    }
    return 'external';
  },
  async reserve(run, kind) {
    if (kind === 'native') return;
    // made after `:memory` compressed the conversation: it searches for what is sent
    const { ex, input } = run;
    run.search = new OnlineSearch(ex.caller, ex.requestId, input.request.messages, run.web!);
    run.rewritten = true;
    await run.search.reserve();
  },
  async abandon(run, _kind, code) {
    await run.search?.call.metered.abandon(code);
  },
  explain: (run, err) => (run.search ? bothBalanceError(err) : err),
  async deliver(run) {
    const search = run.search;
    if (!search) return;
    // a search reserved for an answer that never called the model is released
    if (!search.outcome) await search.call.metered.abandon('unused');
    else run.deliverWithAnswer(search.call.metered);
  },
};
