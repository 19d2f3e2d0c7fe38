// The one handler every text surface answers through (the shape of a generateText/streamText
// engine): prepare the call, then either stream it (the surface's frames, or the upstream's own
// relayed when it speaks the surface's format) or complete it and render the whole answer. The
// surface's codec (codec.ts) says only how things look.
import { completeOnce, streamOnce } from './answer.js';
import type { Translated } from './codec.js';
import type { TextRun } from './textRun.js';

export async function answerText<T extends Translated>(run: TextRun<T>): Promise<void> {
  const { codec, ex } = run;
  const other = codec.answerOther?.(run);
  if (other) return other;
  const call = await run.prepare(codec.prepareExtra?.(run));
  if (run.body.stream && codec.stream)
    return streamOnce(ex, call, (sse, route, passedThrough) =>
      passedThrough && codec.relay ? codec.relay(run, call, sse, route) : codec.stream!(run, call, sse, route),
    );
  const done = await completeOnce(ex, call, codec.answered);
  ex.send(await codec.whole(run, call, done), codec.contentType);
}
