// The legacy completions request (POST /api/v1/completions), as Ajv checks it before anything
// runs: every range the spec gives is a 400 `invalid_parameter_value` naming the parameter.
// The shape of `prompt` (one string, or an array of exactly one string) is checked in
// activities/surfaces/completions.ts, with a message saying what is supported. Unknown fields
// are allowed, as on chat: clients send vendor extensions we do not use.
//
// Several sampling controls here come from self-hosted servers (vLLM, llama.cpp, KoboldAI,
// text-generation-webui) and have no field in the internal request: `top_a`, `tfs`,
// `eta_cutoff`, `epsilon_cutoff`, `typical_p`, `mirostat_*`, `min_tokens`, `stop_token_ids`,
// `include_stop_str_in_output`, `ignore_eos`, `no_repeat_ngram_size`, `custom_token_bans`,
// `prompt_logprobs`. They are validated (a bad value is a 400, as the spec requires), then
// forwarded only to self-hosted upstreams whose quirks accept them (vLLM, llama.cpp server) and
// dropped for every other upstream. See activities/surfaces/completions.ts.
import { providerPreferencesSchema, samplingSchema } from './chat.js';

const nonNegative = { type: 'number', minimum: 0 } as const;
const unit = { type: 'number', minimum: 0, maximum: 1 } as const;
const tokenIds = { type: 'array', items: { type: 'integer', minimum: 0 } } as const;

/** The spec's accepted spellings of "pay as you go" (anything else is a 400). */
export const PAYGO_BILLING_MODES = ['paygo', 'pay-as-you-go', 'pay_as_you_go', 'paid', 'payg'] as const;

export const completionsRequestSchema = {
  type: 'object',
  required: ['model', 'prompt'],
  properties: {
    model: { type: 'string', minLength: 1, maxLength: 256 },
    prompt: { type: ['string', 'array'] },
    max_tokens: { type: 'integer', minimum: 1 },
    stream: { type: 'boolean' },
    stream_options: {
      anyOf: [{ type: 'null' }, { type: 'object', properties: { include_usage: { type: 'boolean' } } }],
    },
    n: { type: 'integer', minimum: 1, maximum: 1 },
    best_of: { type: 'integer', minimum: 1, maximum: 1 },
    echo: { type: 'boolean' },
    // legacy API: how many alternatives per token (0-5); `true` is read as 0 (only the chosen token's)
    logprobs: { anyOf: [{ type: 'null' }, { type: 'integer', minimum: 0, maximum: 5 }, { type: 'boolean' }] },
    ...samplingSchema,
    // validated; forwarded only where the upstream's quirks accept them (see the top of this file)
    top_a: nonNegative,
    tfs: unit,
    eta_cutoff: nonNegative,
    epsilon_cutoff: nonNegative,
    typical_p: unit,
    mirostat_mode: { type: 'integer', enum: [0, 1, 2] },
    mirostat_tau: nonNegative,
    mirostat_eta: nonNegative,
    min_tokens: { type: 'integer', minimum: 0 },
    stop_token_ids: tokenIds,
    include_stop_str_in_output: { type: 'boolean' },
    ignore_eos: { type: 'boolean' },
    no_repeat_ngram_size: { type: 'integer', minimum: 0 },
    custom_token_bans: tokenIds,
    prompt_logprobs: { anyOf: [{ type: 'null' }, { type: 'integer', minimum: 0 }] },
    billing_mode: { type: 'string', enum: PAYGO_BILLING_MODES },
    billingMode: { type: 'string', enum: PAYGO_BILLING_MODES },
    provider: providerPreferencesSchema,
  },
} as const;
