// Text to speech and music, the one call behind POST /api/v1/audio/speech, POST /api/tts and the
// `speechJob` workflow's activity: check the request against the model's catalog options, plan
// the routes with the one planner, reserve the price, call the first route that answers (falling
// back before any audio reached the caller), and settle. The same SpeechCall runs in the API
// (synchronous answers) and in a worker (asynchronous jobs, which adopt the API's reservation).
//
// Billing units: category `speech` bills input characters, category `music` the seconds of music
// asked for (ElevenLabs meters music by length). The route price `input` is USD per
// `billing_per` units (model option; default 1M characters for speech, 1 second for music), e.g.
// `billing_per: 60` on a music model = the route price is USD per minute, charged by the second.
// Streaming is billed once the first audio chunk has arrived; a provider that fails before any
// audio costs nothing.
import type { Caller } from '../core/caller.js';
import type { ModelInfo, Route } from '../catalog/catalog.js';
import { catalog } from '../catalog/catalog.js';
import { RequestError, upstreamError } from '../core/errors.js';
import { type Currency, ceilDiv } from '../core/money.js';
import { resolveModel } from '../catalog/resolve.js';
import { type Bill, billOf, MeteredCall } from '../metering/meteredCall.js';
import { capability, targetFor } from '../providers/registry.js';
import type { SpeechFormat, SpeechRequest, VoiceSettings } from '../providers/types.js';
import { planRoute } from '../routing/planRoute.js';

/** Speech needs nothing of a route beyond serving the model. */
const NO_NEEDS = { tools: false, images: false, structuredOutput: false, caching: false };

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

export interface SpeechBill extends Omit<Bill, 'remainingBalance'> {
  /** what is left to spend afterwards, in the paying currency (unknown when nothing was reserved) */
  remainingBalance?: number;
  characters: number;
  /** music: the seconds billed */
  seconds?: number;
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

/**
 * Text to speech (or music) as a metered call: the price of the billed units on the dearest
 * route is reserved, an attempt is the first audio chunk (a provider that fails before any audio
 * falls back and costs nothing), the cost is the units at the answering route's price. The same
 * call runs in the API (synchronous answers) and in a worker (jobs, which adopt the API's hold).
 */
export class SpeechCall {
  readonly metered: MeteredCall;
  readonly routes: Route[];

  /**
   * `routes`: a provider name (the X-Provider header) to plan with, or, for a job resumed in a
   * worker, the ids of the routes the API planned (in order).
   */
  constructor(
    caller: Caller,
    requestId: string,
    readonly plan: SpeechPlan,
    routes?: string | { routeIds: string[] },
    opts: { holdTtlSeconds?: number } = {},
  ) {
    if (typeof routes === 'object') {
      const ids = routes.routeIds;
      this.routes = plan.model.routes
        .filter((r) => ids.includes(r.id))
        .sort((a, b) => ids.indexOf(a.id) - ids.indexOf(b.id));
    } else {
      this.routes = planRoute(catalog(), plan.model, caller, routes ? { explicit: routes } : {}, NO_NEEDS);
    }
    this.metered = new MeteredCall({
      caller,
      requestId,
      surface: plan.kind,
      modelId: plan.model.id,
      routes: this.routes,
      holdTtlSeconds: opts.holdTtlSeconds,
      explicitProvider: typeof routes === 'string',
      worstCase: (route) => this.costOn(route),
      shortfall: (required, available) =>
        `this request costs $${required} and $${available} is available. Add funds, or send shorter input.`,
    });
  }

  costOn(route: Route): bigint {
    return ceilDiv(BigInt(this.plan.units) * route.price.input, billingUnit(this.plan.model).per);
  }

  /** Hold the price of the input on the dearest route it may end up on. */
  reserve(): Promise<{ currency: Currency; amount: bigint; available: bigint } | undefined> {
    return this.metered.reserve();
  }

  /** the reservation (if anything was reserved) */
  get reservation(): string | undefined {
    return this.metered.reservation;
  }

  /** A worker resuming a job takes over the reservation the API made. */
  adoptReservation(holdId: string | undefined | null): void {
    this.metered.adoptReservation(holdId);
  }

  /** A job's audio was made by an earlier attempt, on `route`: what is left is to bill it there. */
  resumeAnswered(route: Route): void {
    this.metered.resumeAnswered(route);
  }

  /** Calls the routes in order until one delivers its first audio chunk. Throws a RequestError when none does. */
  async open(signal: AbortSignal): Promise<OpenedSpeech> {
    const { value } = await this.metered.attempt(signal, async (route) => {
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
      const out = await capability(route, 'speech').synthesize(req, targetFor(route), signal);
      const rest = out.audio[Symbol.asyncIterator]();
      const first = await rest.next();
      if (first.done) {
        throw upstreamError(`${route.provider.id} returned no audio`, 502, true, {
          code: 'empty_response',
          providerId: route.provider.id,
        });
      }
      return { route, contentType: out.contentType, format: this.plan.format, first: first.value, rest };
    });
    return value;
  }

  /**
   * The whole audio in one buffer (non-streaming answers, hosted files, jobs). Throws a
   * RequestError when no route answered or the audio broke off (`retryable`: a later attempt may
   * succeed); nothing has been charged then, and the caller decides whether to fail() the call
   * (release) or let a retry have it.
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
    const cost = this.costOn(this.metered.route!);
    const charge = await this.metered.settle(cost, { inputUnits: this.plan.chars, outputUnits: 0 });
    const { remainingBalance, ...bill } = billOf(charge);
    return {
      ...bill,
      ...(charge.available !== undefined ? { remainingBalance } : {}),
      characters: this.plan.chars,
      ...(this.plan.kind === 'music' ? { seconds: this.plan.units } : {}),
      chargedUnits: charge.charged,
      costUnits: cost,
    };
  }

  /** `work`'s result; if it fails, nothing reached the caller: release and rethrow. */
  orRelease<T>(work: Promise<T>, code?: string): Promise<T> {
    return this.metered.orRelease(work, code);
  }

  /** No audio reached the caller: give the hold back. */
  fail(code: string): Promise<void> {
    return this.metered.fail(code);
  }
}
