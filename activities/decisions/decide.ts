// Decisions (POST /api/v1/decisions, /api/v1/systemone, and the `questions` format of chat and
// messages) as a metered call: the questions checked against the model's family and turned into
// scoring rows (questions.ts), the routes planned by the one planner, the input's worst case
// reserved, the rows scored on the first route that answers (falling back before anything reached
// the caller), and the input tokens counted by the engine charged at the route's input price: the
// spec bills decisions by input tokens only. One charge per request, none for a failure.
//
// How the answers are made (the answer's `method` says which):
//   family A models ("logprobs"): each row's option letters scored by the model's next token,
//     softmaxed at the calibration temperature: in-process by llama.cpp (local routes) or from an
//     OpenAI-protocol upstream's `top_logprobs` (the route's protocol's scoring adapter);
//   other decision models ("structured_generation"): one chat call whose JSON answer states the
//     probabilities (generation.ts).
//
// Catalog model options: `decision_family` ("A" or "other", default "other"),
// `restricted_provider` (the direct-hosted families that take only `provider.zdr` and
// `provider.data_collection`; family A always does), `calibration_temperature` (default 1; a route
// option of the same name overrides it for that route).
import type { Caller } from '../core/caller.js';
import { catalog, type ModelInfo, type Route } from '../catalog/catalog.js';
import { RequestError } from '../core/errors.js';
import { costOfTokens } from '../core/money.js';
import { resolveModel } from '../catalog/resolve.js';
import { type Charge, MeteredCall } from '../metering/meteredCall.js';
import { capability, targetFor } from '../providers/registry.js';
import { planRoute, type ProviderPreferences } from '../routing/planRoute.js';
import { answersFromGeneration, generationPrompt, generationRequest } from './generation.js';
import {
  type Answer,
  answersOf,
  type Family,
  LETTERS,
  planQuestions,
  type QuestionPlan,
  type Row,
} from './questions.js';

/** Decisions need nothing of a route beyond serving the model. */
const NO_NEEDS = { tools: false, images: false, structuredOutput: false, caching: false };

interface DecisionsProvider {
  order?: string[];
  only?: string[];
  ignore?: string[];
  allow_fallbacks?: boolean;
  require_parameters?: boolean;
  max_price?: { prompt?: number; completion?: number };
  zdr?: boolean;
  data_collection?: 'allow' | 'deny';
}

export interface DecisionsBody {
  model: string;
  state: unknown;
  questions: Record<string, unknown>;
  user?: string;
  session_id?: string;
  trace?: Record<string, unknown>;
  independent?: boolean;
  provider?: DecisionsProvider | null;
}

type Method = 'logprobs' | 'structured_generation';

export interface DecisionPlan {
  model: ModelInfo;
  family: Family;
  state: unknown;
  questions: QuestionPlan[];
  routes: Route[];
  /** the most input tokens this request can be billed for */
  worstTokens: number;
}

/** Routing fields the direct-hosted families ignore by design: refused rather than silently dropped. */
const RESTRICTED_OUT = ['order', 'only', 'ignore', 'allow_fallbacks', 'require_parameters', 'max_price'] as const;

const familyOf = (m: ModelInfo): Family => (m.options.decision_family === 'A' ? 'A' : 'other');

/**
 * The decision model a name means. `bareNames` (the System One route): an SDK-style name without
 * the vendor prefix (`decider-260k`) also finds the one decision model whose id ends with it.
 */
function decisionModel(name: string, bareNames: boolean): ModelInfo {
  if (bareNames && !name.includes('/') && !catalog().model(name)) {
    const matches = catalog().models.filter(
      (m) => m.category === 'decision' && m.id.toLowerCase().endsWith(`/${name.toLowerCase()}`),
    );
    if (matches.length === 1) return matches[0];
  }
  return resolveModel(name, 'decision').model;
}

function preferences(model: ModelInfo, family: Family, body: DecisionsBody, caller: Caller): ProviderPreferences {
  const p = body.provider ?? undefined;
  const restricted = family === 'A' || model.options.restricted_provider === true;
  if (p && restricted) {
    const field = RESTRICTED_OUT.find((f) => p[f] !== undefined);
    if (field)
      throw new RequestError(
        400,
        'unsupported_provider_options',
        `'provider.${field}' is not available for '${model.id}': its family is hosted directly and takes only 'provider.zdr' and 'provider.data_collection'.`,
        { param: `provider.${field}` },
      );
  }
  const deny = caller.zdrOnly || p?.zdr === true || p?.data_collection === 'deny';
  return {
    order: p?.order,
    only: p?.only,
    ignore: p?.ignore,
    allowFallbacks: p?.allow_fallbacks,
    requireParameters: p?.require_parameters,
    maxPrice: p?.max_price,
    dataCollection: deny ? 'deny' : p?.data_collection,
  };
}

/** A row's whole prompt, ending as the engine's slot needs: at the letter, or asking for it. */
function rowPrompt(row: Row, slot: 'completion' | 'chat'): string {
  const options = row.options.map((o, i) => `(${LETTERS[i]}) ${o}`).join('\n');
  return slot === 'completion'
    ? `${row.body}${options}\nAnswer: (`
    : `${row.body}${options}\nReply with the letter of the one option that fits, and nothing else.`;
}

