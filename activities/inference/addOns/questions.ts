// The `questions` format (activities/surfaces/questions.ts): a text request asking for it is
// answered by a decision model instead, as the decisions route answers (decideOnce), before the
// model name is even resolved. A decision model offers neither PII redaction nor the moderation
// preflight: a request asking for either (by header, or by its key's or account's redaction
// default) is refused before anything is reserved or sent, rather than answered without it.
// Model suffixes on a decision model are refused by resolveModel (activities/catalog/resolve.ts).
import { RequestError } from '../../core/errors.js';
import { redactionWanted } from '../../redaction/policy.js';
import { decideOnce } from '../decide.js';
import type { TextRun } from '../textRun.js';
import type { AddOn } from './addOn.js';
import { moderationWanted } from './moderation.js';

function refuseAddOns(run: TextRun): void {
  const { codec, ex } = run;
  if (redactionWanted({ headers: ex.headers, suffix: false, callerDefault: ex.caller.redaction }))
    throw new RequestError(
      400,
      'invalid_parameter_value',
      "The questions format is answered by a decision model, which is not offered with PII redaction. Send the request with the header 'redaction: false' (it overrides a key's or account's default) to have it answered unredacted, or leave out the questions format.",
      { param: 'redaction' },
    );
  if (codec.moderation && moderationWanted(ex))
    throw new RequestError(
      400,
      'invalid_parameter_value',
      "The questions format is answered by a decision model, which is not offered with the moderation preflight. Remove the 'moderation' header (or set it to false), or leave out the questions format.",
      { param: 'moderation' },
    );
}

export const questions: AddOn<unknown> = {
  name: 'questions',
  at: 'body',
  check: (run) => run.codec.questions?.find(run.body),
  async answer(run, asked) {
    refuseAddOns(run);
    const { codec, ex, body } = run;
    const format = codec.questions!;
    const decided = await decideOnce(ex, format.decision(body, asked), { surface: codec.surface });
    ex.send(format.render(decided, body, ex.requestId));
  },
};
