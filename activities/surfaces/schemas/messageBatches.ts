// Native message batches' bodies and queries, as Ajv checks them (the public Message Batches shape).
// A request's `params` is checked by the synchronous messages route's own schema, so a batch row
// is refused exactly where that route would refuse it, named `requests[i].params...`; the batch
// rules beyond a schema (one model, unique ids, limits, content a batch cannot run) are in
// activities/batches/messageBatches.ts.
import { MESSAGE_BATCH_LIMITS } from '../../batches/messageBatches.js';
import { MESSAGE_BATCH_MAX_TOKENS } from '../../batches/messageKind.js';
import { messagesRequestSchema } from './messages.js';

export const messageBatchSchema = {
  type: 'object',
  required: ['requests'],
  properties: {
    requests: {
      type: 'array',
      minItems: 1,
      maxItems: MESSAGE_BATCH_LIMITS.requests,
      items: {
        type: 'object',
        required: ['custom_id', 'params'],
        properties: {
          custom_id: { type: 'string', pattern: '^[a-zA-Z0-9_-]{1,64}$' },
          params: {
            ...messagesRequestSchema,
            properties: {
              ...messagesRequestSchema.properties,
              max_tokens: { type: 'integer', minimum: 1, maximum: MESSAGE_BATCH_MAX_TOKENS },
            },
          },
        },
      },
    },
  },
} as const;

/** `before_id` / `after_id`: the page of batches newer / older than that one (newest first). */
export const messageBatchListQuery = {
  type: 'object',
  properties: {
    limit: { type: 'integer', minimum: 1, maximum: 1000, default: 20 },
    before_id: { type: 'string', minLength: 1 },
    after_id: { type: 'string', minLength: 1 },
  },
} as const;
