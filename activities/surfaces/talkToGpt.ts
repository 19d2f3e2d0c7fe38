// biome-ignore-all lint/suspicious/noExplicitAny: wire JSON, read field by field
// The legacy talk-to-gpt surface (POST /api/talk-to-gpt): previous `messages` plus `prompt` as the
// last user turn, translated through chat's own translation (one internal request), and the answer
// as plain text followed by a metadata block `<Tag>{"cost",...}</Tag>` whose tag comes from the
// service name (see serviceTag).
import type { ModelInfo } from '../catalog/catalog.js';
import type { Bill } from '../inference/execute.js';
import type { ModelName } from '../routing/suffixes.js';
import { config } from '../config.js';
import { toJson } from '../json.js';
import { chatToInternal, type ChatPlanInput } from './chat.js';
import { RequestError } from '../core/errors.js';

/** Service names whose tag is not simply capitalized: the default keeps existing clients working. */
const KNOWN_TAGS: Record<string, string> = { nanogpt: 'NanoGPT' };

/**
 * The metadata block's tag for a service name (the spec's `<Service>`): `nanogpt` → `NanoGPT`
 * (what existing clients parse); any other name is capitalized, with a trailing "gpt" or "ai"
 * upper-cased (`mygpt` → `MyGPT`, `acmeai` → `AcmeAI`, `switchyard` → `Switchyard`). Characters
 * that cannot be in a tag name are dropped.
 */
export function serviceTag(serviceName: string = config.serviceName): string {
  const name = serviceName.toLowerCase().replace(/[^a-z0-9_-]/g, '');
  if (KNOWN_TAGS[name]) return KNOWN_TAGS[name];
  if (!name) return 'Service';
  const m = /^(.+?)(gpt|ai)$/.exec(name);
  const head = m ? m[1] : name;
  return head.charAt(0).toUpperCase() + head.slice(1) + (m ? m[2].toUpperCase() : '');
}

/** The conversation as chat sees it: the previous messages, then the prompt as the last user turn. */
export function talkToInternal(body: any, model: ModelInfo, name: ModelName): ChatPlanInput {
  if (body.advisor !== undefined && body.advisor !== null)
    throw new RequestError(
      400,
      'invalid_parameter_value',
      "'advisor' is offered on chat completions only (POST /api/v1/chat/completions, not streamed). Remove the field here.",
      { param: 'advisor' },
    );
  const history: any[] = body.messages ?? [];
  const hasPrompt = typeof body.prompt === 'string' && body.prompt !== '';
  if (!hasPrompt && history.length === 0) {
    throw new RequestError(
      400,
      'missing_required_parameter',
      "Send 'prompt' (the new user message), 'messages' (the conversation so far), or both.",
      { param: 'prompt' },
    );
  }
  const messages = hasPrompt ? [...history, { role: 'user', content: body.prompt }] : history;
  const chatBody: Record<string, unknown> = { messages };
  if (body.provider !== undefined) chatBody.provider = body.provider;
  return chatToInternal(chatBody, model, name);
}

interface TalkMetadata {
  cost: number;
  inputTokens: number;
  outputTokens: number;
  paymentSource: string;
  remainingBalance: number;
}

/** The plain-text answer: the reply, then `<Tag>{json}</Tag>` with what it cost. */
export function talkReply(text: string, bill: Bill, tag = serviceTag()): string {
  const meta: TalkMetadata = {
    cost: bill.cost,
    inputTokens: bill.inputTokens,
    outputTokens: bill.outputTokens,
    paymentSource: bill.paymentSource,
    remainingBalance: bill.remainingBalance,
  };
  return `${text}<${tag}>${toJson(meta)}</${tag}>`;
}
