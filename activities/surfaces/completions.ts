// biome-ignore-all lint/suspicious/noExplicitAny: wire JSON, read field by field
// The legacy completions surface (POST /api/v1/completions): the body translated to the one
// internal request (with `prompt` set, no messages), and the internal result / stream events
// translated back to `text_completion` objects and frames. The body reaching here has passed
// activities/surfaces/schemas/completions.ts.
//
// What is shared with chat is taken FROM chat (chatToInternal): provider preferences, model-name
// suffixes, the sampling controls the internal request knows, reasoning options. Only the
// prompt and the legacy `logprobs` count are this surface's own.
//
// Self-hosted servers' own controls (`top_a`, `tfs`, `eta_cutoff`, `epsilon_cutoff`, `typical_p`,
// `mirostat_*`, `min_tokens`, `stop_token_ids`, `include_stop_str_in_output`, `ignore_eos`,
// `no_repeat_ngram_size`, `custom_token_bans`) ride in `sampling.vendor` under these names. An
// OpenAI-compatible upstream gets those its quirks list (vllm: min_tokens, stop_token_ids,
// include_stop_str_in_output, ignore_eos; llamacpp: mirostat_* as `mirostat`, `mirostat_tau`,
// `mirostat_eta`, typical_p, tfs as `tfs_z`, ignore_eos; an operator adds more with the catalog
// option `vendor_sampling`); every other upstream, hosted APIs included, never sees them: they
// are validated and then dropped there. `prompt_logprobs` is validated and never forwarded (the
// answer has no place for prompt log probabilities).
// `billing_mode` (or the `X-Billing-Mode` header, read by the route) forces pay-as-you-go; see
// api/billingMode.ts.
import type { ModelInfo } from '../catalog/catalog.js';
import type { Bill } from '../inference/execute.js';
import type { FinishReason, InferenceRequest, InferenceResult, TokenLogprob, Usage } from '../core/types.js';
import type { ModelName } from '../routing/suffixes.js';
import type { ProviderPreferences, RequestNeeds } from '../routing/planRoute.js';
import { chatToInternal } from './chat.js';
import { usageJson, withBill } from './chatResponse.js';
import { RequestError } from '../core/errors.js';

const bad = (message: string, param: string) =>
  new RequestError(400, 'invalid_parameter_value', message, { param: param });

/** Fields of a completions body that mean the same as on chat, handed to chatToInternal as they are. */
const CHAT_FIELDS = [
  'provider',
  'max_tokens',
  'temperature',
  'top_p',
  'top_k',
  'min_p',
  'frequency_penalty',
  'presence_penalty',
  'repetition_penalty',
  'seed',
  'stop',
  'logit_bias',
  'user',
] as const;

/** Self-hosted servers' sampling controls, forwarded where the upstream's quirks accept them. */
const VENDOR_SAMPLING_FIELDS = [
  'top_a',
  'tfs',
  'eta_cutoff',
  'epsilon_cutoff',
  'typical_p',
  'mirostat_mode',
  'mirostat_tau',
  'mirostat_eta',
  'min_tokens',
  'stop_token_ids',
  'include_stop_str_in_output',
  'ignore_eos',
  'no_repeat_ngram_size',
  'custom_token_bans',
] as const;

export interface CompletionsPlanInput {
  request: Omit<InferenceRequest, 'maxTokens' | 'model'> & { maxTokens?: number };
  needs: RequestNeeds;
  prefs: ProviderPreferences;
  includeUsage: boolean;
  prompt: string;
}

/** `prompt`: a string, or an array holding exactly one string (what the SDKs send for one prompt). */
function promptOf(raw: unknown): string {
  if (typeof raw === 'string') return raw;
  if (Array.isArray(raw) && raw.length === 1 && typeof raw[0] === 'string') return raw[0];
  if (Array.isArray(raw) && raw.length > 0 && raw.every((x) => typeof x === 'number')) {
    throw bad("'prompt' is an array of token ids; send the prompt as text.", 'prompt');
  }
  throw bad(
    `'prompt' must be a string or an array of exactly one string; this one is an array of ${(raw as unknown[]).length} items. Send one request per prompt.`,
    'prompt',
  );
}

/** The legacy `logprobs`: a count of alternatives 0-5, `true` read as 0, false/null = none. */
function logprobsOf(raw: unknown): { logprobs?: boolean; topLogprobs?: number } {
  if (raw === true) return { logprobs: true, topLogprobs: 0 };
  if (typeof raw === 'number') return { logprobs: true, topLogprobs: raw };
  return {};
}

