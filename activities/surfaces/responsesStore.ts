// Stored responses of the Responses API: kept SWITCHYARD_RESPONSE_RETENTION_DAYS (0-365, default
// 7; 0 keeps nothing), only ever visible to the account that made them. Expired rows answer as
// missing and are deleted when met (and an account's expired rows whenever it stores a new one);
// the rest go with the hourly sweeper (workflows/storedResponseSweeper.ts).
import { db } from '../db.js';
import type { ChatMessage } from './responses.js';
import type { ResponseObject } from './responsesResponse.js';

export interface StoredRequest {
  /** the conversation after this response (chat form, no instructions): what previous_response_id continues */
  conversation: ChatMessage[];
  /** the caller's own input to this response, as GET /v1/responses/{id}/input_items lists it */
  inputItems?: Array<Record<string, unknown>>;
}

export interface StoredResponseRow {
  id: string;
  accountId: string;
  status: string;
  request: StoredRequest;
  response: ResponseObject;
}

export function retentionDays(): number {
  const raw = process.env.SWITCHYARD_RESPONSE_RETENTION_DAYS;
  if (raw === undefined || raw === '') return 7;
  const n = Number(raw);
  return Number.isInteger(n) && n >= 0 && n <= 365 ? n : 7;
}

// What PostgreSQL cannot hold in JSON: NUL (`\u0000`) and lone UTF-16 surrogates. Requests carrying
// them are refused at the door (api/middleware/body.ts), but an answer is the upstream's: a model can
// be made to write a NUL, or a tokenizer to split a surrogate pair. Stored answers carry U+FFFD in
// their place rather than fail to store after the answer was paid for.
// biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is one of the characters looked for
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** `value` with every string (and key) PostgreSQL can store as JSON. A loop: answers may nest deep. */
export function storable<T>(value: T): T {
  const fix = (s: string) => s.replace(UNSTORABLE, '\ufffd');
  const root = { v: value as unknown };
  const stack: Array<[Record<string, unknown> | unknown[], string | number]> = [[root, 'v']];
  while (stack.length) {
    const [parent, key] = stack.pop()!;
    const v = (parent as Record<string | number, unknown>)[key];
    if (typeof v === 'string') (parent as Record<string | number, unknown>)[key] = fix(v);
    else if (Array.isArray(v)) {
      const copy = [...v];
      (parent as Record<string | number, unknown>)[key] = copy;
      for (let i = 0; i < copy.length; i++) stack.push([copy, i]);
    } else if (v !== null && typeof v === 'object') {
      const copy: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) copy[fix(k)] = x;
      (parent as Record<string | number, unknown>)[key] = copy;
      for (const k of Object.keys(copy)) stack.push([copy, k]);
    }
  }
  return root.v as T;
}

export async function saveResponse(accountId: string, response: ResponseObject, request: StoredRequest): Promise<void> {
  const days = retentionDays();
  if (days === 0) return;
  const { prisma } = db();
  const now = new Date();
  await prisma.storedResponse.deleteMany({ where: { accountId, expiresAt: { lte: now } } });
  const data = {
    status: response.status,
    request: storable(request) as object,
    response: storable(response) as object,
    expiresAt: new Date(now.getTime() + days * 86_400_000),
  };
  await prisma.storedResponse.upsert({
    where: { id: response.id },
    create: { id: response.id, accountId, ...data },
    update: data,
  });
}

/** The caller's own, unexpired response, or undefined. */
export async function loadResponse(accountId: string, id: string): Promise<StoredResponseRow | undefined> {
  const row = await db().prisma.storedResponse.findUnique({ where: { id } });
  if (!row || row.accountId !== accountId) return undefined;
  if (row.expiresAt.getTime() <= Date.now()) {
    await db().prisma.storedResponse.deleteMany({ where: { id } });
    return undefined;
  }
  return {
    id: row.id,
    accountId: row.accountId,
    status: row.status,
    request: row.request as unknown as StoredRequest,
    response: row.response as unknown as ResponseObject,
  };
}

/** Activity: delete up to `limit` expired responses, oldest first; returns how many. */
export async function deleteExpiredResponses(limit: number): Promise<number> {
  const r = await db().pool.query(
    `DELETE FROM stored_responses WHERE id IN (SELECT id FROM stored_responses WHERE expires_at <= now() ORDER BY expires_at LIMIT $1)`,
    [limit],
  );
  return r.rowCount ?? 0;
}

export async function deleteResponse(accountId: string, id: string): Promise<boolean> {
  const r = await db().prisma.storedResponse.deleteMany({ where: { id, accountId, expiresAt: { gt: new Date() } } });
  return r.count > 0;
}
