// The shape of the operator's catalog file (prisma/catalog.yaml by default), as JSON Schema: what
// file.ts checks before it reads the file's entries.
import { Ajv } from 'ajv';

const price = { type: 'string', pattern: '^\\d+(\\.\\d+)?$' };
const strings = { type: 'array', items: { type: 'string' } };

const schema = {
  type: 'object',
  required: ['providers', 'models'],
  additionalProperties: false,
  properties: {
    defaults: {
      type: 'object',
      additionalProperties: false,
      properties: { markup_bps: { type: 'integer', minimum: 0 } },
    },
    providers: {
      type: 'object',
      additionalProperties: {
        type: 'object',
        required: ['name', 'protocol'],
        additionalProperties: false,
        properties: {
          name: { type: 'string' },
          protocol: {
            type: 'string',
            enum: [
              'openai',
              'anthropic',
              'gemini',
              'local',
              'elevenlabs',
              'fal',
              'linkup',
              'tavily',
              'searxng',
              'openai-tee',
            ],
          },
          base_url: { type: 'string' },
          keyless: { type: 'boolean' },
          zero_data_retention: { type: 'boolean' },
          options: { type: 'object' },
        },
      },
    },
    // subscription plans: a price per period buys daily and per-period allowances of operations on
    // the covered models (activities/subscriptions/)
    plans: {
      type: 'array',
      items: {
        type: 'object',
        required: ['id', 'name', 'price', 'period', 'daily_limit', 'monthly_limit', 'models'],
        additionalProperties: false,
        properties: {
          id: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9._-]*$' },
          name: { type: 'string', minLength: 1 },
          description: { type: 'string' },
          // USD per period, quoted decimal text
          price,
          // "30d", "12h", "90m", "45s"
          period: { type: 'string', pattern: '^[1-9][0-9]*[dhms]$' },
          daily_limit: { type: 'integer', minimum: 1 },
          monthly_limit: { type: 'integer', minimum: 1 },
          models: { ...strings, minItems: 1 },
        },
      },
    },
    models: {
      type: 'array',
      items: {
        type: 'object',
        required: ['id', 'name', 'owned_by', 'category', 'providers'],
        additionalProperties: false,
        properties: {
          id: { type: 'string', minLength: 1 },
          name: { type: 'string' },
          aliases: strings,
          owned_by: { type: 'string' },
          category: {
            type: 'string',
            enum: [
              'chat',
              'embedding',
              'image',
              'video',
              'speech',
              'music',
              'decision',
              'memory',
              'search',
              'transcription',
              'moderation',
            ],
          },
          description: { type: 'string' },
          context_length: { type: 'integer', minimum: 1 },
          max_output_tokens: { type: 'integer', minimum: 1 },
          capabilities: { type: 'object', additionalProperties: { type: 'boolean' } },
          input_modalities: strings,
          output_modalities: strings,
          supported_endpoints: strings,
          supported_batch_endpoints: strings,
          supported_service_tiers: strings,
          // what a batch row pays, as a fraction of the synchronous price ("0.5" = half; 4 decimals at most)
          batch_price_factor: { type: 'string', pattern: '^\\d+(\\.\\d{1,4})?$' },
          options: { type: 'object' },
          providers: {
            type: 'array',
            minItems: 1,
            items: {
              type: 'object',
              required: ['provider', 'upstream_model', 'price'],
              additionalProperties: false,
              properties: {
                provider: { type: 'string' },
                upstream_model: { type: 'string' },
                // token-priced routes state input/output (per 1M); video routes state per_second;
                // image routes per_image (and route option `image_prices` by size and quality);
                // web search routes per_request
                price: {
                  type: 'object',
                  additionalProperties: false,
                  properties: {
                    input: price,
                    output: price,
                    cached_input: price,
                    // prompt-cache writes (Anthropic's 5-minute and 1-hour breakpoints; README, Prompt caching)
                    cache_write: price,
                    cache_write_1h: price,
                    per_second: price,
                    per_image: price,
                    per_request: price,
                  },
                  oneOf: [
                    {
                      required: ['input', 'output'],
                      not: {
                        anyOf: [
                          { required: ['per_second'] },
                          { required: ['per_image'] },
                          { required: ['per_request'] },
                        ],
                      },
                    },
                    {
                      required: ['per_second'],
                      not: {
                        anyOf: [{ required: ['input'] }, { required: ['per_image'] }, { required: ['per_request'] }],
                      },
                    },
                    {
                      required: ['per_image'],
                      not: {
                        anyOf: [{ required: ['input'] }, { required: ['per_second'] }, { required: ['per_request'] }],
                      },
                    },
                    {
                      required: ['per_request'],
                      not: {
                        anyOf: [{ required: ['input'] }, { required: ['per_second'] }, { required: ['per_image'] }],
                      },
                    },
                  ],
                },
                markup_bps: { type: 'integer', minimum: 0 },
                quantization: { type: 'string' },
                context_length: { type: 'integer', minimum: 1 },
                max_output_tokens: { type: 'integer', minimum: 1 },
                zero_data_retention: { type: 'boolean' },
                supports_tools: { type: 'boolean' },
                supports_caching: { type: 'boolean' },
                options: { type: 'object' },
              },
            },
          },
        },
      },
    },
  },
} as const;

/** Checks a parsed catalog file's shape; what it cannot say (names, references) file.ts checks. */
export const validateCatalogFile = new Ajv({ allErrors: true, strict: false }).compile(schema);
