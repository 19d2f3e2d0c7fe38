// A minimal, well-formed MP4 for tests: the boxes a player (and activities/media/videoDuration.ts)
// reads for the length, with a few bytes of media.

/** A minimal MP4 (ftyp, moov with its movie header, mdat) that plays `seconds` long. */
export function mp4(seconds: number, opts: { version?: 0 | 1; moovLast?: boolean } = {}): Buffer {
  const box = (type: string, body: Buffer) => {
    const head = Buffer.alloc(8);
    head.writeUInt32BE(8 + body.length);
    head.write(type, 4, 'latin1');
    return Buffer.concat([head, body]);
  };
  const timescale = 600;
  const v1 = opts.version === 1;
  const mvhd = Buffer.alloc(v1 ? 112 : 100);
  mvhd[0] = v1 ? 1 : 0;
  if (v1) {
    mvhd.writeUInt32BE(timescale, 20);
    mvhd.writeBigUInt64BE(BigInt(seconds * timescale), 24);
    mvhd.writeUInt32BE(0x00010000, 32);
  } else {
    mvhd.writeUInt32BE(timescale, 12);
    mvhd.writeUInt32BE(seconds * timescale, 16);
    mvhd.writeUInt32BE(0x00010000, 20);
  }
  const ftyp = box('ftyp', Buffer.from('isom\0\0\x02\0isomiso2mp41', 'latin1'));
  const moov = box('moov', box('mvhd', mvhd));
  const mdat = box('mdat', Buffer.alloc(256, 7));
  return Buffer.concat(opts.moovLast ? [ftyp, mdat, moov] : [ftyp, moov, mdat]);
}
export const dataUrlOf = (data: Buffer) => `data:video/mp4;base64,${data.toString('base64')}`;
