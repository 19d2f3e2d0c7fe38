// A video's length read from the file itself (activities/media/videoDuration.ts): the MP4 /
// QuickTime movie header wherever `moov` sits, 32- and 64-bit headers, and undefined (never a
// guess) for what is not such a file or is cut short.
import assert from 'node:assert/strict';
import { videoSeconds } from '../../activities/media/videoDuration.js';
import { mp4 } from '../support/mp4.js';

describe('video length from the file', () => {
  it('reads the movie header before or after the media, in both header versions', () => {
    assert.equal(videoSeconds(mp4(30)), 30);
    assert.equal(videoSeconds(mp4(120, { moovLast: true })), 120);
    assert.equal(videoSeconds(mp4(121, { version: 1 })), 121);
    assert.equal(videoSeconds(mp4(7, { version: 1, moovLast: true })), 7);
  });

  it('is undefined for anything else: not an MP4, no movie header, a file cut short', () => {
    assert.equal(videoSeconds(Buffer.from('RIFF....WAVEfmt ')), undefined);
    assert.equal(videoSeconds(Buffer.alloc(0)), undefined);
    const whole = mp4(30);
    // cut inside the movie header: its box claims more bytes than there are
    const moov = whole.indexOf('moov', 0, 'latin1') - 4;
    assert.equal(videoSeconds(whole.subarray(0, moov + 40)), undefined);
    // a file of media only (no moov box)
    assert.equal(videoSeconds(whole.subarray(0, moov)), undefined);
  });
});
