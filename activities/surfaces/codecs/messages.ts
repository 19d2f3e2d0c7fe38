// The message-style API (Anthropic Messages wire format) as a text surface: the body through
// messagesToInternal, a whole answer as a `message` (or the upstream's own, passed through), a
// stream as typed events (or relayed). `anthropic-beta` goes to the upstreams that understand it.
// Mid-stream failures end with what the stream cost, then an `event: error` frame and no
// message_stop, as Anthropic's own do.
import { RequestError } from '../../core/errors.js';
import type { TextCodec } from '../../inference/codec.js';
import type { InferenceCall } from '../../inference/execute.js';
import type { TextRun } from '../../inference/codec.js';
import { isTeeModel } from '../../tee/tee.js';
import { asRequestError, renderError } from '../errors.js';
import { messagesToInternal } from '../messages.js';
import { MessagesRelay, messagesPassThroughBody, passedThroughMessage } from '../messagesPassthrough.js';
import { cutDelta, type Frame, MessageStreamer, type MessageMeta, toMessage } from '../messagesResponse.js';
import { messagesQuestions } from '../questions.js';
import { messagesRequestSchema } from '../schemas/messages.js';

type Run = TextRun<ReturnType<typeof messagesToInternal>>;

function meta(run: Run, call: InferenceCall, provider: string): MessageMeta {
  return {
    id: `msg_${run.ex.requestId.slice(4)}`,
    model: run.model.id,
    provider,
    showReasoning: run.input.showReasoning && !call.ctx.request.reasoning?.exclude,
  };
}

const errorFrame = (err: unknown) => renderError(asRequestError(err), 'message');

export const messagesCodec: TextCodec<ReturnType<typeof messagesToInternal>> = {
  surface: 'messages',
  envelope: 'message',
  schema: messagesRequestSchema,
  redaction: true,
  questions: messagesQuestions,
  translate: messagesToInternal,
  answerOther(run) {
    // the spec: TEE models stream through chat completions only (their signatures are per chat id)
    if (run.body.stream && isTeeModel(run.model))
      throw new RequestError(
        400,
        'invalid_parameter_value',
        `Streaming TEE model '${run.model.id}' through the message-style API is not supported: use POST /v1/chat/completions.`,
        { param: 'stream' },
      );
    return undefined;
  },
  prepareExtra(run) {
    const beta = run.ex.header('anthropic-beta').trim();
    return {
      passHeaders: beta ? { 'anthropic-beta': beta } : undefined,
      native: messagesPassThroughBody(run.body),
    };
  },
  whole(run, call, { result, route, usage, bill }) {
    return result.native
      ? passedThroughMessage(result.native, usage, bill, { model: run.model.id, provider: route.provider.id })
      : toMessage(result, usage, bill, meta(run, call, route.provider.id));
  },
  stream(run, call, sse, route) {
    const streamer = new MessageStreamer(meta(run, call, route.provider.id));
    const send = async (frames: Frame[]) => {
      for (const [event, data] of frames) await sse.data(data, event);
    };
    return {
      start: () => send(streamer.start(call.ctx.promptTokenEstimate)),
      event: (e) => send(streamer.event(e)),
      async empty(err) {
        await send(streamer.abort());
        await sse.data(errorFrame(err), 'error');
      },
      async end({ finish, stopSequence, usage, bill, failure }) {
        if (!failure) return send(streamer.end(finish, usage, bill, stopSequence));
        await send(streamer.cut(usage, bill));
        await sse.data(errorFrame(failure), 'error');
      },
    };
  },
  relay(run, _call, sse) {
    const relay = new MessagesRelay({ model: run.model.id });
    return {
      async event(e) {
        const frame = e.type === 'native' ? relay.frame(e) : null;
        if (frame) await sse.data(frame[1], frame[0]);
      },
      empty: (err) => sse.data(errorFrame(err), 'error'),
      async end({ usage, bill, failure }) {
        if (!failure) {
          for (const [event, data] of relay.end(usage, bill)) await sse.data(data, event);
          return;
        }
        const [event, data] = cutDelta(usage, bill);
        await sse.data(data, event);
        await sse.data(errorFrame(failure), 'error');
      },
    };
  },
};
