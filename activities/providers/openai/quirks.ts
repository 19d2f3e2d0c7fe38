import { upstreamError } from '../../core/errors.js';
// How the vendors that speak the OpenAI wire protocol differ, as data. Each vendor starts from
// the generic defaults, then its row below, then whatever the catalog says: the provider's
// `options` merged with the route's (they arrive as `target.options`, snake_case keys as in the
// YAML). An operator fixes a vendor change or a self-hosted server's limits in the catalog, not
// in code: e.g. `drop_params: [temperature, top_p]` on a route to an o-series model, which rejects
// sampling parameters, or `stream_usage: false` for an old server that rejects `stream_options`.

export interface OpenAIQuirks {
  /** the body field carrying the output cap (`max_tokens_field`) */
  maxTokensField: 'max_tokens' | 'max_completion_tokens';
  /** accepts top_k, min_p and repetition_penalty (`extended_sampling`); strict APIs reject unknown fields */
  extendedSampling: boolean;
  /** how reasoning is requested (`reasoning_style`): `reasoning_effort`, OpenRouter's `reasoning` object, or not at all */
  reasoningStyle: 'reasoning_effort' | 'openrouter' | 'none';
  /** send `stream_options: {include_usage: true}` on streams (`stream_usage`) */
  streamUsage: boolean;
  /** pass the caller's end-user id as `user` (`send_user`) */
  sendUser: boolean;
  /** pass `messages[].name` (`message_names`) */
  messageNames: boolean;
  /** a raw prompt goes to POST /completions, or as a user turn to /chat/completions (`prompt_endpoint`) */
  promptEndpoint: 'completions' | 'chat';
  /** top-level body fields removed before sending (`drop_params`): what the vendor answers 400 to */
  dropParams: string[];
  /**
   * Self-hosted servers' own sampling controls it accepts (`vendor_sampling`): the name the
   * legacy completions surface takes -> the name this server reads. Controls not listed are
   * dropped for this vendor.
   */
  vendorSampling: Record<string, string>;
  /** OpenRouter's app attribution headers (`http_referer`, `x_title`) */
  httpReferer?: string;
  appTitle?: string;
}

/** What an unknown OpenAI-compatible server gets: only what every implementation accepts. */
const genericQuirks: OpenAIQuirks = {
  maxTokensField: 'max_tokens',
  extendedSampling: false,
  reasoningStyle: 'reasoning_effort',
  streamUsage: true,
  sendUser: true,
  messageNames: true,
  promptEndpoint: 'completions',
  dropParams: [],
  vendorSampling: {},
};

/** vLLM's extra SamplingParams (docs.vllm.ai, "Extra Parameters"), same names on chat and completions. */
const VLLM_SAMPLING = {
  min_tokens: 'min_tokens',
  stop_token_ids: 'stop_token_ids',
  include_stop_str_in_output: 'include_stop_str_in_output',
  ignore_eos: 'ignore_eos',
};
/** llama.cpp server's native sampling options, which its OpenAI endpoints read too; its mirostat switch is `mirostat`, tail-free `tfs_z`. */
const LLAMACPP_SAMPLING = {
  mirostat_mode: 'mirostat',
  mirostat_tau: 'mirostat_tau',
  mirostat_eta: 'mirostat_eta',
  typical_p: 'typical_p',
  tfs: 'tfs_z',
  ignore_eos: 'ignore_eos',
};

