// Moderation as a metered call, for POST /api/v1/moderations and for the `moderation` header's
// preflight on chat completions: the model (catalog category `moderation`), the inputs as texts
// (`empty_moderation_input`, `unsupported_moderation_input`), routes from the one planner, the
// price reserved and then charged exactly. The bill is known before the call (OpenAI's answer
// carries no token count): a token per 4 bytes of UTF-8 input, at the route's input price per 1M
// tokens. A flagged verdict is still a verdict: the call is charged; what the caller does with
// it (the preflight refuses the chat request, `content_policy_violation`, uncharged) is theirs.
import type { Caller } from '../core/caller.js';
import { catalog, type ModelInfo, type Route } from '../catalog/catalog.js';
import { RequestError } from '../core/errors.js';
import { costOfTokens } from '../core/money.js';
import type { Message } from '../core/types.js';
import { resolveModel } from '../catalog/resolve.js';
import { type Charge, MeteredCall } from '../metering/meteredCall.js';
import { capability, targetFor } from '../providers/registry.js';
import type { ModerationVerdict } from '../providers/types.js';
import { planRoute } from '../routing/planRoute.js';

/** The model a preflight uses when the header only says yes (`moderation: true`). */
export const DEFAULT_MODERATION_MODEL = 'openai/omni-moderation-latest';

/** Moderation needs nothing of a route beyond serving the model. */
const NO_NEEDS = { tools: false, images: false, structuredOutput: false, caching: false };

/** The most inputs one request may carry (OpenAI's own limit on a moderations request). */
const MAX_INPUTS = 32;

const bad = (code: string, message: string, param: string) => new RequestError(400, code, message, { param });

/**
 * The texts of `input` as OpenAI's moderations API takes it: a string, a list of strings, or a
 * list of `{type: 'text', text}` parts. Image parts are refused (`unsupported_moderation_input`):
 * the gateway moderates text only. Empty texts are `empty_moderation_input`.
 */
export function moderationInputOf(input: unknown): string[] {
  const texts: string[] = [];
  const items = typeof input === 'string' ? [input] : input;
  if (!Array.isArray(items) || items.length === 0)
    throw bad('empty_moderation_input', "'input' is empty: send a string, or a list of strings, to moderate.", 'input');
  if (items.length > MAX_INPUTS)
    throw bad(
      'invalid_parameter_value',
      `'input' has ${items.length} items; at most ${MAX_INPUTS} per request. Split it into several requests.`,
      'input',
    );
  for (const [i, item] of items.entries()) {
    const text = typeof item === 'string' ? item : item?.type === 'text' ? item.text : undefined;
    if (typeof text !== 'string')
      throw bad(
        'unsupported_moderation_input',
        `'input' item ${i} is ${typeof item?.type === 'string' ? `a '${item.type.slice(0, 40)}' part` : 'not text'}; this gateway moderates text only (strings, or {type: "text", text} parts).`,
        'input',
      );
    if (!text.trim()) throw bad('empty_moderation_input', `'input' item ${i} has no text to moderate.`, 'input');
    texts.push(text);
  }
  return texts;
}

/**
 * What a chat request's preflight moderates: the text of its system and user turns (the caller's
 * input; assistant and tool turns are not the caller's words). A turn carrying an image or a
 * document cannot be moderated as text: `unsupported_moderation_input` rather than a partial check.
 */
export function preflightInputOf(messages: readonly Message[], prompt?: string): string[] {
  const texts: string[] = prompt?.trim() ? [prompt] : [];
  for (const m of messages) {
    if (m.role !== 'user' && m.role !== 'system') continue;
    for (const part of m.content) {
      if (part.type !== 'text')
        throw bad(
          'unsupported_moderation_input',
          `The moderation preflight checks text only, and a ${m.role} turn carries a${part.type === 'image' ? 'n image' : ' document'}. Send the request without the 'moderation' header, or without the ${part.type}.`,
          'moderation',
        );
      if (part.text.trim()) texts.push(part.text);
    }
  }
  if (texts.length === 0)
    throw bad(
      'empty_moderation_input',
      "The moderation preflight found no text in the request's system and user turns to check.",
      'moderation',
    );
  return [texts.join('\n\n')];
}

