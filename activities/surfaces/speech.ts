// Text to speech and music, the one call behind POST /api/v1/audio/speech, POST /api/tts and the
// `speechJob` workflow's activity: check the request against the model's catalog options, plan
// the routes with the one planner, reserve the price, call the first route that answers (falling
// back before any audio reached the caller), and settle. The same SpeechCall runs in the API
// (synchronous answers) and in a worker (asynchronous jobs, which adopt the API's reservation).
//
// Billing units: category `speech` bills input characters, category `music` the seconds of music
// asked for (ElevenLabs meters music by length). The route price `input` is USD per
// `billing_per` units (model option; default 1M characters for speech, 1 second for music), e.g.
// `billing_per: 60` on a music model = the route price is USD per minute, charged by the second. Streaming is billed once the first audio chunk has arrived; a provider that fails
// before any audio costs nothing.
import type { ModelInfo, Route } from '../catalog/catalog.js';
import { catalog } from '../catalog/catalog.js';
import type { Caller } from '../accounts/keys.js';
import { planRoute } from '../routing/planRoute.js';
import { InsufficientFunds, release, reserve, settle, type Hold, type Settlement } from '../ledger/ledger.js';
import { ceilDiv, formatAmount, toDisplayNumber } from '../core/money.js';
import { targetFor } from '../inference/execute.js';
import { recordRequest } from '../inference/records.js';
import { resolveModel } from '../inference/prepare.js';
import { speechAdapterFor, type SpeechFormat, type SpeechRequest, type VoiceSettings } from '../providers/speech.js';
import { RequestError, UPSTREAM_ERROR, upstreamError } from '../core/errors.js';

export interface SpeechBody {
  model: string;
  input: string;
  voice?: string;
  response_format?: string;
  speed?: number;
  instructions?: string;
  stream?: boolean;
  /** voice controls, for models with `voice_settings: true` (ignored by the others) */
  stability?: number;
  similarity_boost?: number;
  style?: number;
  /** music models: seconds of music to compose (ignored by speech models) */
  duration?: number;
}

export interface SpeechPlan {
  model: ModelInfo;
  kind: 'speech' | 'music';
  input: string;
  /** Unicode code points of `input` */
  chars: number;
  /** what is billed: characters (speech) or seconds (music), see billingUnit() */
  units: number;
  voice: string;
  format: SpeechFormat;
  speed?: number;
  instructions?: string;
  voiceSettings?: VoiceSettings;
  durationSeconds?: number;
}

/** What a speech or music model bills, and per how many of them its route price `input` is given. */
export function billingUnit(model: ModelInfo): { unit: 'character' | 'second'; per: bigint } {
  const per = model.options.billing_per;
  const unit = model.category === 'music' ? 'second' : 'character';
  return {
    unit,
    per:
      typeof per === 'number' && Number.isInteger(per) && per > 0 ? BigInt(per) : unit === 'second' ? 1n : 1_000_000n,
  };
}

