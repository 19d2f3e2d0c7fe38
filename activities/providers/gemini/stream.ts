// `streamGenerateContent?alt=sse` frames as StreamEvents. Every frame is a whole
// GenerateContentResponse holding the NEW parts only; a function call always arrives whole in one
// frame (one tool_call event with its id, name and complete arguments). There is no [DONE]: the
// frame with `finishReason` (or a prompt `blockReason`) is the end, and the latest
// `usageMetadata` is the total (every frame carries the running totals). A body that ends before
// that frame was cut.
//
// Stop sequences are enforced here, not by Gemini (see request.ts): the answer's text runs through
// a StopMatcher, which holds back what could be the start of a stop sequence across frames; at
// the first match the text before it goes out, the finish names the sequence, the usage is the
// running total of the last frame seen, and the generator returns (its caller then closes the
// upstream connection, which stops the generation).
import type { InferenceRequest, StreamEvent } from '../../core/types.js';
import type { SseFrame } from '../sse.js';
import { type Piece, StopMatcher } from '../stops.js';
import { streamFrameError } from './errors.js';
import { finishReason, logprobs, toolCallId, usage } from './response.js';
import type { GeminiErrorBody, GeminiResponse, GeminiUsageMetadata } from './wire.js';
import { upstreamError } from '../../core/errors.js';

/** What the stream said beside its events, for a caller that folds them into one answer. */
export interface GeminiStreamInfo {
  responseId?: string;
}

export async function* geminiStreamEvents(
  frames: AsyncIterable<SseFrame>,
  req: InferenceRequest,
  providerId: string,
  info: GeminiStreamInfo = {},
): AsyncGenerator<StreamEvent> {
  let calls = 0;
  let finish: string | undefined;
  let blocked = false;
  let lastUsage: GeminiUsageMetadata | undefined;
  const showReasoning = !req.reasoning?.exclude;
  const wantLogprobs = !!req.sampling.logprobs;
  const sequences = stopSequences(req);
  const stops = sequences.length ? new StopMatcher(sequences) : null;
  const textEvent = (p: Piece): StreamEvent =>
    wantLogprobs && p.logprobs.length
      ? { type: 'text', text: p.text, logprobs: p.logprobs }
      : { type: 'text', text: p.text };

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
    if (chunk.responseId) info.responseId ??= chunk.responseId;
    if (!chunk.candidates?.length && chunk.promptFeedback?.blockReason) blocked = true;
    const candidate = chunk.candidates?.[0];
    const lp = wantLogprobs ? logprobs(candidate) : undefined;
    for (const part of candidate?.content?.parts ?? []) {
      if (part.functionCall) {
        // text on either side of a call is not one string: what was held back is just text
        if (stops) for (const p of stops.flush()) yield textEvent(p);
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
        } else if (stops) {
          const { release, stopped } = stops.push({ text: part.text, logprobs: lp ?? [] });
          for (const p of release) if (p.text) yield textEvent(p);
          if (stopped !== null) {
            yield { type: 'finish', reason: 'stop', stopSequence: stopped };
            yield* cutUsage(lastUsage);
            return;
          }
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
  if (stops) for (const p of stops.flush()) yield textEvent(p);
  yield { type: 'finish', reason: blocked && !finish ? 'content_filter' : finishReason(finish, calls > 0) };
  const u = usage(lastUsage);
  if (u) yield { type: 'usage', usage: u };
}

/** The request's stop sequences; an empty one can stop nothing (it would end every answer before it began). */
export function stopSequences(req: InferenceRequest): string[] {
  return req.sampling.stop?.filter((s) => s.length > 0) ?? [];
}

/**
 * The usage of an answer the gateway cut at a stop sequence: Gemini's running totals as of the
 * frame that held the stop (tokens it generated past the stop in that frame are its real cost).
 * Totals that do not count the output yet (no `candidatesTokenCount`) are not a bill: no usage
 * then, and the gateway estimates it from the text it passed on.
 */
function* cutUsage(last: GeminiUsageMetadata | undefined): Generator<StreamEvent> {
  if (last?.candidatesTokenCount === undefined) return;
  const u = usage(last);
  if (u) yield { type: 'usage', usage: u };
}
