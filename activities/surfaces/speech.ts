// Text to speech, synchronously (POST /api/v1/audio/speech): check the request against the
// speech model's catalog options, plan the routes with the one planner, reserve the price of the
// input characters, call the first route that answers (falling back before any audio reached the
// caller), and settle. Billing is per input character: for category `speech` the route price
// `input` is USD per 1M characters. Streaming is billed once the first audio chunk has arrived;
// a provider that fails before any audio costs nothing.
import type { ModelInfo, Route } from '../catalog/catalog.js';
import { catalog } from '../catalog/catalog.js';
import type { Caller } from '../accounts/keys.js';
import { planRoute } from '../routing/planRoute.js';
import { InsufficientFunds, release, reserve, settle, type Settlement } from '../ledger/ledger.js';
import { costOfTokens, formatAmount, toDisplayNumber } from '../ledger/money.js';
import { targetFor } from '../inference/execute.js';
import { recordRequest } from '../inference/records.js';
import { RequestError } from '../inference/errors.js';
import { UpstreamError } from '../providers/types.js';
import { speechAdapterFor, type SpeechFormat, type SpeechRequest } from '../providers/speech.js';

export interface SpeechBody {
  model: string;
  input: string;
  voice?: string;
  response_format?: string;
  speed?: number;
  instructions?: string;
  stream?: boolean;
}

export interface SpeechPlan {
  model: ModelInfo;
  input: string;
  /** Unicode code points of `input`: what is billed */
  chars: number;
  voice: string;
  format: SpeechFormat;
  speed?: number;
  instructions?: string;
}

const ALL_FORMATS = ['mp3', 'opus', 'aac', 'flac', 'wav', 'pcm'];
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

/** The model's options against the request: the spec's speech codes, all 400. */
export function planSpeech(model: ModelInfo, body: SpeechBody): SpeechPlan {
  const o = model.options;
  const formats = strings(o.formats);
  const fixed = typeof o.fixed_format === 'string' ? (o.fixed_format as SpeechFormat) : undefined;
  const asked = body.response_format ?? 'mp3';
  let format: SpeechFormat;
  if (fixed) {
    if (!ALL_FORMATS.includes(asked)) {
      throw new RequestError(400, 'unsupported_format', `Unknown response_format '${asked}'. Supported: ${ALL_FORMATS.join(', ')}.`, 'response_format');
    }
    format = fixed; // this family always answers one format and ignores response_format
  } else {
    if (!formats.includes(asked)) {
      throw new RequestError(400, 'unsupported_format', `Model '${model.id}' cannot produce response_format '${asked}'. Supported: ${formats.join(', ')}.`, 'response_format');
    }
    format = asked as SpeechFormat;
  }

  const voices = strings(o.voices);
  const voice = body.voice ?? voices[0];
  if (!voice) throw new RequestError(400, 'missing_required_parameter', "Missing required parameter: 'voice'.", 'voice');
  const pattern = typeof o.voice_id_pattern === 'string' ? new RegExp(o.voice_id_pattern) : null;
  if (!voices.some((v) => v.toLowerCase() === voice.toLowerCase()) && !pattern?.test(voice)) {
    throw new RequestError(400, 'invalid_voice', `Voice '${voice}' is not available for '${model.id}'. Voices: ${voices.join(', ')}${pattern ? ', or a voice id' : ''}.`, 'voice');
  }

  const chars = [...body.input].length;
  const max = Number(o.max_input_chars ?? 4096);
  if (chars > max) {
    throw new RequestError(400, 'input_too_long', `Input is ${chars} characters; '${model.id}' accepts at most ${max}. Split the text into several requests.`, 'input');
  }
  return { model, input: body.input, chars, voice, format, speed: body.speed, instructions: o.instructions === true ? body.instructions : undefined };
}

/** The voice as this route's upstream names it (`voice_map`), else as given. */
function upstreamVoice(route: Route, voice: string): string {
  const map = (route.options.voice_map ?? {}) as Record<string, string>;
  const hit = Object.keys(map).find((k) => k.toLowerCase() === voice.toLowerCase());
  return hit ? map[hit] : voice;
}

export interface SpeechBill {
  /** charged, in the paying currency */
  amount: number;
  currency: 'USD' | 'XNO';
  /** the cost in USD */
  cost: number;
  paymentSource: 'USD' | 'XNO';
  characters: number;
}

export interface OpenedSpeech {
  route: Route;
  contentType: string;
  format: SpeechFormat;
  /** the first audio chunk (already received) */
  first: Buffer;
  /** the rest of the audio */
  rest: AsyncIterator<Buffer>;
}

function callerStatus(upstream: number): number {
  if (upstream === 499 || upstream === 429) return upstream;
  if (upstream === 408 || upstream === 504) return 504;
  if (upstream === 400 || upstream === 404 || upstream === 413 || upstream === 422) return 400;
  return 502;
}

export class SpeechCall {
  private holdId?: string;
  private route?: Route;
  private readonly routes: Route[];
  private readonly started = Date.now();

