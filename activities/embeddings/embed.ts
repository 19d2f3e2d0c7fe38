// Embeddings (POST /api/v1/embeddings) as a metered call: check the request against the model's
// catalog options (dimensions, token-array input), plan the routes with the one planner (zero data
// retention first: a ZDR-only caller whose model has no such provider gets the spec's 400
// `zero_data_retention`), reserve the input's worst case, call the first route that answers
// (falling back before anything reached the caller), and settle the input tokens the upstream
// counted at the route's input price. One charge per request, none for a failure.
//
// Model options (catalog): `dimensions` (the model's own vector length), `reducible_dimensions`
// (the caller may ask for fewer), `token_input` (the upstream takes token arrays in its own
// tokenizer, as OpenAI's models do).
import type { Caller } from '../core/caller.js';
import { catalog, type ModelInfo, type Route } from '../catalog/catalog.js';
import { RequestError, upstreamError } from '../core/errors.js';
import { costOfTokens } from '../core/money.js';
import { resolveModel } from '../catalog/resolve.js';
import { type Charge, MeteredCall } from '../metering/meteredCall.js';
import { capability, targetFor } from '../providers/registry.js';
import { planRoute, type ProviderPreferences } from '../routing/planRoute.js';

/** Embeddings need nothing of a route beyond serving the model. */
const NO_NEEDS = { tools: false, images: false, structuredOutput: false, caching: false };

/** The most inputs one request may carry (the spec's limit). */
const MAX_INPUTS = 2048;

interface EmbeddingsProvider {
  order?: string[];
  only?: string[];
  ignore?: string[];
  allow_fallbacks?: boolean;
  /** only providers that retain no data */
  zdr?: boolean;
  data_collection?: 'allow' | 'deny';
}

export interface EmbeddingsBody {
  model: string;
  /** a string, strings, a token array or token arrays (checked by inputsOf) */
  input: unknown;
  encoding_format?: 'float' | 'base64';
  dimensions?: number;
  user?: string;
  provider?: string | EmbeddingsProvider;
}

export interface EmbeddingsPlan {
  model: ModelInfo;
  input: string[] | number[][];
  dimensions?: number;
  user?: string;
  routes: Route[];
  /** the most input tokens this request can be billed for */
  worstTokens: number;
  /** what is billed when an upstream does not count: about 4 bytes of text per token */
  likelyTokens: number;
  /** the caller chose the provider: billed pay-as-you-go, never by a subscription */
  explicit: boolean;
}

const bad = (code: string, message: string, param: string) => new RequestError(400, code, message, { param });

const isToken = (x: unknown) => Number.isInteger(x) && (x as number) >= 0;
const isTokenArray = (x: unknown): x is number[] => Array.isArray(x) && x.length > 0 && x.every(isToken);

/**
 * One list of inputs from a string, a list of strings, one token array, or a list of token
 * arrays; anything else is a 400 that says what `input` may be. Empty texts are refused, as OpenAI
 * refuses them (an empty input has no meaning to embed).
 */
function inputsOf(input: unknown): string[] | number[][] {
  const shapes =
    "'input' must be a non-empty string, a list of non-empty strings, a token array (integers), or a list of token arrays";
  if (typeof input === 'string') {
    if (!input) throw bad('invalid_parameter_value', `${shapes}; it is an empty string.`, 'input');
    return [input];
  }
  if (!Array.isArray(input) || input.length === 0)
    throw bad('invalid_parameter_value', `${shapes}; it is empty.`, 'input');
  if (input.length > MAX_INPUTS)
    throw bad(
      'invalid_parameter_value',
      `'input' has ${input.length} items; at most ${MAX_INPUTS} per request. Split it into several requests.`,
      'input',
    );
  if (input.every(isToken)) return [input as number[]];
  if (input.every((x) => typeof x === 'string')) {
    const empty = input.indexOf('');
    if (empty >= 0) throw bad('invalid_parameter_value', `${shapes}; item ${empty} is an empty string.`, 'input');
    return input as string[];
  }
  if (input.every(isTokenArray)) return input as number[][];
  const i = input.findIndex((x) => typeof x !== 'string' && !isTokenArray(x));
  throw bad('invalid_parameter_value', `${shapes}; item ${i < 0 ? 0 : i} is neither (nor may they mix).`, 'input');
}

/** The model's own vector length (catalog option), when it says. */
const nativeDimensions = (m: ModelInfo) =>
  typeof m.options.dimensions === 'number' ? (m.options.dimensions as number) : undefined;

function checkDimensions(model: ModelInfo, asked: number | undefined): number | undefined {
  if (asked === undefined) return undefined;
  const native = nativeDimensions(model);
  if (model.options.reducible_dimensions !== true) {
    if (asked === native) return undefined; // asking for what it gives anyway changes nothing
    throw bad(
      'invalid_parameter_value',
      `Model '${model.id}' does not support 'dimensions': its vectors always have ${native ?? 'a fixed number of'} dimensions. Remove the parameter, or use a model whose /api/v1/embedding-models entry has supports_dimension_reduction: true.`,
      'dimensions',
    );
  }
  if (native !== undefined && asked > native)
    throw bad(
      'invalid_parameter_value',
      `'dimensions' is ${asked}; model '${model.id}' gives at most ${native}.`,
      'dimensions',
    );
  return asked;
}

/**
 * Zero data retention asked for (the key's or account's ZDR-only setting, `provider.zdr`, or
 * `provider.data_collection: "deny"`) and the model has no provider that retains nothing: the
 * spec's 400 `zero_data_retention`, rather than the generic routing refusals.
 */
