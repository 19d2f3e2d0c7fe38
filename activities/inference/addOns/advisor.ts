// The advisor on chat completions (activities/advisor/advisor.ts says what each mode does): who may
// ask for it and with what, checked before anything is reserved or sent, and its phases run as
// metered calls of their own, one after the other. Every phase is reserved up front (its worst
// case, with room for the text not yet written: the executor's question, the advice), so an
// account that cannot pay for all of them is refused with a 402 before any model runs, and
// concurrent requests cannot overspend. Each phase is charged once, on its own request id (the
// answer's is the plain one, the others `<id>:1`, `<id>:2`) and shown in the answer's `advisor`
// object. A phase that was not needed (auto mode, the executor answered at once) is released. If a
// later phase fails, the request fails and the earlier phases are given back with it (the pipeline):
// a caller is charged for a delivered answer, all its phases, or for nothing, as with chat's `n`,
// `:memory` and web search.
import { RequestError } from '../../core/errors.js';
import type { ModelInfo } from '../../catalog/catalog.js';
import type { ChatPlanInput } from '../../surfaces/chat.js';
import type { InferenceCall } from '../execute.js';
import type { Usage } from '../../core/types.js';
import {
  type AdvisorPlan,
  adviceMaxTokens,
  adviceRoom,
  advisorMessages,
  advisorPlanOf,
  consultTool,
  continuation,
  continuationRoom,
  questionOf,
  questionRoom,
  withAdvice,
} from '../../advisor/advisor.js';
import { subscriptionWouldCover } from '../../ledger/allowance.js';
import { webSearchSettings } from '../../search/settings.js';
import { redactionWanted } from '../../redaction/policy.js';
import { isTeeModel } from '../../tee/tee.js';
import { sumCharges, toChatCompletion, usageJson } from '../../surfaces/chatResponse.js';
import type { Bill } from '../execute.js';
import { type Completed, completeOnce } from '../answer.js';
import type { Exchange } from '../exchange.js';
import type { TextRun } from '../textRun.js';
import type { AddOn } from './addOn.js';

/**
 * The advisor (chat completions' `advisor`): checked before the body is translated (a refused
 * request costs nothing), then it answers the request in phases. The translation reads the body
 * without the field, which the surfaces otherwise refuse.
 */
export const advisor: AddOn<AdvisorPlan> = {
  name: 'advisor',
  at: 'model',
  check(run) {
    if (!run.codec.advisor || !present(run.body.advisor)) return undefined;
    return advisorWanted(run).then((plan) => {
      const { advisor: _, ...rest } = run.body;
      run.body = rest;
      return plan;
    });
  },
  answer: answerWithAdvisor,
};

const refuse = (message: string, param: string, code = 'invalid_parameter_value') =>
  new RequestError(400, code, message, { param });

const present = (v: unknown) => v !== undefined && v !== null;

/**
 * The request's advisor plan (undefined: no `advisor`), or a 400 saying what to change. Runs in the
 * chat surface's translation: before the moderation preflight, memory, search or any reservation,
 * so a refused request costs nothing.
 */