export function completionsToInternal(body: any, model: ModelInfo, name: ModelName): CompletionsPlanInput {
  if (body.advisor !== undefined && body.advisor !== null)
    throw bad(
      "'advisor' is offered on chat completions only (POST /api/v1/chat/completions, not streamed). Remove the field here.",
      'advisor',
    );
  const prompt = promptOf(body.prompt);
  if (body.echo === true)
    throw bad(
      "'echo' is not supported here: the answer holds only the completion. Leave it out or set it to false.",
      'echo',
    );
  if (body.min_tokens !== undefined && body.max_tokens !== undefined && body.min_tokens > body.max_tokens) {
    throw bad(`min_tokens (${body.min_tokens}) is above max_tokens (${body.max_tokens}).`, 'min_tokens');
  }
  const chatBody: Record<string, unknown> = { messages: [{ role: 'user', content: prompt }] };
  for (const f of CHAT_FIELDS) if (body[f] !== undefined) chatBody[f] = body[f];
  const chat = chatToInternal(chatBody, model, name);
  // the placeholder user turn above only let chat's translation run; the prompt goes as a prompt
  const { messages: _placeholder, ...rest } = chat.request;
  const vendor: Record<string, unknown> = {};
  for (const f of VENDOR_SAMPLING_FIELDS) if (body[f] !== undefined && body[f] !== null) vendor[f] = body[f];
  return {
    request: {
      ...rest,
      messages: [],
      prompt,
      sampling: { ...rest.sampling, ...logprobsOf(body.logprobs), ...(Object.keys(vendor).length ? { vendor } : {}) },
    },
    needs: chat.needs,
    prefs: chat.prefs,
    includeUsage: body.stream_options?.include_usage === true,
    prompt,
  };
}

export interface LegacyLogprobs {
  tokens: string[];
  token_logprobs: number[];
  top_logprobs: Array<Record<string, number>>;
  text_offset: number[];
}

/**
 * Internal token logprobs in the legacy shape: parallel arrays, each `top_logprobs` entry a
 * token → logprob map holding the chosen token and up to `top` alternatives (OpenAI's "up to
 * logprobs+1 elements"). `offset` is the character offset of the first token, counted from the
 * start of the prompt, as OpenAI's `text_offset` is.
 */
function legacyLogprobs(lp: TokenLogprob[], top: number, offset: number): LegacyLogprobs {
  const out: LegacyLogprobs = { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] };
  let at = offset;
  for (const t of lp) {
    out.tokens.push(t.token);
    out.token_logprobs.push(t.logprob);
    const map: Record<string, number> = {};
    for (const a of (t.topLogprobs ?? []).slice(0, top)) if (!(a.token in map)) map[a.token] = a.logprob;
    if (!(t.token in map)) map[t.token] = t.logprob;
    out.top_logprobs.push(map);
    out.text_offset.push(at);
    at += t.token.length;
  }
  return out;
}

export interface CompletionMeta {
  id: string;
  created: number;
  model: string;
  provider: string;
  /** the legacy `logprobs` count asked for; undefined = none */
  topLogprobs?: number;
  /** the prompt's length in characters: where text_offset starts */
  promptLength: number;
}

export function toTextCompletion(r: InferenceResult, usage: Usage, bill: Bill, meta: CompletionMeta) {
  const logprobs =
    meta.topLogprobs !== undefined && r.logprobs
      ? legacyLogprobs(r.logprobs, meta.topLogprobs, meta.promptLength)
      : null;
  return withBill(
    {
      id: meta.id,
      object: 'text_completion',
      created: meta.created,
      model: meta.model,
      provider: meta.provider,
      system_fingerprint: null,
      choices: [{ text: r.content, index: 0, logprobs, finish_reason: r.finishReason }],
      usage: usageJson(usage),
    },
    bill,
  );
}

/** The frames of one streamed completion: text frames as they come, then the final frames. */
export class CompletionChunker {
  private offset: number;

  constructor(private readonly meta: CompletionMeta) {
    this.offset = meta.promptLength;
  }

  private frame(
    text: string,
    logprobs: LegacyLogprobs | null,
    finish: FinishReason | null,
    extra: Record<string, unknown> = {},
  ) {
    return {
      id: this.meta.id,
      object: 'text_completion',
      created: this.meta.created,
      model: this.meta.model,
      provider: this.meta.provider,
      system_fingerprint: null,
      choices: [{ text, index: 0, logprobs, finish_reason: finish }],
      ...extra,
    };
  }

  /** A text event's frame; the offsets continue across frames. */
  text(text: string, lp: TokenLogprob[] | undefined) {
    const logprobs =
      this.meta.topLogprobs !== undefined && lp ? legacyLogprobs(lp, this.meta.topLogprobs, this.offset) : null;
    this.offset += text.length;
    return this.frame(text, logprobs, null);
  }

  /**
   * The last frames, as OpenAI sends them: the finish_reason; then, with `include_usage`, a frame with
   * empty `choices` carrying `usage`. The pricing extension rides on the last of them.
   */
  final(finish: FinishReason, usage: Usage, bill: Bill, includeUsage: boolean) {
    if (!includeUsage) return [this.frame('', null, finish, withBill({}, bill))];
    const usageFrame = { ...this.frame('', null, null), choices: [], usage: usageJson(usage) };
    return [this.frame('', null, finish), withBill(usageFrame, bill)];
  }
}
