// `streamGenerateContent?alt=sse` frames as StreamEvents. Every frame is a whole
// GenerateContentResponse holding the NEW parts only; a function call always arrives whole in one
// frame (one tool_call event with its id, name and complete arguments). There is no [DONE]: the
// frame with `finishReason` (or a prompt `blockReason`) is the end, and the latest
// `usageMetadata` is the total. A body that ends before that frame was cut.
import type { InferenceRequest, StreamEvent } from '../../core/types.js';
import type { SseFrame } from '../sse.js';
import { streamFrameError } from './errors.js';
import { finishReason, logprobs, toolCallId, usage } from './response.js';
import type { GeminiErrorBody, GeminiResponse, GeminiUsageMetadata } from './wire.js';
import { upstreamError } from '../../core/errors.js';

export async function* geminiStreamEvents(
  frames: AsyncIterable<SseFrame>,
  req: InferenceRequest,
  providerId: string,
): AsyncGenerator<StreamEvent> {
  let calls = 0;
  let finish: string | undefined;
  let blocked = false;
  let lastUsage: GeminiUsageMetadata | undefined;
  const showReasoning = !req.reasoning?.exclude;

  for await (const frame of frames) {
    if (!frame.data.trim()) continue;
    let chunk: GeminiResponse & Partial<GeminiErrorBody>;
    try {
      chunk = JSON.parse(frame.data);
    } catch {
      throw upstreamError(`${providerId} sent a stream frame that is not JSON`, 502, true, {
        code: 'upstream_bad_response',
        providerId,
        upstreamBody: frame.data.slice(0, 2000),
      });
    }
    if (chunk.error) throw streamFrameError(providerId, chunk as GeminiErrorBody, frame.data);
    if (chunk.usageMetadata) lastUsage = chunk.usageMetadata;
    if (!chunk.candidates?.length && chunk.promptFeedback?.blockReason) blocked = true;
    const candidate = chunk.candidates?.[0];
    const lp = req.sampling.logprobs ? logprobs(candidate) : undefined;
    for (const part of candidate?.content?.parts ?? []) {
      if (part.functionCall) {
        const index = calls++;
        yield {
          type: 'tool_call',
          index,
          id: toolCallId(part.functionCall, index),
          name: part.functionCall.name,
          argumentsDelta: JSON.stringify(part.functionCall.args ?? {}),
        };
      } else if (typeof part.text === 'string' && part.text) {
        if (part.thought) {
          if (showReasoning) yield { type: 'reasoning', text: part.text };
        } else {
          yield lp ? { type: 'text', text: part.text, logprobs: lp } : { type: 'text', text: part.text };
        }
      }
    }
    if (candidate?.finishReason) finish = candidate.finishReason;
  }

  if (!finish && !blocked) {
    throw upstreamError(`${providerId} stream ended before its final frame`, 502, true, {
      code: 'upstream_stream_cut',
      providerId,
    });
  }
  yield { type: 'finish', reason: blocked && !finish ? 'content_filter' : finishReason(finish, calls > 0) };
  const u = usage(lastUsage);
  if (u) yield { type: 'usage', usage: u };
}
