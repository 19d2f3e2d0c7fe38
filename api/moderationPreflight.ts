// The `moderation` header's paid input-safety preflight on chat completions: the request's system
// and user text goes to a moderation model (the header's `true` = the default model, or a model
// id) once every answer's worst case is reserved (api/textRoute.ts) and before anything is sent, so
// a request the balance cannot answer is a 402 that spends nothing. The preflight is charged
// whatever it finds (the spec's rule; its own ledger entry, apart from the answer's); a flagged
// request is refused with 400 `content_policy_violation`, the answers' reservations released and
// nothing sent. Only an API key may ask for it (`inline_moderation_requires_api_key`): a session
// or an accountless x402 payment has no key to bill a second, separate charge to.
import { RequestError } from '../activities/core/errors.js';
import type { InferenceRequest } from '../activities/core/types.js';
import { ModerationCall, moderationModelOf, preflightInputOf } from '../activities/moderation/moderate.js';
import { clientAbortSignal } from './clientAbort.js';
import type { AppContext } from './state.js';

/**
 * The moderation model the request's header asks for, undefined for none. Checked before anything
 * else happens to the request (an x402 quote included): a refusal here costs the caller nothing.
 */
export function moderationWanted(ctx: AppContext): string | undefined {
  const modelName = moderationModelOf(ctx.headers.moderation);
  if (modelName && (ctx.state.x402 || ctx.state.caller.keyId === null))
    throw new RequestError(
      400,
      'inline_moderation_requires_api_key',
      "The 'moderation' preflight is billed to an API key: send the request with 'Authorization: Bearer <key>' (not a session or an x402 payment), or without the header.",
      { param: 'moderation' },
    );
  return modelName;
}

/** Runs the preflight with `modelName` on the request's text; throws `content_policy_violation` when flagged. */
export async function moderationPreflight(
  ctx: AppContext,
  modelName: string,
  request: Pick<InferenceRequest, 'messages' | 'prompt'>,
): Promise<void> {
  const input = preflightInputOf(request.messages, request.prompt);
  const call = new ModerationCall(ctx.state.caller, ctx.state.requestId, modelName, input, {
    surface: 'moderation_preflight',
    param: 'moderation',
  });
  const { verdicts } = await call.run(clientAbortSignal(ctx));
  call.metered.delivered(); // the check was made: charged, whatever becomes of the answer
  const flagged = Object.entries(verdicts[0].categories)
    .filter(([, on]) => on)
    .map(([name]) => name);
  ctx.set('X-Moderation', verdicts[0].flagged ? `flagged; categories=${flagged.join(',')}` : 'passed');
  if (verdicts[0].flagged)
    throw new RequestError(
      400,
      'content_policy_violation',
      `The moderation preflight (${call.model.id}) flagged this request${flagged.length ? ` (${flagged.join(', ')})` : ''}; it was not sent and the answer was not charged (the preflight was).`,
      { param: 'messages' },
    );
}
