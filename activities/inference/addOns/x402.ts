// Accountless x402 payment (on the surfaces that offer it): once every other add-on has checked the
// request, it is priced as it would be reserved (the dearest route's worst case, with the
// redaction fee) and answered with a quote, or runs on the payment it brings (activities/x402/admit.ts). A paid request that fails stays paid,
// to be completed again; one answered uses the payment up. Memory and web search are not covered.
import { RequestError } from '../../core/errors.js';
import { REDACTION_FEE_NANO_USD } from '../../redaction/policy.js';
import { admitX402, finishPaid, unclaimPaid } from '../../x402/admit.js';
import { planCall } from '../prepare.js';
import type { TextRun } from '../textRun.js';
import type { AddOn } from './addOn.js';
import { webParam } from './webSearch.js';

/** The most the request can cost, as a reservation would hold it. */
function worstCase(run: TextRun): bigint {
  const { ex, input } = run;
  const plan = planCall({
    caller: ex.caller,
    requestId: ex.requestId,
    surface: run.codec.surface,
    model: run.model,
    request: input.request,
    needs: input.needs,
    prefs: input.prefs,
  });
  return plan.metered.worstCase() + (run.redact ? REDACTION_FEE_NANO_USD : 0n);
}

export const x402: AddOn<true> = {
  name: 'x402',
  at: 'translated',
  check(run) {
    if (!run.ex.x402) return undefined;
    if (run.name.memory)
      throw new RequestError(400, 'invalid_parameter_value', 'x402 payments do not cover the :memory suffix.', {
        param: 'model',
      });
    if (run.web)
      throw new RequestError(400, 'invalid_parameter_value', 'x402 payments do not cover web search.', {
        param: webParam(run.web.source),
      });
    // a quote keeps the body, not the headers: a redaction header would be lost at completion
    // (the ':redaction' suffix is part of the body, so it is quoted with the fee and applied)
    if (run.redact && !run.name.redaction)
      throw new RequestError(
        400,
        'invalid_parameter_value',
        "x402 payments do not carry the 'redaction' header to the paid request. Ask for PII redaction with the model suffix ':redaction' instead, or leave the header out.",
        { param: 'redaction' },
      );
    // the last check: quoted (402), or the payment taken and claimed for this run
    return admitX402(run.ex, run.codec.surface, run.body, () => worstCase(run)).then((paid) => {
      run.paid = paid;
      return true as const;
    });
  },
  async abandon(run) {
    if (run.paid) await unclaimPaid(run.paid);
  },
  async deliver(run) {
    if (run.paid) await finishPaid(run.paid);
  },
};