/** A speech or music model by name: /audio/speech and /api/tts serve both categories. */
export function resolveSpeechModel(requested: string): ModelInfo {
  const found = catalog().model(requested);
  const wrong = (id: string, category: string) =>
    new RequestError(
      400,
      'invalid_model',
      `Model '${id}' is a ${category} model; this endpoint needs a speech or music model (GET /api/v1/audio/voices lists them).`,
      { param: 'model' },
    );
  if (found && found.category !== 'speech' && found.category !== 'music') throw wrong(found.id, found.category);
  try {
    return resolveModel(requested, found?.category ?? 'speech').model;
  } catch (err) {
    // a name with a suffix that resolves to another category
    if (err instanceof RequestError && err.code === 'invalid_parameter_value')
      throw new RequestError(400, 'invalid_model', err.message, { param: 'model' });
    throw err;
  }
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
      throw new RequestError(
        400,
        'unsupported_format',
        `Unknown response_format '${asked}'. Supported: ${ALL_FORMATS.join(', ')}.`,
        { param: 'response_format' },
      );
    }
    format = fixed; // this family always answers one format and ignores response_format
  } else {
    if (!formats.includes(asked)) {
      throw new RequestError(
        400,
        'unsupported_format',
        `Model '${model.id}' cannot produce response_format '${asked}'. Supported: ${formats.join(', ')}.`,
        { param: 'response_format' },
      );
    }
    format = asked as SpeechFormat;
  }

  const kind = model.category === 'music' ? 'music' : 'speech';
  const chars = [...body.input].length;
  const max = Number(o.max_input_chars ?? 4096);
  if (chars > max) {
    const what = kind === 'music' ? 'The music prompt' : 'Input';
    throw new RequestError(
      400,
      'input_too_long',
      `${what} is ${chars} characters; '${model.id}' accepts at most ${max}. ${kind === 'music' ? 'Shorten the prompt.' : 'Split the text into several requests.'}`,
      { param: 'input' },
    );
  }

  if (kind === 'music') {
    // `voice` is ignored for music (any string is accepted); the length decides the price.
    const min = Number(o.min_seconds ?? 3);
    const maxSeconds = Number(o.max_seconds ?? 300);
    const seconds = body.duration ?? Number(o.default_seconds ?? 30);
    if (!Number.isInteger(seconds) || seconds < min || seconds > maxSeconds) {
      throw new RequestError(
        400,
        'invalid_parameter_value',
        `'${model.id}' composes between ${min} and ${maxSeconds} seconds of music (whole seconds); duration was ${seconds}.`,
        { param: 'duration' },
      );
    }
    return { model, kind, input: body.input, chars, units: seconds, voice: '', format, durationSeconds: seconds };
  }

  const voices = strings(o.voices);
  const voice = body.voice ?? voices[0];
  if (!voice)
    throw new RequestError(400, 'missing_required_parameter', "Missing required parameter: 'voice'.", {
      param: 'voice',
    });
  const pattern = typeof o.voice_id_pattern === 'string' ? new RegExp(o.voice_id_pattern) : null;
  if (!voices.some((v) => v.toLowerCase() === voice.toLowerCase()) && !pattern?.test(voice)) {
    throw new RequestError(
      400,
      'invalid_voice',
      `Voice '${voice}' is not available for '${model.id}'. Voices: ${voices.join(', ')}${pattern ? ', or a voice id' : ''}.`,
      { param: 'voice' },
    );
  }
  // Voice controls reach only the models that have them; the others ignore them, as tts-1 ignores `instructions`.
  let voiceSettings: VoiceSettings | undefined;
  if (o.voice_settings === true) {
    const v = { stability: body.stability, similarity_boost: body.similarity_boost, style: body.style };
    if (Object.values(v).some((x) => x !== undefined))
      voiceSettings = Object.fromEntries(Object.entries(v).filter(([, x]) => x !== undefined));
  }
  return {
    model,
    kind,
    input: body.input,
    chars,
    units: chars,
    voice,
    format,
    speed: body.speed,
    instructions: o.instructions === true ? body.instructions : undefined,
    voiceSettings,
  };
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
  /** music: the seconds billed */
  seconds?: number;
  /** what is left to spend afterwards, in the paying currency (unknown when nothing was reserved) */
  remainingBalance?: number;
  /** exact amounts, for the job record */
  chargedUnits: bigint;
  costUnits: bigint;
}

/** A bill as JSON answers (and job records) show it: cost, charge, source, and what was billed. */
export function speechBillFields(bill: SpeechBill) {
  return {
    cost: bill.cost,
    amount: bill.amount,
    paymentSource: bill.paymentSource,
    characters: bill.characters,
    ...(bill.seconds !== undefined ? { seconds: bill.seconds } : {}),
  };
}

export interface CollectedSpeech {
  route: Route;
  contentType: string;
  audio: Buffer;
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
  readonly routes: Route[];
  private readonly started = Date.now();

