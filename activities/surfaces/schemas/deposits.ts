// POST /api/transaction/create/{ticker} (spec "Invitations, deposits, subscription, TEE"): `amount`,
// a number of US dollars; its range per ticker and its cents are checked by activities/payments/deposits.ts.
export const depositRequestSchema = {
  type: 'object',
  required: ['amount'],
  properties: {
    amount: { type: 'number' },
  },
} as const;

/** A BTCPay Server webhook (Greenfield's WebhookInvoiceEvent), read once its signature is checked. */
export const btcpayWebhookSchema = {
  type: 'object',
  required: ['type'],
  properties: {
    type: { type: 'string', maxLength: 100 },
    deliveryId: { type: 'string', maxLength: 200 },
    storeId: { type: 'string', maxLength: 200 },
    invoiceId: { type: 'string', maxLength: 200 },
  },
} as const;
