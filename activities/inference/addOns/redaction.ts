// PII redaction (the `redaction` header, a `:redaction` suffix, or the key's or account's default;
// refused where the surface does not offer it): the request is masked first, before memory, web
// search or the preflight read it, as the answer's upstream does, and refused if masking fails
// (activities/redaction/); a masked request is translated, never passed through, and its answer
// restored. Its fee is charged with the answer.
import { config } from '../../config.js';
import { redactRequest } from '../../redaction/mask.js';
import { REDACTION_FEE_NANO_USD, redactionDecision, redactionSuffix } from '../../redaction/policy.js';
import type { TextRun } from '../textRun.js';
import type { AddOn } from './addOn.js';

export const redaction: AddOn<true> = {
  name: 'redaction',
  at: 'model',
  check(run) {
    const { name, ex, codec } = run;
    // applied where the surface offers it, refused (400) where it does not: never ignored
    const decided = redactionDecision(
      codec.redaction === true,
      { headers: ex.headers, suffix: redactionSuffix(name), callerDefault: ex.caller.redaction },
      `this endpoint (${codec.surface})`,
    );
    if (decided !== 'apply') return undefined;
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