async function advisorWanted(run: TextRun): Promise<AdvisorPlan | undefined> {
  const { ex, body, model, name } = run;
  if (body.stream === true)
    throw refuse(
      "The advisor answers without streaming: send stream: false (or leave out 'advisor' to stream).",
      'stream',
    );
  if (ex.x402 || ex.caller.keyId === null)
    throw refuse(
      "The advisor is offered to API keys only (each phase is billed pay-as-you-go to the key): send the request with 'Authorization: Bearer <key>', not a session or an x402 payment.",
      'advisor',
      'advisor_requires_api_key',
    );
  if ((Array.isArray(body.tools) ? body.tools.length > 0 : present(body.tools)) || present(body.tool_choice))
    throw refuse(
      "'advisor' cannot be combined with client tools: the executor's only tool is the advisor. Remove 'tools' and 'tool_choice', or leave out 'advisor'.",
      present(body.tool_choice) && !present(body.tools) ? 'tool_choice' : 'tools',
    );
  const format = body.response_format?.type;
  if (format === 'json_object' || format === 'json_schema')
    throw refuse(
      `'advisor' cannot be combined with structured output (response_format ${format}). Remove one of them.`,
      'response_format',
    );
  if ((body.n ?? 1) > 1) throw refuse("'advisor' answers one choice: send n: 1, or leave out 'advisor'.", 'n');
  const web = webSearchSettings(name, body);
  if (web)
    throw refuse(
      `'advisor' is not combined with web search (asked for by ${web.source}) here. Remove one of them.`,
      web.source.startsWith('the') ? 'model' : web.source.replace(/'/g, ''),
    );
  const redact = redactionWanted({
    headers: ex.headers,
    suffix: name.redaction === true,
    callerDefault: ex.caller.redaction,
  });
  if (redact)
    throw refuse(
      "'advisor' is not combined with PII redaction here (the advice would carry the conversation's placeholders between two models). Send the request without redaction (header 'redaction: false' overrides a key default), or leave out 'advisor'.",
      'advisor',
    );
  const plan = advisorPlanOf(body.advisor, model);
  if (!plan) return undefined;
  if (isTeeModel(model) || isTeeModel(plan.model))
    throw refuse(
      "'advisor' is not combined with confidential (TEE/) models: the other phase would see the conversation outside the enclave. Leave out 'advisor'.",
      'advisor',
    );
  const images = (body.messages as Array<{ content?: unknown }>).some(
    (m) => Array.isArray(m.content) && m.content.some((p: { type?: string }) => p?.type === 'image_url'),
  );
  if (images && plan.model.capabilities.vision !== true)
    throw refuse(
      `advisor.model '${plan.model.id}' does not accept images, and the conversation has some. Pick an advisor with vision, or send text only.`,
      'advisor.model',
    );
  await refuseSubscriptionBilling(ex, model, plan.model);
  return plan;
}

/** The spec's "pay-as-you-go only": a request a subscription would pay for is refused, never billed to the balance unasked. */
async function refuseSubscriptionBilling(ex: Exchange, executor: ModelInfo, advisor: ModelInfo): Promise<void> {
  const caller = ex.caller;
  if (ex.path.startsWith('/api/subscription/'))
    throw refuse(
      'The advisor is billed pay-as-you-go only, and this is the subscription path: send the request to /api/v1/chat/completions.',
      'advisor',
      'advisor_requires_paygo',
    );
  if (caller.billingMode === 'subscription_only')
    throw refuse(
      'The advisor is billed pay-as-you-go only, and this API key is limited to subscription billing. Use a pay-as-you-go key.',
      'advisor',
      'advisor_requires_paygo',
    );
  if (!ex.forcePaygo && (await subscriptionWouldCover(caller, [executor.id, advisor.id])))
    throw refuse(
      "The advisor is billed pay-as-you-go only, and your subscription covers this request's models. To pay for it from your balance, send the header 'X-Billing-Mode: paygo'.",
      'advisor',
      'advisor_requires_paygo',
    );
}

type Phase = 'executor' | 'advisor';
interface Done {
  phase: Phase;
  call: InferenceCall;
  outcome: Completed;
}

/** Answers a chat request that asked for the advisor (see the top of this file). */
async function answerWithAdvisor(textRun: TextRun, plan: AdvisorPlan): Promise<void> {
  const { ex, model } = textRun;
  const input = textRun.input as ChatPlanInput;
  const prepare = textRun.prepare.bind(textRun);
  const conversation = input.request.messages;
  const executor = (request: ChatPlanInput['request'], needs = input.needs) => ({
    model,
    request,
    needs,
    prefs: input.prefs,
  });
  // the advisor: its own model, default sampling, its own routing (account and key restrictions still bind)
  const advisor = (messages: typeof conversation) => ({
    model: plan.model,
    request: { messages, sampling: {}, maxTokens: adviceMaxTokens(plan.model), user: input.request.user },
    needs: { tools: false, images: input.needs.images, structuredOutput: false, caching: false },
    prefs: {},
  });
  // pay-as-you-go whatever a subscription covers (refused up front when one would: advisorWanted)
  const paygo = { forcePaygo: true };
  const done: Done[] = [];
  const run = async (phase: Phase, call: InferenceCall) => {
    // advice must be text (a model that only reasoned, or only called tools, advised nothing)
    const outcome = await completeOnce(ex, call, (r) => r.content.trim() !== '');
    done.push({ phase, call, outcome });
    return outcome;
  };

  let final: Done['outcome'];
  if (plan.mode === 'required') {
    const asked = await prepare({ ...paygo, part: 1, phase: advisor(advisorMessages(conversation)) });
    const answering = await prepare({
      ...paygo,
      phase: executor({ ...input.request, messages: withAdvice(conversation, plan.model.id, adviceRoom(plan.model)) }),
    });
    const advice = await run('advisor', asked);
    answering.ctx.request.messages = withAdvice(conversation, plan.model.id, advice.result.content);
    final = await run('executor', answering);
  } else {
    const tool = consultTool(plan.model.id);
    const offered = { ...input.request, tools: [tool], toolChoice: 'auto' as const, parallelToolCalls: undefined };
    const needs = { ...input.needs, tools: true };
    const first = await prepare({ ...paygo, phase: executor(offered, needs) });
    const asked = await prepare({
      ...paygo,
      part: 1,
      phase: advisor(advisorMessages(conversation, questionRoom())),
    });
    const cont = await prepare({
      ...paygo,
      part: 2,
      phase: executor({ ...offered, toolChoice: 'none', messages: continuationRoom(conversation, plan.model) }, needs),
    });
    const opening = await completeOnce(ex, first);
    done.push({ phase: 'executor', call: first, outcome: opening });
    const call = opening.result.toolCalls[0];
    if (!call) {
      // answered without advice: the other phases were never needed
      await asked.fail('unused');
      await cont.fail('unused');
      final = opening;
    } else {
      asked.ctx.request.messages = advisorMessages(conversation, questionOf(call));
      const advice = await run('advisor', asked);
      cont.ctx.request.messages = continuation(conversation, opening.result.content, call, advice.result.content);
      final = await run('executor', cont);
    }
  }
  ex.send(advisedCompletion(ex.requestId, model, plan, done, final, !input.request.reasoning?.exclude));
}

function advisedCompletion(
  requestId: string,
  model: ModelInfo,
  plan: AdvisorPlan,
  done: Done[],
  final: Done['outcome'],
  showReasoning: boolean,
) {
  const parts = done.map((d) => ({ usage: d.outcome.usage, bill: d.outcome.bill }));
  const { usage, bill } = sumCharges(parts);
  const answer = toChatCompletion(final.result, usage, bill, {
    id: `chatcmpl-${requestId.slice(4)}`,
    created: Math.floor(Date.now() / 1000),
    model: model.id,
    provider: final.route.provider.id,
    showReasoning,
  }) as Record<string, unknown>;
  answer.advisor = {
    model: plan.model.id,
    mode: plan.mode,
    consulted: done.some((d) => d.phase === 'advisor'),
    phases: done.map((d) => phaseJson(d.phase, d.call, d.outcome.route.provider.id, d.outcome.usage, d.outcome.bill)),
  };
  return answer;
}

function phaseJson(phase: Phase, call: InferenceCall, provider: string, usage: Usage, bill: Bill) {
  return {
    phase,
    model: call.ctx.modelId,
    provider,
    request_id: call.ctx.requestId,
    usage: usageJson(usage),
    cost: bill.cost,
    amount: bill.amount,
    currency: bill.currency,
  };
}
