// The `moderation` header's paid input-safety preflight on chat completions: the request's system
// and user text goes to a moderation model (the header's `true` = the default model, or a model
// id) once every answer's worst case is reserved (../pipeline.ts) and before anything is sent, so
// a request the balance cannot answer is a 402 that spends nothing. The preflight is charged
// whatever it finds (the spec's rule; its own ledger entry, apart from the answer's); a flagged
// request is refused with 400 `content_policy_violation`, the answers' reservations released and
// nothing sent. Only an API key may ask for it (`inline_moderation_requires_api_key`): a session
// or an accountless x402 payment has no key to bill a second, separate charge to.
import { RequestError } from '../../core/errors.js';
import type { InferenceRequest } from '../../core/types.js';
import { ModerationCall, moderationModelOf, preflightInputOf } from '../../moderation/moderate.js';
import type { Exchange } from '../exchange.js';
import type { AddOn } from './addOn.js';

/**
 * The preflight runs once, when the first call is sent, so after every call of the request is
 * reserved: a request that cannot be planned or afforded is refused before it is charged, and a
 * flagged one gives its reservations back (the pipeline abandons them). It reads the masked
 * messages, so its upstream sees no more personal data than the answer's.
 */
export const moderation: AddOn<string> = {
  name: 'moderation',
  at: 'model',
  check: (run) => (run.codec.moderation ? moderationWanted(run.ex) : undefined),
  apply(run, modelName) {
    let moderated: Promise<void> | undefined;
    run.preflight = () => {
      moderated ??= moderationPreflight(run.ex, modelName, run.input.request);
      return moderated;
    };
  },
};

/**
 * The moderation model the request's header asks for, undefined for none. Checked before anything
 * else happens to the request (an x402 quote included): a refusal here costs the caller nothing.
 */
export function moderationWanted(ex: Exchange): string | undefined {
  const modelName = moderationModelOf(ex.headers.moderation);
  if (modelName && (ex.x402 || ex.caller.keyId === null))
    throw new RequestError(
      400,
      'inline_moderation_requires_api_key',
      "The 'moderation' preflight is billed to an API key: send the request with 'Authorization: Bearer <key>' (not a session or an x402 payment), or without the header.",
      { param: 'moderation' },
    );
  return modelName;
}

/** Runs the preflight with `modelName` on the request's text; throws `content_policy_violation` when flagged. */
async function moderationPreflight(
  ex: Exchange,
  modelName: string,
  request: Pick<InferenceRequest, 'messages' | 'prompt'>,
): Promise<void> {
  const input = preflightInputOf(request.messages, request.prompt);
  const call = new ModerationCall(ex.caller, ex.requestId, modelName, input, {
    surface: 'moderation_preflight',
    param: 'moderation',
  });
  const { verdicts } = await call.run(ex.signal());
  call.metered.delivered(); // the check was made: charged, whatever becomes of the answer
  const flagged = Object.entries(verdicts[0].categories)
    .filter(([, on]) => on)
    .map(([name]) => name);
  ex.setHeader('X-Moderation', verdicts[0].flagged ? `flagged; categories=${flagged.join(',')}` : 'passed');
  if (verdicts[0].flagged)
    throw new RequestError(
      400,
      'content_policy_violation',
      `The moderation preflight (${call.model.id}) flagged this request${flagged.length ? ` (${flagged.join(', ')})` : ''}; it was not sent and the answer was not charged (the preflight was).`,
      { param: 'messages' },
    );
}