/** Per catalog provider id: only the differences from `genericQuirks`. */
const vendorQuirks: Record<string, Partial<OpenAIQuirks>> = {
  // Reasoning models reject `max_tokens` ("use max_completion_tokens"); unknown fields are a 400.
  // Its /completions serves only the old instruct models, so chat models get prompts as a user turn
  // (a route to gpt-3.5-turbo-instruct sets `prompt_endpoint: completions`).
  openai: { maxTokensField: 'max_completion_tokens', promptEndpoint: 'chat' },
  // Normalizes reasoning across its upstreams with its own `reasoning` object; forwards top_k & co.
  openrouter: { extendedSampling: true, reasoningStyle: 'openrouter' },
  together: { extendedSampling: true },
  // Documented as a 400: logprobs, logit_bias, top_logprobs, messages[].name. No /completions.
  groq: { promptEndpoint: 'chat', messageNames: false, dropParams: ['logprobs', 'top_logprobs', 'logit_bias'] },
  deepinfra: { extendedSampling: true },
  fireworks: { extendedSampling: true },
  vllm: { extendedSampling: true, vendorSampling: VLLM_SAMPLING },
  llamacpp: { extendedSampling: true, vendorSampling: LLAMACPP_SAMPLING },
  // Its OpenAI layer ignores top_k & co. (they belong to its native API): not worth sending.
  ollama: {},
};

function pick<T>(
  options: Record<string, unknown>,
  key: string,
  providerId: string,
  ok: (v: unknown) => boolean,
  what: string,
): T | undefined {
  const v = options[key];
  if (v === undefined || v === null) return undefined;
  // A wrong catalog value is the operator's mistake: say so. Retryable, so another provider may still serve.
  if (!ok(v))
    throw upstreamError(`catalog option "${key}" of provider ${providerId} must be ${what}`, 500, true, {
      code: 'provider_misconfigured',
      providerId,
    });
  return v as T;
}

const isBool = (v: unknown) => typeof v === 'boolean';
const isString = (v: unknown) => typeof v === 'string';
const oneOf =
  (...xs: string[]) =>
  (v: unknown) =>
    xs.includes(v as string);

/** The quirks for one call: generic, then the vendor's row, then the catalog's options. */
export function quirksFor(providerId: string, options: Record<string, unknown>): OpenAIQuirks {
  // A route's options object lives as long as the route (providers/registry.ts targetFor): work them out once.
  if (!options) return quirksOf(providerId, {});
  let known = memo.get(options);
  if (!known) {
    known = new Map();
    memo.set(options, known);
  }
  let q = known.get(providerId);
  if (!q) {
    q = quirksOf(providerId, options);
    known.set(providerId, q);
  }
  return q;
}

const memo = new WeakMap<object, Map<string, OpenAIQuirks>>();

function quirksOf(providerId: string, o: Record<string, unknown>): OpenAIQuirks {
  const fromCatalog: Partial<OpenAIQuirks> = {
    maxTokensField: pick(
      o,
      'max_tokens_field',
      providerId,
      oneOf('max_tokens', 'max_completion_tokens'),
      '"max_tokens" or "max_completion_tokens"',
    ),
    extendedSampling: pick(o, 'extended_sampling', providerId, isBool, 'true or false'),
    reasoningStyle: pick(
      o,
      'reasoning_style',
      providerId,
      oneOf('reasoning_effort', 'openrouter', 'none'),
      '"reasoning_effort", "openrouter" or "none"',
    ),
    streamUsage: pick(o, 'stream_usage', providerId, isBool, 'true or false'),
    sendUser: pick(o, 'send_user', providerId, isBool, 'true or false'),
    messageNames: pick(o, 'message_names', providerId, isBool, 'true or false'),
    promptEndpoint: pick(o, 'prompt_endpoint', providerId, oneOf('completions', 'chat'), '"completions" or "chat"'),
    dropParams: pick(
      o,
      'drop_params',
      providerId,
      (v) => Array.isArray(v) && v.every(isString),
      'a list of parameter names',
    ),
    vendorSampling: pick(
      o,
      'vendor_sampling',
      providerId,
      (v) => !!v && typeof v === 'object' && !Array.isArray(v) && Object.values(v).every(isString),
      'a map of parameter name to the name the server reads',
    ),
    httpReferer: pick(o, 'http_referer', providerId, isString, 'a URL'),
    appTitle: pick(o, 'x_title', providerId, isString, 'text'),
  };
  const merged: OpenAIQuirks = { ...genericQuirks, ...vendorQuirks[providerId] };
  for (const [k, v] of Object.entries(fromCatalog)) {
    if (v !== undefined) (merged as unknown as Record<string, unknown>)[k] = v;
  }
  return merged;
}
