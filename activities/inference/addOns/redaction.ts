// PII redaction (on the surfaces that offer it: the `redaction` header, a `:redaction` suffix, or
// the key's or account's default): the request is masked before it is sent, once every part of
// the answer is reserved, and refused if masking fails (activities/redaction/); a masked request
// is translated, never passed through, and its answer restored. Its fee is charged with the answer.
import { config } from '../../config.js';
import { RequestError } from '../../core/errors.js';
import { redactRequest } from '../../redaction/mask.js';
import { REDACTION_FEE_NANO_USD, redactionWanted } from '../../redaction/policy.js';
import type { TextRun } from '../textRun.js';
import type { AddOn } from './addOn.js';

export const redaction: AddOn<true> = {
  name: 'redaction',
  at: 'model',
  check(run) {
    const { name, ex } = run;
    if (name.redaction && !run.codec.redaction)
      throw new RequestError(
        400,
        'invalid_parameter_value',
        `The '${name.suffixes.find((s) => /redact/.test(s))}' suffix asks for PII redaction, which this route does not offer (chat completions, completions and responses do). The request was refused rather than sent without it.`,
        { param: 'model' },
      );
    if (!run.codec.redaction) return undefined;
    const wanted = redactionWanted({
      headers: ex.headers,
      suffix: name.redaction === true,
      callerDefault: ex.caller.redaction,
    });
    if (!wanted) return undefined;
    run.redact = true;
    return true;
  },
  async apply(run: TextRun) {
    const { input } = run;
    const masked = await redactRequest(input.request, config.redactionTimeoutMs);
    input.request = masked.request;
    run.redaction = { redactor: masked.redactor, feeUsd: REDACTION_FEE_NANO_USD };
    const { masked: byCategory, credentials } = masked.redactor.counts;
    const count = Object.values(byCategory).reduce((n, c) => n + c, 0);
    run.ex.setHeader('X-Redaction', `applied; pii=${count}; credentials=${credentials}`);
  },
};
