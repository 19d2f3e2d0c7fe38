// The one text handler (activities/inference/handler.ts) with a fake call: a whole answer is
// rendered by the surface's codec and sent once; an empty one is refused and not charged; a
// surface's other way of answering (chat's `n`, a background response) takes over; a stream goes
// through the codec's frames, or its relay when the upstream spoke the surface's format.
import assert from 'node:assert/strict';
import type { RequestError } from '../../activities/core/errors.js';
import type { StreamSurface } from '../../activities/inference/answer.js';
import { answerText } from '../../activities/inference/handler.js';
import { codec, fakeCall, result, textRun } from './fakes.js';

describe('the text handler (unit)', () => {
  it('completes, settles, and sends what the codec renders, in its media type', async () => {
    const { call, seen } = fakeCall(result({ content: 'hello' }));
    const c = codec({ whole: (_run, _call, done) => `said: ${done.result.content}`, contentType: 'text/plain' });
    const { run, ex } = textRun({ codec: c });
    run.prepare = async () => call;
    await answerText(run);
    assert.deepEqual(seen, ['settle']);
    assert.deepEqual(ex.sent, [{ body: 'said: hello', type: 'text/plain' }]);
  });

  it('an answer the surface cannot show is refused as empty, and the call released', async () => {
    const { call, seen } = fakeCall(result({ content: '', reasoning: 'thinking only' }));
    const c = codec({ answered: (r) => !!r.content });
    const { run, ex } = textRun({ codec: c });
    run.prepare = async () => call;
    await assert.rejects(answerText(run), (err: RequestError) => err.code === 'empty_response' && err.status === 502);
    assert.deepEqual(seen, ['fail:empty_response']);
    assert.equal(ex.sent.length, 0);
  });

  it("the surface's own way of answering takes over before anything is prepared", async () => {
    let prepared = 0;
    const c = codec({ answerOther: (run) => (run.body.n > 1 ? Promise.resolve(run.ex.send('choices')) : undefined) });
    const { run, ex } = textRun({ codec: c, body: { model: 'm', n: 2 } });
    run.prepare = async () => {
      prepared++;
      return fakeCall(result()).call;
    };
    await answerText(run);
    assert.equal(prepared, 0);
    assert.deepEqual(ex.sent, [{ body: 'choices', type: undefined }]);
  });

  it('passes the codec what prepare is to be told', async () => {
    const { call } = fakeCall(result());
    let told: unknown;
    const c = codec({ prepareExtra: () => ({ holdTtlSeconds: 60 }) });
    const { run } = textRun({ codec: c });
    run.prepare = async (extra) => {
      told = extra;
      return call;
    };
    await answerText(run);
    assert.deepEqual(told, { holdTtlSeconds: 60 });
  });

  it('a surface without streams answers a `stream: true` body whole (talk-to-gpt)', async () => {
    const { call } = fakeCall(result());
    const { run, ex } = textRun({ codec: codec({ whole: () => 'whole' }), body: { model: 'm', stream: true } });
    run.prepare = async () => call;
    await answerText(run);
    assert.equal(ex.sent[0].body, 'whole');
  });

  it("streams through the codec's frames and settles what was produced", async () => {
    const events = [
      { type: 'text', text: 'hel' },
      { type: 'text', text: 'lo' },
      { type: 'finish', reason: 'stop' },
    ];
    const { call, seen } = fakeCall(result());
    const streamCall = Object.assign(call, {
      openStream: async () => ({
        route: { provider: { id: 'openai' } },
        passedThrough: false,
        first: events[0],
        rest: (async function* () {
          yield* events.slice(1);
        })(),
      }),
    });
    const written: string[] = [];
    const surface = (): StreamSurface => ({
      event: (e) => {
        if (e.type === 'text') written.push(e.text);
        return undefined;
      },
      empty: () => undefined,
      end: async ({ finish }) => {
        written.push(`end:${finish}`);
      },
    });
    const { run, ex } = textRun({ codec: codec({ stream: surface }), body: { model: 'm', stream: true } });
    run.prepare = async () => streamCall;
    await answerText(run);
    assert.deepEqual(written, ['hel', 'lo', 'end:stop']);
    assert.deepEqual(seen, ['settle']);
    assert.equal(ex.sink.ended, true);
  });
});
