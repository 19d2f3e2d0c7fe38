// The chat completions request, as Ajv checks it before anything runs. Types and ranges here;
// rules that need more than a schema (tool specs, JSON-schema strictness, tool_choice against the
// tools) are checked in activities/surfaces/chat.ts with the spec's specific codes. Unknown fields
// are allowed: clients send vendor extensions we do not use.
const stringOrStrings = { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' }, maxItems: 16 }] };
const stringList = { type: 'array', items: { type: 'string' } };

export const providerPreferencesSchema = {
  anyOf: [
    { type: 'string', minLength: 1 },
    {
      type: 'object',
      additionalProperties: false,
      properties: {
        order: stringList,
        only: stringList,
        ignore: stringList,
        sort: { type: 'string', enum: ['price', 'throughput', 'latency'] },
        quantizations: { type: 'array', items: { type: 'string' }, minItems: 1 },
        min_quantization: { type: 'string', enum: ['fp32', 'bf16', 'fp16', 'fp8', 'int8', 'fp6', 'fp4', 'int4'] },
        max_price: {
          type: 'object',
          additionalProperties: false,
          properties: { prompt: { type: 'number', minimum: 0 }, completion: { type: 'number', minimum: 0 } },
        },
        allow_fallbacks: { type: 'boolean' },
        require_parameters: { type: 'boolean' },
        data_collection: { type: 'string', enum: ['allow', 'deny'] },
      },
    },
  ],
} as const;

/** `prompt_caching` (README, Prompt caching); the checks across fields are in activities/surfaces/promptCaching.ts */
export const promptCachingSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    enabled: { type: 'boolean' },
    ttl: { type: 'string', enum: ['5m', '1h'] },
    cut_after_message_index: { type: 'integer', minimum: 0 },
    stickyProvider: { type: 'boolean' },
  },
} as const;

/** `caching` and `stickyprovider` (README, Prompt caching): chat completions, responses and messages take them */
export const cachingFields = {
  caching: { type: 'boolean' },
  stickyprovider: { type: 'boolean' },
  stickyProvider: { type: 'boolean' },
} as const;

export const samplingSchema = {
  temperature: { type: 'number', minimum: 0, maximum: 2 },
  top_p: { type: 'number', minimum: 0, maximum: 1 },
  top_k: { type: 'integer', minimum: 0 },
  min_p: { type: 'number', minimum: 0, maximum: 1 },
  frequency_penalty: { type: 'number', minimum: -2, maximum: 2 },
  presence_penalty: { type: 'number', minimum: -2, maximum: 2 },
  repetition_penalty: { type: 'number', minimum: -2, maximum: 2 },
  seed: { type: 'integer' },
  stop: { anyOf: [{ type: 'null' }, ...stringOrStrings.anyOf] },
  logit_bias: { type: 'object', additionalProperties: { type: 'number', minimum: -100, maximum: 100 } },
  user: { type: 'string', maxLength: 256 },
} as const;

export const chatRequestSchema = {
  type: 'object',
  required: ['model', 'messages'],
  properties: {
    model: { type: 'string', minLength: 1, maxLength: 256 },
    messages: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        required: ['role'],
        properties: {
          role: { type: 'string', enum: ['system', 'developer', 'user', 'assistant', 'tool', 'function'] },
          content: {
            anyOf: [
              { type: 'string' },
              { type: 'null' },
              {
                type: 'array',
                items: { type: 'object', required: ['type'], properties: { type: { type: 'string' } } },
              },
            ],
          },
          name: { type: 'string' },
          tool_call_id: { type: 'string' },
          tool_calls: {
            type: 'array',
            items: {
              type: 'object',
              required: ['id', 'function'],
              properties: {
                id: { type: 'string' },
                type: { type: 'string', enum: ['function'] },
                function: {
                  type: 'object',
                  required: ['name'],
                  properties: { name: { type: 'string' }, arguments: { type: 'string' } },
                },
              },
            },
          },
        },
      },
    },
    stream: { type: 'boolean' },
    stream_options: {
      anyOf: [{ type: 'null' }, { type: 'object', properties: { include_usage: { type: 'boolean' } } }],
    },
    max_tokens: { type: 'integer', minimum: 1 },
    max_completion_tokens: { type: 'integer', minimum: 1 },
    // n > 1: one metered call per choice (api/routes/chat.ts); the cap keeps one request's fan-out small
    n: { type: 'integer', minimum: 1, maximum: 8 },
    tool_choice: {
      anyOf: [
        { type: 'string', enum: ['auto', 'none', 'required'] },
        {
          type: 'object',
          required: ['type', 'function'],
          properties: {
            type: { const: 'function' },
            function: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } },
          },
        },
      ],
    },
    parallel_tool_calls: { type: 'boolean' },
    max_tool_calls: { type: 'integer', minimum: 1 },
    response_format: {
      type: 'object',
      required: ['type'],
      properties: {
        // 'questions': a decision model answers (activities/inference/addOns/questions.ts)
        type: { type: 'string', enum: ['text', 'json_object', 'json_schema', 'questions'] },
        json_schema: { type: 'object' },
        questions: { type: 'object' },
      },
    },
    logprobs: { type: 'boolean' },
    top_logprobs: { type: 'integer', minimum: 0, maximum: 20 },
    reasoning_effort: { type: 'string', enum: ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'] },
    reasoning: {
      type: 'object',
      properties: {
        effort: { type: 'string', enum: ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'] },
        max_tokens: { type: 'integer', minimum: 0 },
        exclude: { type: 'boolean' },
        enabled: { type: 'boolean' },
      },
    },
    provider: providerPreferencesSchema,
    ...cachingFields,
    prompt_caching: promptCachingSchema,
    promptCaching: promptCachingSchema,
    // the advisor (activities/inference/addOns/advisor.ts): a second model the request's model may
    // consult; unknown fields refused
    advisor: {
      type: ['object', 'null'],
      required: ['model', 'mode'],
      additionalProperties: false,
      properties: {
        model: { type: 'string', minLength: 1, maxLength: 256 },
        mode: { type: 'string', enum: ['auto', 'required'] },
      },
    },
    ...samplingSchema,
  },
} as const;