  /**
   * `routes`: a provider name (the X-Provider header) to plan with, or, for a job resumed in a
   * worker, the ids of the routes the API planned (in order).
   */
  constructor(
    private readonly caller: Caller,
    private readonly requestId: string,
    readonly plan: SpeechPlan,
    routes?: string | { routeIds: string[] },
  ) {
    if (caller.billingMode === 'subscription_only') {
      throw new RequestError(
        402,
        'subscription_required',
        'This API key is limited to subscription billing, and no subscription covers this request. Use a pay-as-you-go key.',
      );
    }
    if (typeof routes === 'object') {
      const ids = routes.routeIds;
      this.routes = plan.model.routes
        .filter((r) => ids.includes(r.id))
        .sort((a, b) => ids.indexOf(a.id) - ids.indexOf(b.id));
    } else {
      this.routes = planRoute(catalog(), plan.model, caller, routes ? { explicit: routes } : {}, {
        tools: false,
        images: false,
        structuredOutput: false,
        caching: false,
      });
    }
  }

  costOn(route: Route): bigint {
    return ceilDiv(BigInt(this.plan.units) * route.price.input, billingUnit(this.plan.model).per);
  }

  /** the reservation (if anything was reserved) */
  get reservation(): string | undefined {
    return this.holdId;
  }

  /** A worker resuming a job takes over the reservation the API made. */
  adoptReservation(holdId: string | undefined): void {
    this.holdId = holdId;
  }

  /** the dearest price this request may end up costing, in nano-USD */
  worstCost(): bigint {
    return this.routes.reduce((m, r) => (this.costOn(r) > m ? this.costOn(r) : m), 0n);
  }

  /** Hold the price of the input on the dearest route it may end up on (`ttlSeconds`: for jobs that outlive a request). */
  async reserve(opts: { ttlSeconds?: number } = {}): Promise<Hold | undefined> {
    const worst = this.worstCost();
    if (worst === 0n) return undefined;
    try {
      const hold = await reserve({
        accountId: this.caller.accountId,
        usd: worst,
        idempotencyKey: `hold:${this.requestId}`,
        requestId: this.requestId,
        apiKeyId: this.caller.keyId,
        ttlSeconds: opts.ttlSeconds,
      });
      this.holdId = hold.id;
      return hold;
    } catch (err) {
      if (err instanceof InsufficientFunds) {
        throw new RequestError(
          402,
          'insufficient_balance',
          `Insufficient balance: this request costs $${formatAmount(err.requiredUsd, 'USD')} and $${formatAmount(err.availableUsd, 'USD')} is available. Add funds, or send shorter input.`,
          {
            details: {
              requiredBalance: toDisplayNumber(err.requiredUsd, 'USD'),
              availableBalance: toDisplayNumber(err.availableUsd, 'USD'),
            },
          },
        );
      }
      throw err;
    }
  }

  /** Calls the routes in order until one delivers its first audio chunk. Throws RequestError when none does. */
  async open(signal: AbortSignal): Promise<OpenedSpeech> {
    const failures: RequestError[] = [];
    for (const route of this.routes) {
      const req: SpeechRequest = {
        model: route.upstreamModel,
        input: this.plan.input,
        voice: upstreamVoice(route, this.plan.voice),
        format: this.plan.format,
        speed: this.plan.speed,
        instructions: this.plan.instructions,
        kind: this.plan.kind,
        durationSeconds: this.plan.durationSeconds,
        voiceSettings: this.plan.voiceSettings,
      };
      try {
        const out = await speechAdapterFor(route).synthesize(req, targetFor(route), signal);
        const rest = out.audio[Symbol.asyncIterator]();
        const first = await rest.next();
        if (first.done)
          throw upstreamError(`${route.provider.id} returned no audio`, 502, true, {
            code: 'empty_response',
            providerId: route.provider.id,
          });
        this.route = route;
        return { route, contentType: out.contentType, format: this.plan.format, first: first.value, rest };
      } catch (err) {
        const e =
          err instanceof RequestError
            ? err
            : upstreamError(`${route.provider.id} failed unexpectedly`, 502, false, {
                code: 'provider_error',
                providerId: route.provider.id,
              });
        if (!(err instanceof RequestError))
          console.error(`[speech] adapter for ${route.provider.id} failed unexpectedly:`, err);
        failures.push(e);
        if (!e.retryable || signal.aborted) break;
      }
    }
    const last = failures[failures.length - 1];
    if (!last)
      throw new RequestError(
        503,
        'model_not_available',
        `Model '${this.plan.model.id}' has no configured provider here.`,
        { retryable: false },
      );
    const retryable = failures.every((f) => f.retryable);
    if (failures.length === 1) {
      const status = last.status === 400 && last.code === 'unsupported_format' ? 400 : callerStatus(last.status);
      const code =
        (last.code !== UPSTREAM_ERROR ? last.code : undefined) ??
        (status === 400 ? 'upstream_rejected_request' : status === 429 ? 'rate_limit_exceeded' : 'upstream_error');
      throw new RequestError(status, code, last.message, {
        retryable: retryable,
        retryAfterSeconds: last.opts.retryAfterSeconds,
      });
    }
    throw new RequestError(
      502,
      'all_fallbacks_failed',
      `Every provider failed: ${failures.map((f) => f.message).join('; ')}`,
      { retryable: retryable },
    );
  }

