// The batch routes' bodies and queries, as Ajv checks them (spec "Batches"; wire-details "Files and
// batches"). Each row's own body is checked against the spec's row rules and the synchronous
// route's translation in activities/batches/rowRules.ts, which names the row at fault.
const metadata = {
  anyOf: [
    {
      type: 'object',
      maxProperties: 16,
      propertyNames: { maxLength: 64 },
      additionalProperties: { type: 'string', maxLength: 512 },
    },
    { type: 'null' },
  ],
} as const;

const BATCH_ENDPOINT_NAMES = ['/v1/chat/completions', '/v1/responses'] as const;

const endpoint = { type: 'string', enum: BATCH_ENDPOINT_NAMES } as const;

export const inlineBatchSchema = {
  type: 'object',
  required: ['endpoint', 'model', 'requests'],
  properties: {
    endpoint,
    model: { type: 'string', minLength: 1 },
    completion_window: { const: '24h' },
    metadata,
    requests: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        required: ['custom_id', 'body'],
        properties: {
          custom_id: { type: 'string', minLength: 1, maxLength: 512 },
          body: { type: 'object' },
          method: { const: 'POST' },
          url: { type: 'string' },
        },
      },
    },
  },
} as const;

export const fileBatchSchema = {
  type: 'object',
  required: ['input_file_id', 'endpoint', 'completion_window'],
  properties: {
    input_file_id: { type: 'string', minLength: 1 },
    endpoint,
    completion_window: { const: '24h' },
    metadata,
  },
} as const;

/** Unix seconds, or ISO 8601 with a timezone and at most millisecond precision. */
const instant = {
  type: 'string',
  pattern: '^(\\d{1,12}|\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}(:\\d{2}(\\.\\d{1,3})?)?(Z|[+-]\\d{2}:?\\d{2}))$',
} as const;

export const batchListQuery = {
  type: 'object',
  properties: {
    limit: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
    after: { type: 'string', minLength: 1 },
    before: { type: 'string', minLength: 1 },
    status: {
      enum: ['validating', 'in_progress', 'finalizing', 'completed', 'failed', 'expired', 'cancelling', 'cancelled'],
    },
    created_after: instant,
    created_before: instant,
  },
} as const;