/** The request against its model's family, and the routes that may serve it. Every refusal is a 4xx before anything is held. */
export function planDecisions(body: DecisionsBody, caller: Caller, opts: { bareNames?: boolean } = {}): DecisionPlan {
  const model = decisionModel(body.model, opts.bareNames === true);
  const family = familyOf(model);
  if (body.independent !== undefined) {
    if (family !== 'A')
      throw new RequestError(
        400,
        'invalid_parameter_value',
        `'independent' applies to family A decision models only; '${model.id}' answers its questions together. Remove the field.`,
        { param: 'independent' },
      );
    if (body.independent !== true)
      throw new RequestError(
        400,
        'invalid_parameter_value',
        `'${model.id}' evaluates every scoring row independently: send 'independent: true' or leave it out.`,
        { param: 'independent' },
      );
  }
  const questions = planQuestions(body.state, body.questions, family);
  const routes = planRoute(catalog(), model, caller, preferences(model, family, body, caller), NO_NEEDS);
  // Worst case: a token per UTF-8 byte of every prompt (no tokenizer makes more) plus its framing
  // (a chat template's tokens around a turn; for a structured generation, the schema too).
  let worstTokens = 0;
  if (family === 'A')
    for (const q of questions) for (const row of q.rows) worstTokens += Buffer.byteLength(rowPrompt(row, 'chat')) + 16;
  else {
    const { system, user } = generationPrompt(body.state, questions);
    const schema = JSON.stringify(generationRequest('', body.state, questions).responseFormat);
    worstTokens = Buffer.byteLength(system) + Buffer.byteLength(user) + Buffer.byteLength(schema) + 32;
  }
  return { model, family, state: body.state, questions, routes, worstTokens };
}

export interface Decision {
  answers: Record<string, Answer>;
  method: Method;
  inputTokens: number;
  outputTokens: number;
  route: Route;
}

/** The calibration temperature of a route: its own option, else the model's, else 1. */
function temperatureOf(model: ModelInfo, route: Route): number {
  const t = route.options.calibration_temperature ?? model.options.calibration_temperature;
  return typeof t === 'number' && t > 0 ? t : 1;
}

/** One decision request as a metered call. */
export class DecisionCall {
  readonly metered: MeteredCall;

  constructor(
    caller: Caller,
    requestId: string,
    readonly plan: DecisionPlan,
    surface = 'decisions',
  ) {
    this.metered = new MeteredCall({
      caller,
      requestId,
      surface,
      modelId: plan.model.id,
      routes: plan.routes,
      creditLease: true,
      worstCase: (route) => costOfTokens(plan.worstTokens, route.price.input),
      shortfall: (required, available) =>
        `these questions may cost up to $${required} and $${available} is available. Add funds, or ask fewer questions.`,
    });
  }

  reserve(): Promise<unknown> {
    return this.metered.reserve();
  }

  /** The answers from the first route that answers. Nothing is charged yet. */
  async decide(signal: AbortSignal): Promise<Decision> {
    const { model, family, questions, state } = this.plan;
    const { value, route } = await this.metered.attempt(signal, async (route) => {
      const target = targetFor(route);
      if (family === 'A') {
        const scoring = capability(route, 'scoring');
        const rows = questions.flatMap((q) =>
          q.rows.map((row) => ({
            prompt: rowPrompt(row, scoring.slot),
            letters: [...LETTERS.slice(0, row.options.length)],
          })),
        );
        const out = await scoring.score({ model: route.upstreamModel, rows }, target, signal);
        return {
          answers: answersOf(questions, out.scores, temperatureOf(model, route)),
          method: 'logprobs' as Method,
          inputTokens: out.inputTokens,
          outputTokens: out.outputTokens,
        };
      }
      const out = await capability(route, 'chat').complete(
        generationRequest(route.upstreamModel, state, questions),
        target,
        signal,
      );
      const { user, system } = generationPrompt(state, questions);
      return {
        answers: answersFromGeneration(route.provider.id, out.content, questions),
        method: 'structured_generation' as Method,
        // an upstream that does not count: a token per 4 bytes of prompt, per 4 bytes of answer
        inputTokens: out.usage?.promptTokens ?? Math.ceil((Buffer.byteLength(system) + Buffer.byteLength(user)) / 4),
        outputTokens: out.usage?.completionTokens ?? Math.ceil(Buffer.byteLength(out.content) / 4),
      };
    });
    return { ...value, route };
  }

  /** Charge the input tokens on the route that answered (decisions bill input only); release the rest. */
  settle(d: Decision): Promise<Charge> {
    return this.metered.settle(costOfTokens(d.inputTokens, d.route.price.input), {
      inputUnits: d.inputTokens,
      outputUnits: d.outputTokens,
    });
  }

  /** `work`'s result; if it fails, nothing reached the caller: release and rethrow. */
  orRelease<T>(work: Promise<T>): Promise<T> {
    return this.metered.orRelease(work);
  }
}