  /**
   * The whole audio in one buffer (non-streaming answers, hosted files, jobs). Throws a
   * SpeechFailure when no route answered or the audio broke off; nothing has been charged then,
   * and the caller decides whether to fail() the call (release) or let a retry have it.
   */
  async collect(signal: AbortSignal): Promise<CollectedSpeech> {
    const opened = await this.open(signal);
    const parts = [opened.first];
    try {
      for (let r = await opened.rest.next(); !r.done; r = await opened.rest.next()) parts.push(r.value);
    } catch (err) {
      const e = err as { message?: string };
      throw new RequestError(
        502,
        'upstream_error',
        `${opened.route.provider.id} broke off the audio: ${e.message ?? 'error'}. Nothing was charged; retry the request.`,
        { retryable: !signal.aborted },
      );
    }
    return { route: opened.route, contentType: opened.contentType, audio: Buffer.concat(parts) };
  }

  /** Charge the billed units on the route that answered. Idempotent per reservation (a retried job settles once). */
  async settle(): Promise<SpeechBill> {
    const route = this.route!;
    const cost = this.costOn(route);
    let s: Settlement | undefined;
    if (this.holdId)
      s = await settle({
        holdId: this.holdId,
        usd: cost,
        reason: `${this.plan.kind} ${this.plan.model.id} via ${route.provider.id}`,
      });
    const currency = s?.currency ?? 'USD';
    const charged = s?.charged ?? 0n;
    recordRequest({
      id: this.requestId,
      accountId: this.caller.accountId,
      apiKeyId: this.caller.keyId,
      surface: this.plan.kind,
      model: this.plan.model.id,
      providerId: route.provider.id,
      status: 'completed',
      inputTokens: this.plan.chars,
      outputTokens: 0,
      currency,
      cost: charged,
      holdId: this.holdId ?? null,
      errorCode: null,
      startedAt: new Date(this.started),
    });
    return {
      amount: toDisplayNumber(charged, currency),
      currency,
      cost: toDisplayNumber(cost, 'USD'),
      paymentSource: currency,
      characters: this.plan.chars,
      ...(this.plan.kind === 'music' ? { seconds: this.plan.units } : {}),
      ...(s ? { remainingBalance: toDisplayNumber(s.available, currency) } : {}),
      chargedUnits: charged,
      costUnits: cost,
    };
  }

  /**
   * `attempt`'s result; if it fails, nothing reached the caller: the reservation is released (with
   * the failure's code, or `code`) and the error thrown on.
   */
  async orRelease<T>(attempt: Promise<T>, code?: string): Promise<T> {
    try {
      return await attempt;
    } catch (err) {
      await this.fail(code ?? (err as { code?: string }).code ?? 'error');
      throw err;
    }
  }

  /** No audio reached the caller: give the hold back. */
  async fail(code: string): Promise<void> {
    if (this.holdId) await release(this.holdId);
    recordRequest({
      id: this.requestId,
      accountId: this.caller.accountId,
      apiKeyId: this.caller.keyId,
      surface: this.plan.kind,
      model: this.plan.model.id,
      providerId: this.route?.provider.id ?? null,
      status: 'failed',
      inputTokens: null,
      outputTokens: null,
      currency: null,
      cost: null,
      holdId: this.holdId ?? null,
      errorCode: code,
      startedAt: new Date(this.started),
    });
  }
}
