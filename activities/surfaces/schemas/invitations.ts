// Bodies of the credit invitation routes (api/routes/invitations.ts), after the spec's
// "Invitations, deposits, subscription, TEE". Unknown fields are refused. The amount's own rules
// (at least 0, USD precision) are the route's `InvalidAmount`, not a schema failure.
const name = { type: 'string', maxLength: 100 } as const;
const code = { type: 'string', minLength: 1, maxLength: 64 } as const;

export const createInvitationSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    type: { enum: ['invitation', 'referralLink'] },
    amount: { type: 'number' },
    currency: { type: 'string', minLength: 1, maxLength: 10 },
    recipientName: name,
    issuerName: name,
    issuerNote: { type: 'string', maxLength: 1000 },
  },
} as const;

export const invitationCodeSchema = {
  type: 'object',
  required: ['code'],
  additionalProperties: false,
  properties: { code },
} as const;

export const lookupInvitationQuerySchema = {
  type: 'object',
  required: ['code'],
  additionalProperties: false,
  properties: { code },
} as const;
