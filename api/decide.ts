// One decision request from an API route, whatever its surface (decisions, System One, chat's and
// messages' `questions` format): plan it against the model's family, reserve, score, settle, and
// charge only once the answer has been written out (chargeOnDelivery). The route shapes the answer.
import { clientAbortSignal } from './clientAbort.js';
import { chargeOnDelivery } from './inference.js';
import type { AppContext } from './state.js';
import {
  type Decision,
  DecisionCall,
  type DecisionPlan,
  type DecisionsBody,
  planDecisions,
} from '../activities/decisions/decide.js';
import { type Bill, billOf } from '../activities/metering/meteredCall.js';

export interface Decided {
  plan: DecisionPlan;
  decision: Decision;
  bill: Bill & { inputTokens: number; outputTokens: number };
}

export async function decideOnce(
  ctx: AppContext,
  body: DecisionsBody,
  opts: { bareNames?: boolean; surface?: string } = {},
): Promise<Decided> {
  const plan = planDecisions(body, ctx.state.caller, opts);
  const call = new DecisionCall(ctx.state.caller, ctx.state.requestId, plan, opts.surface);
  await call.reserve();
  const decision = await call.orRelease(call.decide(clientAbortSignal(ctx)));
  const charge = await call.settle(decision);
  chargeOnDelivery(ctx, call.metered);
  return {
    plan,
    decision,
    bill: { ...billOf(charge), inputTokens: decision.inputTokens, outputTokens: decision.outputTokens },
  };
}
