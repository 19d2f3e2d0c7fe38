// Billing lookup: what one request (its X-Request-ID) cost, read back from its request record
// (activities/metering/records.ts, written with the settled charge). The spec keeps it for 24 hours
// and for the same API key only: anything older, another key's, or unknown reads as not found, so
// the answer never says whether someone else's request id exists.
import { db } from '../db.js';
import type { Currency } from '../core/money.js';
import { flushRequestRecords } from '../metering/records.js';

/** how long after it started a request's cost can be looked up */
const BILLING_LOOKUP_WINDOW_MS = 24 * 60 * 60 * 1000;

export interface BilledRequest {
  id: string;
  surface: string;
  model: string;
  providerId: string | null;
  status: string;
  inputTokens: number | null;
  outputTokens: number | null;
  currency: Currency | null;
  /** exact charge in the currency's smallest unit; null = nothing was charged */
  cost: bigint | null;
  errorCode: string | null;
  startedAt: Date;
  finishedAt: Date | null;
}

/** The request `requestId` made with API key `keyId` in the last 24 hours, or null. */
export async function lookUpBilledRequest(requestId: string, keyId: string): Promise<BilledRequest | null> {
  // records are written in batches: this process's last few are written before reading
  await flushRequestRecords();
  const r = await db().prisma.requestRecord.findFirst({
    where: {
      id: requestId,
      apiKeyId: keyId,
      startedAt: { gt: new Date(Date.now() - BILLING_LOOKUP_WINDOW_MS) },
    },
  });
  if (!r) return null;
  return {
    id: r.id,
    surface: r.surface,
    model: r.model,
    providerId: r.providerId,
    status: r.status,
    inputTokens: r.inputTokens,
    outputTokens: r.outputTokens,
    currency: r.currency,
    cost: r.cost === null ? null : BigInt(r.cost.toFixed(0)),
    errorCode: r.errorCode,
    startedAt: r.startedAt,
    finishedAt: r.finishedAt,
  };
}
