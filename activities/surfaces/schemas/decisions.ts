// The decisions request (spec "Decisions"), as Ajv checks it: the shapes. The questions' own rules
// (types, criteria, counts, the model family's rules) are checked in activities/decisions/, which
// can name the question and say exactly what is wrong. Unknown top-level fields are allowed, as on
// chat (clients send extensions); an unknown `provider` field is refused, since routing that
// silently ignores a control is worse than a 400.
const stringList = { type: 'array', items: { type: 'string' } };

export const decisionsRequestSchema = {
  type: 'object',
  required: ['model', 'state', 'questions'],
  properties: {
    model: { type: 'string', minLength: 1 },
    state: { type: ['string', 'object', 'array'] },
    questions: { type: 'object' },
    user: { type: 'string', maxLength: 256 },
    session_id: { type: 'string', maxLength: 256 },
    trace: { type: 'object' },
    independent: { type: 'boolean' },
    provider: {
      type: ['object', 'null'],
      additionalProperties: false,
      properties: {
        order: stringList,
        only: stringList,
        ignore: stringList,
        allow_fallbacks: { type: 'boolean' },
        require_parameters: { type: 'boolean' },
        max_price: {
          type: 'object',
          additionalProperties: false,
          properties: { prompt: { type: 'number', minimum: 0 }, completion: { type: 'number', minimum: 0 } },
        },
        zdr: { type: 'boolean' },
        data_collection: { type: 'string', enum: ['allow', 'deny'] },
      },
    },
  },
} as const;
