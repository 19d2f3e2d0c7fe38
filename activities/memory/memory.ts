// Conversation memory (POST /api/v1/memory, and the `:memory` model suffix on chat) as a metered
// call: the conversation is compressed first (compress.ts: pure, no model), so the worst case is
// exact but for caching: every input token uncached plus the compressed output, at the catalog
// prices of `switchyard/memory` (the spec's: 5.00 USD per 1M input tokens, 2.50 cached, 10.00
// output). The attempt stores the memory for `expiration_days` and learns which messages this
// account sent before (their tokens are billed as cached input); then one settlement.
// Expired memories and seen-message records are deleted by the Temporal Schedule
// `switchyard-memory-sweeper` (workflows/memorySweeper.ts).
import { randomBytes } from 'node:crypto';
import type { Caller } from '../core/caller.js';
import type { Message } from '../core/types.js';
import { catalog, type Route } from '../catalog/catalog.js';
import { RequestError } from '../core/errors.js';
import { costOfTokens } from '../core/money.js';
import { db } from '../db.js';
import { resolveModel } from '../catalog/resolve.js';
import { type Charge, MeteredCall } from '../metering/meteredCall.js';
import { planRoute } from '../routing/planRoute.js';
import { type Compressed, compress, type MemoryMessage, type Segment } from './compress.js';

/** The catalog model whose route prices memory (a built-in route of the local provider). */
const MEMORY_MODEL = 'switchyard/memory';
const NO_NEEDS = { tools: false, images: false, structuredOutput: false, caching: false };

const DEFAULT_EXPIRATION_DAYS = 30;
const DEFAULT_CONTEXT_LIMIT = 128_000;
const MIN_CONTEXT_LIMIT = 10_000;

export interface MemoryRequest {
  messages: MemoryMessage[];
  expirationDays: number;
  /** already raised to the minimum */
  contextLimit: number;
}

/** The body's fields with the spec's defaults and floor; the header's days win over the body's. */
export function memoryRequest(
  body: { messages?: unknown; expiration_days?: number; model_context_limit?: number },
  headerDays: number | undefined,
): MemoryRequest {
  if (!Array.isArray(body.messages) || body.messages.length === 0)
    throw new RequestError(400, 'invalid_parameter_value', 'messages must be a non-empty array', {
      param: 'messages',
    });
  return {
    messages: body.messages as MemoryMessage[],
    expirationDays: headerDays ?? body.expiration_days ?? DEFAULT_EXPIRATION_DAYS,
    contextLimit: Math.max(MIN_CONTEXT_LIMIT, body.model_context_limit ?? DEFAULT_CONTEXT_LIMIT),
  };
}

export interface MemoryResult {
  compressed: Compressed;
  cachedTokens: number;
  charge: Charge;
}

/** The cost of a compression with `cached` of its input tokens seen before, on `route`. */
function costOn(route: Route, c: Compressed, cached: number): bigint {
  return (
    costOfTokens(c.inputTokens - cached, route.price.input) +
    costOfTokens(cached, route.price.cachedInput ?? route.price.input) +
    costOfTokens(c.outputTokens, route.price.output)
  );
}

/**
 * Compress, reserve, store and settle: one charge, none when anything fails before the memory is
 * stored. `requestId` is the charge's idempotency key (the chat suffix passes its own derived id).
 */
export class MemoryCall {
  readonly metered: MeteredCall;
  readonly compressed: Compressed;

  constructor(
    caller: Caller,
    requestId: string,
    readonly req: MemoryRequest,
  ) {
    const { model } = resolveModel(MEMORY_MODEL, 'memory');
    this.compressed = compress(req.messages, req.contextLimit);
    this.metered = new MeteredCall({
      caller,
      requestId,
      surface: 'memory',
      modelId: model.id,
      // the gateway's own route: nothing leaves it, so a key's provider restrictions do not apply
      routes: planRoute(catalog(), model, null, {}, NO_NEEDS),
      worstCase: (route) => costOn(route, this.compressed, 0),
      shortfall: (required, available) =>
        `compressing this conversation costs up to $${required} and $${available} is available. Add funds, or send fewer messages.`,
    });
  }

  async run(signal: AbortSignal): Promise<MemoryResult> {
    await this.metered.reserve();
    const { value: cachedTokens, route } = await this.metered.orRelease(
      this.metered.attempt(signal, () => store(this.metered.spec.caller.accountId, this.req, this.compressed)),
    );
    const charge = await this.metered.settle(costOn(route, this.compressed, cachedTokens), {
      inputUnits: this.compressed.inputTokens,
      outputUnits: this.compressed.outputTokens,
    });
    return { compressed: this.compressed, cachedTokens, charge };
  }
}

