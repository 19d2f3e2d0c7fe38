// Stop sequences the gateway enforces itself over streamed text (activities/providers/stops.ts),
// alone: a stop never reaches the caller, not even half of one, wherever the pieces are cut, and
// the text before it is released with its own logprobs.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { type Piece, StopMatcher } from '../../activities/providers/stops.js';

const piece = (text: string): Piece => ({ text, logprobs: [{ token: text, logprob: -0.5 } as never] });

/** Feeds `pieces`; returns the text released and the stop that ended it (null: none, everything flushed). */
function run(stops: string[], pieces: string[]): { text: string; stopped: string | null; released: Piece[] } {
  const m = new StopMatcher(stops);
  const released: Piece[] = [];
  for (const p of pieces) {
    const r = m.push(piece(p));
    released.push(...r.release);
    if (r.stopped !== null) return { text: released.map((x) => x.text).join(''), stopped: r.stopped, released };
  }
  released.push(...m.flush());
  return { text: released.map((x) => x.text).join(''), stopped: null, released };
}

describe('stop sequences over streamed text', () => {
  it('passes every piece straight through when there are no stops', () => {
    const m = new StopMatcher([]);
    assert.deepEqual(m.push(piece('END')), { release: [piece('END')], stopped: null });
  });

  it('ends at a stop inside one piece, releasing the text before it', () =>
    assert.deepEqual(run(['END'], ['Hello END there']).text, 'Hello '));

  it('ends at a stop split across pieces, releasing none of it', () => {
    const r = run(['END'], ['Hello E', 'N', 'D there']);
    assert.equal(r.text, 'Hello ');
    assert.equal(r.stopped, 'END');
  });

  it('holds back text that could start a stop until the next piece settles it', () => {
    const m = new StopMatcher(['END']);
    assert.deepEqual(m.push(piece('Hello E')).release, []);
    const r = m.push(piece('arth'));
    assert.equal(r.stopped, null);
    assert.equal(r.release.map((p) => p.text).join(''), 'Hello Earth');
  });

  it('releases whole pieces with their logprobs while waiting', () => {
    const m = new StopMatcher(['\n\n']);
    const r = m.push(piece('one'));
    assert.deepEqual(r.release, [piece('one')]);
  });

  it('gives what was held back at the end of generation', () =>
    assert.equal(run(['END'], ['Hello E', 'N']).text, 'Hello EN'));

  it('stops at the stop that starts first, whichever is listed first', () => {
    const r = run(['world', 'lo w'], ['Hello world']);
    assert.equal(r.stopped, 'lo w');
    assert.equal(r.text, 'Hel');
  });

  it('cuts a piece that straddles the stop and keeps its logprobs', () => {
    const r = run(['!'], ['Hi', ' there! And more']);
    assert.equal(r.text, 'Hi there');
    assert.deepEqual(r.released[1].logprobs, piece(' there! And more').logprobs);
  });

  it('matches a stop at the very start', () =>
    assert.deepEqual(run(['Q:'], ['Q: what']), { text: '', stopped: 'Q:', released: [] }));

  it('releases the same text wherever the pieces are cut', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: fc.constantFrom('a', 'b', 'S', 'T', 'O', 'P', ' '), maxLength: 30 }),
        fc.array(fc.nat(30), { maxLength: 6 }),
        (text, cuts) => {
          const stop = 'STOP';
          const at = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b);
          const pieces = [0, ...at, text.length].slice(1).map((end, i, ends) => text.slice(i ? ends[i - 1] : 0, end));
          const i = text.indexOf(stop);
          const r = run([stop], pieces.length ? pieces : [text]);
          assert.equal(r.text, i < 0 ? text : text.slice(0, i));
          assert.equal(r.stopped, i < 0 ? null : stop);
        },
      ),
    );
  });
});
