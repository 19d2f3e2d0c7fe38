// Pass-through for callers of the message-style surface: their Messages API body goes to Anthropic
// as they wrote it (cache_control, thinking blocks with signatures, citations, beta fields all
// survive), and Anthropic's answer and stream frames come back as they are. The gateway changes
// only what it owns: the upstream model name, `max_tokens` (the reservation's cap), `stream`,
// and reasoning decided by model-name suffixes or `output_config.effort`. Usage is still read from
// the frames (MessageStreamDecoder), because billing needs it.
import type { InferenceRequest, InferenceResult, NativeRequest, StreamEvent } from '../../core/types.js';
import { readJson } from '../http.js';
import type { NativePassThrough, ProviderTarget } from '../types.js';
import type { MessagesPlan } from './request.js';
import { fromMessage } from './response.js';
import { MessageStreamDecoder, plainTextDeltaFrame, readFrames } from './stream.js';
import { samplingFor, thinkingFor } from './thinking.js';
import { abortAware, post } from './transport.js';
import { discard, drainForReuse } from '../http.js';
import { upstreamError } from '../../core/errors.js';

/** Nothing is hidden or rewritten in a passed-through answer. */
const PLAN: MessagesPlan = { body: {}, hideReasoning: false };

/** Frames after which the caller has content: until one arrives, a failure may still fall back. */
const CONTENT_FRAMES = new Set(['content_block_start', 'content_block_delta', 'message_delta', 'message_stop']);

/** The caller's body as it goes upstream. */
function upstreamBody(native: NativeRequest, req: InferenceRequest, stream: boolean): Record<string, unknown> {
  // output_config: its `format` never comes here (see accepts) and its `effort` is folded into `thinking` below
  const { output_config: _effort, stream: _stream, thinking, ...rest } = native.body;
  const body: Record<string, unknown> = { ...rest, model: req.model, max_tokens: req.maxTokens };
  if (stream) body.stream = true;
  if (!req.reasoning) return body; // a model that does not reason gets no thinking (as translated)
  if (thinking !== undefined) return { ...body, thinking };
  // thinking asked for by a suffix (":thinking", ":reasoning-effort/high") or an effort: as translated
  const forced = (body.tool_choice as { type?: string } | undefined)?.type;
  const added = forced === 'tool' || forced === 'any' ? undefined : thinkingFor(req);
  if (!added) return body;
  // sampling Anthropic rejects alongside thinking is left out, as on the translated path
  const { temperature: _t, top_p: _p, top_k: _k, ...unsampled } = body;
  return {
    ...unsampled,
    ...samplingFor({ ...req, sampling: { temperature: body.temperature as number, topP: body.top_p as number } }, true),
    thinking: added,
  };
}

export const anthropicPassThrough: NativePassThrough = {
  format: 'anthropic-messages',

  // Hidden reasoning (":reasoning-exclude") and JSON output (carried on a tool) need translation.
  accepts: (req) => !req.reasoning?.exclude && req.responseFormat === undefined && req.prompt === undefined,

  async complete(
    native: NativeRequest,
    req: InferenceRequest,
    target: ProviderTarget,
    signal: AbortSignal,
  ): Promise<InferenceResult> {
    const res = await post(target, '/v1/messages', upstreamBody(native, req, false), signal);
    const msg = await readJson(target.providerId, res).catch((err) => {
      throw abortAware(target, signal, err);
    });
    if (msg?.type !== 'message' || !Array.isArray(msg.content)) {
      throw upstreamError(`${target.providerId} sent an answer that is not a message`, 502, true, {
        code: 'upstream_bad_response',
        providerId: target.providerId,
        upstreamBody: JSON.stringify(msg).slice(0, 2000),
      });
    }
    return { ...fromMessage(msg, PLAN), native: msg };
  },

  async *stream(
    native: NativeRequest,
    req: InferenceRequest,
    target: ProviderTarget,
    signal: AbortSignal,
  ): AsyncGenerator<StreamEvent> {
    const res = await post(target, '/v1/messages', upstreamBody(native, req, true), signal);
    const chunks = res.body.iterator({ destroyOnReturn: false });
    const decoder = new MessageStreamDecoder(PLAN, target.providerId);
    // message_start and pings are held until content arrives (see NativePassThrough)
    let held: StreamEvent[] | undefined = [];
    let complete = false;
    try {
      for await (const frame of readFrames(chunks, target.providerId, signal)) {
        // past the first content, text deltas are relayed and billed without parsing them
        const text = held ? undefined : plainTextDeltaFrame(frame);
        if (text !== undefined) {
          yield { type: 'native', event: frame.event, data: frame.data, text };
          continue;
        }
        const derived = decoder.push(frame);
        const events: StreamEvent[] = [
          { type: 'native', event: frame.event, data: frame.data, json: decoder.last },
          ...derived,
        ];
        if (held && !CONTENT_FRAMES.has(frame.event ?? '')) {
          held.push(...events);
          continue;
        }
        if (held) {
          events.unshift(...held);
          held = undefined;
        }
        for (const e of events) yield e;
        if (decoder.done) {
          complete = true;
          return;
        }
      }
      throw decoder.cut();
    } finally {
      if (complete) drainForReuse(res);
      else discard(res);
    }
  },
};
