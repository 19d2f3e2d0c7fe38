// biome-ignore-all lint/suspicious/noExplicitAny: row bodies are wire JSON, read field by field
// The row kind of native message batches (`/v1/messages/batches`, kinds.ts): a row's `params` is a
// message-style request, translated exactly as the synchronous route (api/routes/messages.ts)
// translates it, passed through unchanged to upstreams that speak the format (Anthropic), and
// answered as that route answers: a `message` object with the row's cost beside its usage.
// The spec's native-batch rules a schema cannot say are checked here: `max_tokens` up to
// 1,000,000 (the model's own limit is checked where the batch is created), the first turn the
// user's, and no content a batch cannot run (file references, containers, MCP servers, video;
// hosted tools are refused by the translation itself, as on the synchronous route).
import { messagesRequestSchema } from '../surfaces/schemas/messages.js';
import type { RowKind } from './rowKind.js';
import { messagesToInternal } from '../surfaces/messages.js';
import { messagesPassThroughBody, passedThroughMessage } from '../surfaces/messagesPassthrough.js';
import { toMessage } from '../surfaces/messagesResponse.js';
import { newId } from '../core/ids.js';
import { parseModelName } from '../routing/suffixes.js';
import { catalog } from '../catalog/catalog.js';

/** The largest `max_tokens` a native batch row may ask for (spec, Limits; lower per model). */
export const MESSAGE_BATCH_MAX_TOKENS = 1_000_000;

/** Request fields a batch cannot carry out: they need state or services outside one message call. */
const REFUSED_FIELDS: Record<string, string> = {
  container: 'containers',
  mcp_servers: 'MCP servers',
};

/** Why a content block cannot run in a batch, or undefined. */
function blockRefusal(block: any, where: string): string | undefined {
  if (!block || typeof block !== 'object') return undefined;
  if (block.type === 'video') return `${where} is a video block; message batches do not take video.`;
  if (block.type === 'container_upload') return `${where} uploads to a container; message batches have none.`;
  if (block.source?.type === 'file' || block.source?.file_id !== undefined)
    return `${where} refers to an uploaded file; send its content inline (base64 or a URL) in a batch.`;
  if (Array.isArray(block.content))
    for (const [k, inner] of block.content.entries()) {
      const why = blockRefusal(inner, `${where}.content[${k}]`);
      if (why) return why;
    }
  return undefined;
}

export const messages: RowKind = {
  endpoint: '/v1/messages',
  surface: 'batch:messages',
  capField: 'max_tokens',
  schema: messagesRequestSchema,
  outputCap: (body) => body.max_tokens,
  refusal(body) {
    if (!Array.isArray(body.messages) || body.messages.length === 0) return "'messages' must be a non-empty array.";
    if (body.messages[0]?.role !== 'user') return "The first message must have role 'user'.";
    if (!Number.isInteger(body.max_tokens) || body.max_tokens < 1) return "'max_tokens' must be a positive integer.";
    if (body.max_tokens > MESSAGE_BATCH_MAX_TOKENS)
      return `'max_tokens' is ${body.max_tokens}; a message batch row may ask for at most ${MESSAGE_BATCH_MAX_TOKENS}.`;
    return undefined;
  },
  unsupported(body) {
    for (const [field, what] of Object.entries(REFUSED_FIELDS))
      if (body[field] !== undefined && body[field] !== null)
        return { message: `'${field}' is not supported in a message batch (no ${what}); remove it.`, param: field };
    const system = Array.isArray(body.system) ? body.system : [];
    for (const [j, block] of system.entries()) {
      const why = blockRefusal(block, `system[${j}]`);
      if (why) return { message: why, param: `system[${j}]` };
    }
    for (const [i, m] of body.messages.entries()) {
      if (!Array.isArray(m?.content)) continue;
      for (const [j, block] of m.content.entries()) {
        const why = blockRefusal(block, `messages[${i}].content[${j}]`);
        if (why) return { message: why, param: `messages[${i}].content[${j}]` };
      }
    }
    return undefined;
  },
  // as the synchronous route: the translation, and the body itself for upstreams that speak it
  translate: (body, model, name) => ({
    ...messagesToInternal(body, model, name),
    native: messagesPassThroughBody(body),
  }),
  render(r, usage, bill, row) {
    if (r.native) return passedThroughMessage(r.native, usage, bill, { model: row.model, provider: row.provider });
    // as messagesToInternal decides it: a reasoning model's thinking is hidden by `:reasoning-exclude`
    const name = parseModelName(String(row.body.model ?? row.model), (n) => catalog().model(n) !== undefined);
    const reasons = catalog().model(row.model)?.capabilities.reasoning === true;
    return toMessage(r, usage, bill, {
      id: newId('msg'),
      model: row.model,
      provider: row.provider,
      showReasoning: !(reasons && name.reasoningExclude === true),
    });
  },
};
