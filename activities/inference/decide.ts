// One decision request from an API route, whatever its surface (decisions, System One, chat's and
// messages' `questions` format): plan it against the model's family, reserve, score, settle, and
// charge only once the answer has been written out (Exchange.chargeOnDelivery). The caller shapes the answer.
import type { Exchange } from './exchange.js';
import {
  type Decision,
  DecisionCall,
  type DecisionPlan,
  type DecisionsBody,
  planDecisions,
} from '../decisions/decide.js';
import { type Bill, billOf } from '../metering/meteredCall.js';

export interface Decided {
  plan: DecisionPlan;
  decision: Decision;
  bill: Bill & { inputTokens: number; outputTokens: number };
}

export async function decideOnce(
  ex: Exchange,
  body: DecisionsBody,
  opts: { bareNames?: boolean; surface?: string } = {},
): Promise<Decided> {
  const plan = planDecisions(body, ex.caller, opts);
  const call = new DecisionCall(ex.caller, ex.requestId, plan, opts.surface);
  await call.reserve();
  const decision = await call.orRelease(call.decide(ex.signal()));
  const charge = await call.settle(decision);
  ex.chargeOnDelivery(call.metered);
  return {
    plan,
    decision,
    bill: { ...billOf(charge), inputTokens: decision.inputTokens, outputTokens: decision.outputTokens },
  };
}
