// One row per model request: who, which model and provider, tokens, cost, outcome. Written after
// the answer is on its way (callers do not await it), so it never adds latency; a failure to
// write is logged, never surfaced to the caller whose request already succeeded.
import { db } from '../db.js';
import type { Currency } from '../ledger/money.js';

export interface RequestRecordInput {
  id: string;
  accountId: string;
  apiKeyId: string | null;
  surface: string;
  model: string;
  providerId: string | null;
  status: string;
  inputTokens: number | null;
  outputTokens: number | null;
  currency: Currency | null;
  cost: bigint | null;
  holdId: string | null;
  errorCode: string | null;
}

export async function recordRequest(r: RequestRecordInput): Promise<void> {
  try {
    await db().prisma.requestRecord.create({
      data: { ...r, cost: r.cost?.toString() ?? null, finishedAt: new Date() },
    });
  } catch (err) {
    console.error(`[records] could not record request ${r.id}: ${(err as Error).message}`);
  }
}