/**
 * Store the memory and the hashes of the messages it read, in one transaction; returns the tokens
 * of messages seen before (unexpired, from an earlier request or earlier in this one).
 */
async function store(accountId: string, req: MemoryRequest, c: Compressed): Promise<number> {
  const expires = new Date(Date.now() + req.expirationDays * 86_400_000);
  const unique = new Map<string, Segment>();
  for (const s of c.segments) unique.set(s.hash, s);
  const client = await db().pool.connect();
  try {
    await client.query('BEGIN');
    const { rows } = await client.query<{ hash: string }>(
      `SELECT hash FROM memory_segments WHERE account_id = $1 AND hash = ANY($2::text[]) AND expires_at > now() FOR UPDATE`,
      [accountId, [...unique.keys()]],
    );
    const seen = new Set(rows.map((r) => r.hash));
    let cached = 0;
    for (const s of c.segments) {
      if (seen.has(s.hash)) cached += s.tokens;
      seen.add(s.hash);
    }
    await client.query(
      `INSERT INTO memory_segments (account_id, hash, tokens, expires_at)
       SELECT $1, h, t, $4 FROM unnest($2::text[], $3::int[]) AS u(h, t)
       ON CONFLICT (account_id, hash) DO UPDATE SET expires_at = GREATEST(memory_segments.expires_at, EXCLUDED.expires_at)`,
      [accountId, [...unique.keys()], [...unique.values()].map((s) => s.tokens), expires],
    );
    await client.query(
      `INSERT INTO memories (id, account_id, content, input_tokens, cached_tokens, output_tokens, model_context_limit, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [
        `mem_${randomBytes(12).toString('hex')}`,
        accountId,
        c.content,
        c.inputTokens,
        cached,
        c.outputTokens,
        req.contextLimit,
        expires,
      ],
    );
    await client.query('COMMIT');
    return cached;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}

/** Activity: delete up to `limit` expired memories and seen-message records; returns how many. */
export async function deleteExpiredMemories(limit: number): Promise<number> {
  const { pool } = db();
  const m = await pool.query(
    `DELETE FROM memories WHERE id IN (SELECT id FROM memories WHERE expires_at <= now() ORDER BY expires_at LIMIT $1)`,
    [limit],
  );
  const s = await pool.query(
    `DELETE FROM memory_segments WHERE (account_id, hash) IN
       (SELECT account_id, hash FROM memory_segments WHERE expires_at <= now() ORDER BY expires_at LIMIT $1)`,
    [limit],
  );
  // a full batch of either means there may be more: report the larger so the sweep goes on
  return Math.max(m.rowCount ?? 0, s.rowCount ?? 0);
}

/**
 * The `:memory` model suffix: the conversation before the latest user turn is compressed into one
 * system message (a metered call of its own, charged once under `<requestId>:memory`), and the
 * latest user turn and what follows it are sent as they are. Returns the messages to send and the
 * call (to refund if the answer it was for never reaches the caller), or nothing when there is
 * nothing before the latest turn to compress. A balance that cannot pay for the memory is the
 * spec's 402 `memory_balance_required`.
 */
export async function withMemory(
  caller: Caller,
  requestId: string,
  messages: Message[],
  contextLimit: number | null,
  signal: AbortSignal,
): Promise<{ messages: Message[]; call: MemoryCall } | undefined> {
  let lastUser = messages.length - 1;
  while (lastUser >= 0 && messages[lastUser].role !== 'user') lastUser--;
  if (lastUser <= 0) return undefined;
  const older: MemoryMessage[] = messages.slice(0, lastUser).map((m) => ({
    role: m.role,
    content: m.content.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('\n'),
  }));
  const call = new MemoryCall(caller, `${requestId}:memory`, {
    messages: older,
    expirationDays: DEFAULT_EXPIRATION_DAYS,
    contextLimit: Math.max(MIN_CONTEXT_LIMIT, contextLimit ?? DEFAULT_CONTEXT_LIMIT),
  });
  try {
    const { compressed } = await call.run(signal);
    const memory: Message = { role: 'system', content: [{ type: 'text', text: compressed.content }] };
    return { messages: [memory, ...messages.slice(lastUser)], call };
  } catch (err) {
    if (err instanceof RequestError && err.status === 402)
      throw new RequestError(
        402,
        'memory_balance_required',
        err.message.replace(/^Insufficient balance: /, 'Insufficient balance for the :memory suffix: '),
        err.opts,
      );
    throw err;
  }
}
