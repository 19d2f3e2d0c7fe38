// biome-ignore-all lint/suspicious/noExplicitAny: wire JSON, read field by field
// OpenAI's moderations API: POST {base}/moderations with `model` and `input` (a list of texts),
// answered by `results`, one `{flagged, categories, category_scores}` per input in input order.
// A wrong number of results, or one without a boolean `flagged`, is the route's failure: a
// preflight that cannot tell must never read as "not flagged" (fail closed).
import { upstreamError } from '../../core/errors.js';
import { readJson, send, statusError } from '../http.js';
import type { ModerationAdapter, ModerationVerdict, ProviderTarget } from '../types.js';
import { quirksFor } from './quirks.js';
import { requestHeaders } from './request.js';
import { deadlineOr } from './stream.js';

const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

function verdictsOf(providerId: string, json: any, expected: number): ModerationVerdict[] {
  const bad = (why: string) =>
    upstreamError(`the moderations answer ${why}`, 502, true, { code: 'upstream_bad_response', providerId });
  if (!Array.isArray(json?.results)) throw bad('has no results array');
  if (json.results.length !== expected) throw bad(`has ${json.results.length} results for ${expected} inputs`);
  return json.results.map((r: any, i: number) => {
    if (typeof r?.flagged !== 'boolean' || !isObject(r.categories) || !isObject(r.category_scores))
      throw bad(`has a result without flagged, categories and category_scores at index ${i}`);
    const v: ModerationVerdict = { flagged: r.flagged, categories: r.categories, category_scores: r.category_scores };
    if (isObject(r.category_applied_input_types))
      v.category_applied_input_types = r.category_applied_input_types as never;
    return v;
  });
}

export const openaiModeration: ModerationAdapter = {
  async classify(req, target: ProviderTarget, signal): Promise<ModerationVerdict[]> {
    const q = quirksFor(target.providerId, target.options);
    const res = await send(target.providerId, `${target.baseUrl.replace(/\/+$/, '')}/moderations`, {
      headers: requestHeaders(target, q, false),
      body: JSON.stringify({ model: req.model, input: req.input }),
      signal,
    }).catch((err) => {
      throw deadlineOr(target.providerId, err, signal);
    });
    if (res.status < 200 || res.status >= 300) throw await statusError(target.providerId, res);
    const json = await readJson(target.providerId, res).catch((err) => {
      throw deadlineOr(target.providerId, err, signal);
    });
    return verdictsOf(target.providerId, json, req.input.length);
  },
};
