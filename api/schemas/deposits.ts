// POST /api/transaction/create/{ticker} (spec "Invitations, deposits, subscription, TEE"): `amount`,
// a number of US dollars; its range per ticker and its cents are checked by activities/payments/deposits.ts.
export const depositRequestSchema = {
  type: 'object',
  required: ['amount'],
  properties: {
    amount: { type: 'number' },
  },
} as const;