/**
 * The moderation model the `moderation` header asks for: a truthy value means the default model,
 * anything else names one. Given twice (or as a list) naming different models is
 * `conflicting_moderation_model`; undefined = no preflight (absent, or a falsy value).
 */
export function moderationModelOf(header: string | string[] | undefined): string | undefined {
  if (header === undefined) return undefined;
  const values = (Array.isArray(header) ? header : [header])
    .flatMap((h) => h.split(','))
    .map((v) => v.trim())
    .filter(Boolean);
  const OFF = new Set(['false', '0', 'no', 'off', 'never', 'disabled']);
  const YES = new Set(['true', '1', 'yes', 'on', 'always', 'enabled']);
  const wanted = new Set(
    values
      .filter((v) => !OFF.has(v.toLowerCase()))
      .map((v) => (YES.has(v.toLowerCase()) ? DEFAULT_MODERATION_MODEL : v)),
  );
  if (values.some((v) => OFF.has(v.toLowerCase())) && wanted.size > 0)
    throw bad(
      'conflicting_moderation_model',
      "The 'moderation' header both turns the preflight off and asks for it.",
      'moderation',
    );
  if (wanted.size > 1)
    throw bad(
      'conflicting_moderation_model',
      `The 'moderation' header names more than one moderation model (${[...wanted].join(', ')}); name one, or send 'true' for the default (${DEFAULT_MODERATION_MODEL}).`,
      'moderation',
    );
  if (values.length === 0 && !(Array.isArray(header) ? header.join('') : header).trim())
    throw bad(
      'invalid_parameter_value',
      `The 'moderation' header is empty: send 'true' (${DEFAULT_MODERATION_MODEL}), a moderation model id, or 'false'.`,
      'moderation',
    );
  return [...wanted][0];
}

export interface Moderation {
  verdicts: ModerationVerdict[];
  /** the input tokens billed (a token per 4 bytes) */
  tokens: number;
  route: Route;
  charge: Charge;
}

/** The tokens billed for `texts`: a token per 4 bytes of UTF-8, at least one per text. */
const tokensOf = (texts: readonly string[]) =>
  texts.reduce((n, t) => n + Math.max(1, Math.ceil(Buffer.byteLength(t) / 4)), 0);

/**
 * One moderation as a metered call: its exact price reserved (a hold of its own, keyed apart from
 * the chat call it may precede), the first route that answers, the price charged.
 */
export class ModerationCall {
  readonly metered: MeteredCall;
  readonly model: ModelInfo;
  private readonly tokens: number;

  constructor(
    caller: Caller,
    requestId: string,
    modelName: string,
    readonly input: string[],
    opts: { surface: 'moderations' | 'moderation_preflight'; param: string },
  ) {
    this.model = modelOf(modelName, opts.param);
    this.tokens = tokensOf(input);
    this.metered = new MeteredCall({
      caller,
      requestId,
      holdKey: `moderation:${requestId}`,
      surface: opts.surface,
      modelId: this.model.id,
      routes: planRoute(catalog(), this.model, caller, {}, NO_NEEDS),
      worstCase: (route) => costOfTokens(this.tokens, route.price.input),
      shortfall: (required, available) =>
        `the moderation check costs up to $${required} and $${available} is available. Add funds, or send less text.`,
    });
  }

  /** Reserve, classify, charge. A failure releases the reservation: nothing is charged for it. */
  async run(signal: AbortSignal): Promise<Moderation> {
    await this.metered.reserve();
    const { value: verdicts, route } = await this.metered.orRelease(
      this.metered.attempt(signal, (route) =>
        capability(route, 'moderation').classify(
          { model: route.upstreamModel, input: this.input },
          targetFor(route),
          signal,
        ),
      ),
    );
    const charge = await this.metered.settle(costOfTokens(this.tokens, route.price.input), {
      inputUnits: this.tokens,
      outputUnits: 0,
    });
    return { verdicts, tokens: this.tokens, route, charge };
  }
}

/** A moderation model by id or alias; another category's model is a 400 naming `param`. */
function modelOf(name: string, param: string): ModelInfo {
  try {
    return resolveModel(name, 'moderation').model;
  } catch (err) {
    if (err instanceof RequestError) throw new RequestError(err.status, err.code, err.message, { param });
    throw err;
  }
}
