// The upstream event-stream parser (activities/providers/sse.ts), alone: a network delivers a
// stream in pieces cut anywhere, so every test here checks that the frames do not depend on where
// the cuts fall: between frames, inside a line, inside "\r\n" or "\n\n", inside a UTF-8 character.
import assert from 'node:assert/strict';
import { parseSse, type SseFrame, sseBatches } from '../../activities/providers/sse.js';

async function* pieces(parts: Array<Uint8Array | string>): AsyncGenerator<Uint8Array | string> {
  for (const p of parts) yield p;
}

/** A frame as the tests write it: `event` only when the stream named one. */
const plain = (f: SseFrame) => (f.event === undefined ? { data: f.data } : { event: f.event, data: f.data });

async function framesOf(parts: Array<Uint8Array | string>): Promise<Array<{ event?: string; data: string }>> {
  const out = [];
  for await (const f of parseSse(pieces(parts))) out.push(plain(f));
  return out;
}

const utf8 = (s: string) => Buffer.from(s);

// Everything a stream may hold, each line ending a different way.
const STREAM =
  ': a comment, then the blank line of an empty frame\n\n' +
  'event: message_start\r\n' +
  'id: 41\r\n' +
  'data: {"text":"Grüße, 東京 🎉"}\r\n\r\n' +
  'data: first line\n' +
  'data:second line, no space\n' +
  'data:  two spaces, one kept\n' +
  ': a comment inside a frame\n\n' +
  'retry: 3000\n' +
  'event: ping\n' +
  'data\n\n' +
  'data: naïve café\r\r' +
  'data: the last frame, with no blank line after it';

const EXPECTED = [
  { event: 'message_start', data: '{"text":"Grüße, 東京 🎉"}' },
  { data: 'first line\nsecond line, no space\n two spaces, one kept' },
  { event: 'ping', data: '' },
  { data: 'naïve café' },
  { data: 'the last frame, with no blank line after it' },
];

describe('the upstream SSE parser', () => {
  it('reads every kind of line: events, ids and retry ignored, comments, multi-line data, CR, LF and CRLF', async () => {
    assert.deepEqual(await framesOf([utf8(STREAM)]), EXPECTED);
  });

  it('gives the same frames wherever the bytes are cut in two', async () => {
    const bytes = utf8(STREAM);
    for (let i = 0; i <= bytes.length; i++) {
      assert.deepEqual(await framesOf([bytes.subarray(0, i), bytes.subarray(i)]), EXPECTED, `cut at byte ${i}`);
    }
  });

  it('gives the same frames wherever the bytes are cut in three, close together', async () => {
    // a short middle piece is the hard case: a lone "\n", one byte of a character, a bare "data:"
    const bytes = utf8(STREAM);
    for (let i = 1; i < bytes.length; i++) {
      for (let j = i + 1; j < Math.min(bytes.length, i + 24); j++) {
        const frames = await framesOf([bytes.subarray(0, i), bytes.subarray(i, j), bytes.subarray(j)]);
        assert.deepEqual(frames, EXPECTED, `cut at bytes ${i} and ${j}`);
      }
    }
  });

  it('gives the same frames one byte at a time', async () => {
    const bytes = utf8(STREAM);
    const single = Array.from(bytes, (_, i) => bytes.subarray(i, i + 1));
    assert.deepEqual(await framesOf(single), EXPECTED);
  });

  it('gives the same frames from text chunks cut anywhere, one character at a time too', async () => {
    for (let i = 0; i <= STREAM.length; i++) {
      assert.deepEqual(await framesOf([STREAM.slice(0, i), STREAM.slice(i)]), EXPECTED, `cut at ${i}`);
    }
    assert.deepEqual(await framesOf([...STREAM]), EXPECTED);
  });

  it('keeps a character whose bytes arrive in different chunks', async () => {
    // 🎉 is 4 bytes, 東 3, ü 2: cut after each of their bytes
    for (const ch of ['🎉', '東', 'ü']) {
      const bytes = utf8(`data: <${ch}>\n\n`);
      const at = bytes.indexOf(utf8(ch));
      for (let k = 1; k < utf8(ch).length; k++) {
        const frames = await framesOf([bytes.subarray(0, at + k), bytes.subarray(at + k)]);
        assert.deepEqual(frames, [{ data: `<${ch}>` }], `${ch} cut after byte ${k}`);
      }
    }
  });

  it('reads "\\r\\n" cut between its two bytes as one line end, not two', async () => {
    assert.deepEqual(await framesOf(['data: a\r', '\ndata: b\r', '\n\r', '\n']), [{ data: 'a\nb' }]);
    // a lone "\r" that is a line end of its own is not held forever: the next chunk settles it
    assert.deepEqual(await framesOf(['data: a\r', 'data: b\r\r']), [{ data: 'a\nb' }]);
  });

  it('ends the last line at the end of the body, whatever ended it', async () => {
    for (const end of ['', '\n', '\r', '\r\n']) {
      assert.deepEqual(
        await framesOf([`data: {"a":1}\ndata: [DONE]${end}`]),
        [{ data: '{"a":1}\n[DONE]' }],
        JSON.stringify(end),
      );
    }
    assert.deepEqual(await framesOf(['event: done']), [{ event: 'done', data: '' }]);
    assert.deepEqual(await framesOf([': only a comment']), []);
    assert.deepEqual(await framesOf([]), []);
  });

  it('batches the frames each chunk completes, and yields nothing for a chunk that completes none', async () => {
    const batches: string[][] = [];
    const body = pieces(['data: 1\n\ndata: 2\n\ndata: 3\n\ndata: 4', '\n', '\n', ': ping\n\ndata: 5\n\n', 'data: 6']);
    for await (const batch of sseBatches(body)) batches.push(batch.map((f) => f.data));
    assert.deepEqual(batches, [['1', '2', '3'], ['4'], ['5'], ['6']]);
  });
});
