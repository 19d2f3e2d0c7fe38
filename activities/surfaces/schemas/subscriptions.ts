// POST /api/subscription/v1/subscribe: `{plan}`, a plan id from GET /api/subscription/v1/plans.
export const subscribeRequestSchema = {
  type: 'object',
  required: ['plan'],
  additionalProperties: false,
  properties: { plan: { type: 'string', minLength: 1, maxLength: 100 } },
} as const;
