// biome-ignore-all lint/suspicious/noExplicitAny: wire JSON, read field by field
// Decision rows on an OpenAI-protocol upstream that reports log probabilities (OpenAI, vLLM,
// llama.cpp server, …): each row is one chat completion with `max_tokens: 1`, `temperature: 0`,
// `logprobs: true` and `top_logprobs: 20` (OpenAI's most), and the reply's FIRST token's
// alternatives are read: the option letters' log probabilities. The one token the upstream samples
// is not used (and is counted as output, as the upstream bills it).
//
// How a letter is found among the alternatives: a token that is the letter once surrounding
// whitespace and brackets are taken off ("B", " B", "(B"); several spellings of one letter add up.
// A letter not among the 20 alternatives is given the lowest log probability listed (its own is no
// higher): a bound, never a zero that would make another option certain.
//
// Rows of one request are sent concurrently (at most ROWS_IN_FLIGHT at once): chat completions take
// one prompt each, so that is the batching this protocol allows.
import { upstreamError } from '../../core/errors.js';
import { readJson, send, statusError } from '../http.js';
import type { ProviderTarget, ScoringAdapter, ScoringResult, ScoringRow } from '../types.js';
import { quirksFor } from './quirks.js';
import { endpointUrl, requestHeaders } from './request.js';
import { deadlineOr } from './stream.js';

const TOP_LOGPROBS = 20;
const ROWS_IN_FLIGHT = 8;

/** The letter a token spells, if it spells one ("B", " B", "(B", "B)"). */
const letterOf = (token: unknown) =>
  typeof token === 'string' ? token.trim().replace(/^\(/, '').replace(/\)$/, '') : undefined;

function logSumExp(xs: number[]): number {
  const max = Math.max(...xs);
  return max + Math.log(xs.reduce((s, x) => s + Math.exp(x - max), 0));
}

/** The letters' log probabilities from a reply's first token, or a retryable failure saying what was missing. */
function letterScores(providerId: string, json: any, letters: string[]): number[] {
  const first = json?.choices?.[0]?.logprobs?.content?.[0];
  const alternatives: any[] = Array.isArray(first?.top_logprobs) ? first.top_logprobs : [];
  if (!alternatives.length)
    throw upstreamError(
      'the answer has no top_logprobs for its first token (does this upstream report log probabilities?)',
      502,
      true,
      { code: 'upstream_bad_response', providerId },
    );
  const seen = new Map<string, number[]>();
  let lowest = 0;
  for (const a of alternatives) {
    if (typeof a?.logprob !== 'number' || !Number.isFinite(a.logprob)) continue;
    lowest = Math.min(lowest, a.logprob);
    const letter = letterOf(a.token);
    if (letter && letters.includes(letter)) seen.set(letter, [...(seen.get(letter) ?? []), a.logprob]);
  }
  if (seen.size === 0)
    throw upstreamError(
      `none of the option letters is among the first token's ${alternatives.length} likeliest: the model did not answer with a letter`,
      502,
      true,
      { code: 'upstream_bad_response', providerId },
    );
  return letters.map((l) => {
    const found = seen.get(l);
    return found ? logSumExp(found) : lowest;
  });
}

async function scoreRow(
  model: string,
  row: ScoringRow,
  target: ProviderTarget,
  signal: AbortSignal,
): Promise<{ scores: number[]; input: number; output: number }> {
  const q = quirksFor(target.providerId, target.options);
  const body = {
    model,
    messages: [{ role: 'user', content: row.prompt }],
    max_tokens: 1,
    temperature: 0,
    logprobs: true,
    top_logprobs: TOP_LOGPROBS,
  };
  const res = await send(target.providerId, endpointUrl(target.baseUrl, 'chat/completions'), {
    headers: requestHeaders(target, q, false),
    body: JSON.stringify(body),
    signal,
  }).catch((err) => {
    throw deadlineOr(target.providerId, err, signal);
  });
  if (res.status < 200 || res.status >= 300) throw await statusError(target.providerId, res);
  const json = await readJson(target.providerId, res).catch((err) => {
    throw deadlineOr(target.providerId, err, signal);
  });
  const usage = json?.usage;
  const count = (n: unknown, fallback: number) =>
    Number.isInteger(n) && (n as number) >= 0 ? (n as number) : fallback;
  return {
    scores: letterScores(target.providerId, json, row.letters),
    // an upstream that does not count: a token per 4 bytes of prompt, one token out
    input: count(usage?.prompt_tokens, Math.ceil(Buffer.byteLength(row.prompt) / 4)),
    output: count(usage?.completion_tokens, 1),
  };
}

export const openaiScoring: ScoringAdapter = {
  slot: 'chat',
  async score(req, target, signal): Promise<ScoringResult> {
    const results: Awaited<ReturnType<typeof scoreRow>>[] = new Array(req.rows.length);
    let next = 0;
    // the first failure stops the others: the request answers or fails as a whole
    const stop = new AbortController();
    const both = AbortSignal.any([signal, stop.signal]);
    const worker = async () => {
      while (next < req.rows.length && !stop.signal.aborted) {
        const i = next++;
        results[i] = await scoreRow(req.model, req.rows[i], target, both);
      }
    };
    let failure: { err: unknown } | undefined;
    const workers = Array.from({ length: Math.min(ROWS_IN_FLIGHT, req.rows.length) }, () =>
      worker().catch((err) => {
        failure ??= { err };
        stop.abort();
      }),
    );
    await Promise.all(workers);
    if (failure) throw failure.err;
    return {
      scores: results.map((r) => r.scores),
      inputTokens: results.reduce((n, r) => n + r.input, 0),
      outputTokens: results.reduce((n, r) => n + r.output, 0),
    };
  },
};
