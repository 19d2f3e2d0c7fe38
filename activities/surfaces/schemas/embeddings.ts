// The embeddings request (wire-details "Embeddings"), as Ajv checks it. `input` is one text, up to
// 2,048 texts, one token array or up to 2,048 token arrays: its shape is checked in
// activities/embeddings/embed.ts, which can say exactly what is wrong (an anyOf here would report
// its first branch's complaint), along with what needs the model (token arrays only for models
// that take them). Unknown fields are allowed, as on chat: clients send vendor extensions.
const stringList = { type: 'array', items: { type: 'string' } };

export const embeddingsRequestSchema = {
  type: 'object',
  required: ['model', 'input'],
  properties: {
    model: { type: 'string', minLength: 1 },
    input: { type: ['string', 'array'] },
    encoding_format: { type: 'string', enum: ['float', 'base64'] },
    dimensions: { type: 'integer', minimum: 1 },
    user: { type: 'string', maxLength: 256 },
    provider: {
      anyOf: [
        { type: 'string', minLength: 1 },
        {
          type: 'object',
          additionalProperties: false,
          properties: {
            order: stringList,
            only: stringList,
            ignore: stringList,
            allow_fallbacks: { type: 'boolean' },
            zdr: { type: 'boolean' },
            data_collection: { type: 'string', enum: ['allow', 'deny'] },
          },
        },
      ],
    },
  },
} as const;