  constructor(
    private readonly caller: Caller,
    private readonly requestId: string,
    readonly plan: SpeechPlan,
    explicitProvider?: string,
  ) {
    if (caller.billingMode === 'subscription_only') {
      throw new RequestError(402, 'subscription_required', 'This API key is limited to subscription billing, and no subscription covers this request. Use a pay-as-you-go key.', null);
    }
    this.routes = planRoute(catalog(), plan.model, caller, explicitProvider ? { explicit: explicitProvider } : {}, {
      tools: false, images: false, structuredOutput: false, caching: false,
    });
  }

  costOn(route: Route): bigint {
    return costOfTokens(this.plan.chars, route.price.input);
  }

  /** Hold the price of the input on the dearest route it may end up on. */
  async reserve(): Promise<void> {
    const worst = this.routes.reduce((m, r) => (this.costOn(r) > m ? this.costOn(r) : m), 0n);
    if (worst === 0n) return;
    try {
      const hold = await reserve({
        accountId: this.caller.accountId, usd: worst, idempotencyKey: `hold:${this.requestId}`, requestId: this.requestId, apiKeyId: this.caller.keyId,
      });
      this.holdId = hold.id;
    } catch (err) {
      if (err instanceof InsufficientFunds) {
        throw new RequestError(
          402, 'insufficient_balance',
          `Insufficient balance: this request costs $${formatAmount(err.requiredUsd, 'USD')} and $${formatAmount(err.availableUsd, 'USD')} is available. Add funds, or send shorter input.`,
          null,
          { details: { requiredBalance: toDisplayNumber(err.requiredUsd, 'USD'), availableBalance: toDisplayNumber(err.availableUsd, 'USD') } },
        );
      }
      throw err;
    }
  }

  /** Calls the routes in order until one delivers its first audio chunk. Throws RequestError when none does. */
  async open(signal: AbortSignal): Promise<OpenedSpeech> {
    const failures: UpstreamError[] = [];
    for (const route of this.routes) {
      const req: SpeechRequest = {
        model: route.upstreamModel, input: this.plan.input, voice: upstreamVoice(route, this.plan.voice), format: this.plan.format,
        speed: this.plan.speed, instructions: this.plan.instructions,
      };
      try {
        const out = await speechAdapterFor(route).synthesize(req, targetFor(route), signal);
        const rest = out.audio[Symbol.asyncIterator]();
        const first = await rest.next();
        if (first.done) throw new UpstreamError(`${route.provider.id} returned no audio`, 502, true, { code: 'empty_response', providerId: route.provider.id });
        this.route = route;
        return { route, contentType: out.contentType, format: this.plan.format, first: first.value, rest };
      } catch (err) {
        const e = err instanceof UpstreamError ? err : new UpstreamError(`${route.provider.id} failed unexpectedly`, 502, false, { code: 'provider_error', providerId: route.provider.id });
        if (!(err instanceof UpstreamError)) console.error(`[speech] adapter for ${route.provider.id} failed unexpectedly:`, err);
        failures.push(e);
        if (!e.retryable || signal.aborted) break;
      }
    }
    const last = failures[failures.length - 1];
    if (failures.length === 1) {
      const status = last.status === 400 && last.opts.code === 'unsupported_format' ? 400 : callerStatus(last.status);
      const code = last.opts.code ?? (status === 400 ? 'upstream_rejected_request' : status === 429 ? 'rate_limit_exceeded' : 'upstream_error');
      throw new RequestError(status, code, last.message, null, { retryAfterSeconds: last.opts.retryAfterSeconds });
    }
    throw new RequestError(502, 'all_fallbacks_failed', `Every provider failed: ${failures.map((f) => f.message).join('; ')}`);
  }

  /** Charge the input characters on the route that answered. */
  async settle(): Promise<SpeechBill> {
    const route = this.route!;
    const cost = this.costOn(route);
    let s: Settlement | undefined;
    if (this.holdId) s = await settle({ holdId: this.holdId, usd: cost, reason: `speech ${this.plan.model.id} via ${route.provider.id}` });
    const currency = s?.currency ?? 'USD';
    const charged = s?.charged ?? 0n;
    recordRequest({
      id: this.requestId, accountId: this.caller.accountId, apiKeyId: this.caller.keyId, surface: 'speech', model: this.plan.model.id,
      providerId: route.provider.id, status: 'completed', inputTokens: this.plan.chars, outputTokens: 0, currency, cost: charged,
      holdId: this.holdId ?? null, errorCode: null, startedAt: new Date(this.started),
    });
    return { amount: toDisplayNumber(charged, currency), currency, cost: toDisplayNumber(cost, 'USD'), paymentSource: currency, characters: this.plan.chars };
  }

  /** No audio reached the caller: give the hold back. */
  async fail(code: string): Promise<void> {
    if (this.holdId) await release(this.holdId);
    recordRequest({
      id: this.requestId, accountId: this.caller.accountId, apiKeyId: this.caller.keyId, surface: 'speech', model: this.plan.model.id,
      providerId: this.route?.provider.id ?? null, status: 'failed', inputTokens: null, outputTokens: null, currency: null, cost: null,
      holdId: this.holdId ?? null, errorCode: code, startedAt: new Date(this.started),
    });
  }
}
