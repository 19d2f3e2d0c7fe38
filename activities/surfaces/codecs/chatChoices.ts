// Chat's `n` > 1: n calls, one per choice, each planned, reserved, charged and given back on its
// own (request ids `<id>:1` ... `<id>:n-1` beside the plain one), answered as one completion with n
// choices. Every reservation is made before any call runs, so an account that can pay for fewer
// than n is refused up front; if any call fails the request fails and the calls that did answer
// are given back (the pipeline abandons every prepared call), so a caller is charged for n choices
// or none. Not streamed: interleaving n streams' chunks is left out (the request says so).
// Also how one whole chat answer reads, for the codec (chat.ts) and the choices alike.
import { RequestError } from '../../core/errors.js';
import { completeOnce } from '../../inference/answer.js';
import type { InferenceCall } from '../../inference/execute.js';
import type { TextRun } from '../../inference/codec.js';
import type { ChatPlanInput } from '../chat.js';
import { chatPassThroughBody } from '../chatPassthrough.js';
import { mergeCompletions } from '../chatResponse.js';
import type { ModelInfo } from '../../catalog/catalog.js';
import type { Completed } from '../../inference/answer.js';
import { passedThroughCompletion } from '../chatPassthrough.js';
import { type ChatMeta, toChatCompletion } from '../chatResponse.js';

type Run = TextRun<ChatPlanInput>;

export function chatMeta(run: Run, call: InferenceCall, provider: string, created: number): ChatMeta {
  return {
    id: `chatcmpl-${run.ex.requestId.slice(4)}`,
    created,
    model: run.model.id,
    provider,
    showReasoning: !call.ctx.request.reasoning?.exclude,
    maxToolCalls: run.input.maxToolCalls,
  };
}

/** One whole answer, translated or passed through (used for `n` choices too). */
export function chatCompletionOf(run: Run, call: InferenceCall, done: Completed, created: number) {
  const { result, route, usage, bill } = done;
  const model: ModelInfo = run.model;
  if (result.native)
    return passedThroughCompletion(result.native, usage, bill, { model: model.id, provider: route.provider.id });
  return toChatCompletion(result, usage, bill, chatMeta(run, call, route.provider.id, created));
}

export async function answerChoices(run: TextRun<ChatPlanInput>): Promise<void> {
  const { body, ex } = run;
  if (body.stream)
    throw new RequestError(400, 'invalid_parameter_value', 'n > 1 is answered without streaming: send stream: false.', {
      param: 'n',
    });
  // one search, n answers citing it: not offered yet (the citations are per answer)
  if (run.search || run.input.request.webSearch)
    throw new RequestError(400, 'invalid_parameter_value', 'n > 1 is not combined with web search here: send n: 1.', {
      param: 'n',
    });
  const { n: _n, ...one } = body;
  const calls: InferenceCall[] = [];
  for (let part = 0; part < body.n; part++) calls.push(await run.prepare({ native: chatPassThroughBody(one), part }));
  const created = Math.floor(Date.now() / 1000);
  // every call ends (answered or given back) before the request answers or fails
  const settled = await Promise.allSettled(
    calls.map(async (call) => {
      const done = await completeOnce(ex, call);
      const out = chatCompletionOf(run, call, done, created);
      return { body: out as Record<string, unknown>, usage: done.usage, bill: done.bill };
    }),
  );
  const failed = settled.find((s) => s.status === 'rejected');
  if (failed) throw failed.reason;
  ex.send(mergeCompletions(settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []))));
}