function checkZdr(model: ModelInfo, caller: Caller, provider: EmbeddingsProvider | undefined): boolean {
  const why = caller.zdrOnly
    ? "this API key's zero-data-retention-only setting"
    : provider?.zdr
      ? 'provider.zdr'
      : provider?.data_collection === 'deny'
        ? 'provider.data_collection "deny"'
        : undefined;
  if (!why) return false;
  if (!model.routes.some((r) => r.available && r.zeroDataRetention))
    throw bad(
      'zero_data_retention',
      `Zero-data-retention routing is on (${why}), and no provider of '${model.id}' here retains no data. Use a model listed with zero_data_retention: true by GET /api/v1/embedding-models.`,
      'model',
    );
  return true;
}

/** The request against the model, and the routes that may serve it. Every refusal is a 400 before anything is held. */
export function planEmbeddings(body: EmbeddingsBody, caller: Caller, headerProvider?: string): EmbeddingsPlan {
  const { model } = resolveModel(body.model, 'embedding');
  const input = inputsOf(body.input);
  const tokenArrays = typeof input[0] !== 'string';
  if (tokenArrays && model.options.token_input !== true)
    throw bad(
      'invalid_parameter_value',
      `Model '${model.id}' takes text only; token arrays are in another model's tokenizer. Send the text.`,
      'input',
    );
  const dimensions = checkDimensions(model, body.dimensions);
  const provider = typeof body.provider === 'object' ? body.provider : undefined;
  const zdr = checkZdr(model, caller, provider);
  const explicit = typeof body.provider === 'string' ? body.provider : headerProvider;
  const prefs: ProviderPreferences = explicit
    ? { explicit }
    : {
        order: provider?.order,
        only: provider?.only,
        ignore: provider?.ignore,
        allowFallbacks: provider?.allow_fallbacks,
        dataCollection: zdr ? 'deny' : provider?.data_collection,
      };
  const routes = planRoute(catalog(), model, caller, prefs, NO_NEEDS);
  // Worst case per input: a token per UTF-8 byte (no tokenizer makes more) plus the two framing
  // tokens of BERT-style models, and never more than the model takes in one input.
  const cap = model.contextLength ?? Number.MAX_SAFE_INTEGER;
  let worstTokens = 0;
  let likelyTokens = 0;
  for (const x of input) {
    const n = typeof x === 'string' ? Buffer.byteLength(x) : x.length;
    worstTokens += Math.min(typeof x === 'string' ? n + 2 : n, cap);
    likelyTokens += Math.max(1, Math.min(typeof x === 'string' ? Math.ceil(n / 4) : n, cap));
  }
  return { model, input, dimensions, user: body.user, routes, worstTokens, likelyTokens, explicit: !!explicit };
}

export interface Embeddings {
  vectors: number[][];
  /** the input tokens billed */
  tokens: number;
  route: Route;
}

/**
 * One embeddings request as a metered call: the input's worst case on the dearest route is
 * reserved, an attempt is the whole answer (a wrong number or length of vectors is the route's
 * failure, and the next route is tried), the cost is the counted input tokens at the answering
 * route's input price.
 */
export class EmbeddingCall {
  readonly metered: MeteredCall;

  constructor(
    caller: Caller,
    requestId: string,
    readonly plan: EmbeddingsPlan,
  ) {
    this.metered = new MeteredCall({
      caller,
      requestId,
      surface: 'embeddings',
      modelId: plan.model.id,
      routes: plan.routes,
      creditLease: true,
      explicitProvider: plan.explicit,
      worstCase: (route) => costOfTokens(plan.worstTokens, route.price.input),
      shortfall: (required, available) =>
        `this request may cost up to $${required} and $${available} is available. Add funds, or send fewer inputs.`,
    });
  }

  reserve(): Promise<unknown> {
    return this.metered.reserve();
  }

  /** The vectors from the first route that answers. Nothing is charged yet. */
  async embed(signal: AbortSignal): Promise<Embeddings> {
    const { input, dimensions, user } = this.plan;
    const { value, route } = await this.metered.attempt(signal, async (route) => {
      const out = await capability(route, 'embeddings').embed(
        { model: route.upstreamModel, input, dimensions, user },
        targetFor(route),
        signal,
      );
      const want = dimensions ?? nativeDimensions(this.plan.model);
      const got = out.vectors[0]?.length;
      if (out.vectors.length !== input.length || (want !== undefined && got !== want))
        throw upstreamError(
          `${route.provider.id} answered ${out.vectors.length} vectors of ${got} dimensions; expected ${input.length} of ${want}`,
          502,
          true,
          { code: 'upstream_bad_response', providerId: route.provider.id },
        );
      return out;
    });
    return { vectors: value.vectors, tokens: value.promptTokens ?? this.plan.likelyTokens, route };
  }

  /** Charge the input tokens on the route that answered; release the rest of the reservation. */
  settle(e: Embeddings): Promise<Charge> {
    return this.metered.settle(costOfTokens(e.tokens, e.route.price.input), {
      inputUnits: e.tokens,
      outputUnits: 0,
    });
  }

  /** `work`'s result; if it fails, nothing reached the caller: release and rethrow. */
  orRelease<T>(work: Promise<T>): Promise<T> {
    return this.metered.orRelease(work);
  }
}

/** A vector as OpenAI's base64 encoding: its float32 values, little-endian, base64. */
export function toBase64(v: readonly number[]): string {
  const buf = Buffer.allocUnsafe(v.length * 4);
  for (let i = 0; i < v.length; i++) buf.writeFloatLE(v[i], i * 4);
  return buf.toString('base64');
}
