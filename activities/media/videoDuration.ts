// How long a video plays, read from the file itself: MP4 / QuickTime (ISO base media) files keep
// it in the movie header (`moov` → `mvhd`: a timescale and a duration in its units), wherever
// `moov` sits (before the media for streaming, or after it). Anything else, or a file these
// readers cannot make sense of, is `undefined`: the caller decides (the extend check refuses).

/** Seconds of video in `data`, or undefined when it is not an MP4/QuickTime file read here. */
export function videoSeconds(data: Buffer): number | undefined {
  const moov = findBox(data, 0, data.length, 'moov');
  if (!moov) return undefined;
  const mvhd = findBox(data, moov.body, moov.end, 'mvhd');
  if (!mvhd || mvhd.end - mvhd.body < 20) return undefined;
  const version = data[mvhd.body];
  // version 1: 64-bit creation and modification times and duration; version 0: 32-bit
  const at = mvhd.body + 4 + (version === 1 ? 16 : 8);
  if (at + (version === 1 ? 12 : 8) > mvhd.end) return undefined;
  const timescale = data.readUInt32BE(at);
  const duration = version === 1 ? Number(data.readBigUInt64BE(at + 4)) : data.readUInt32BE(at + 4);
  // all ones: "unknown" (a fragmented file's header says so); a zero timescale is no answer
  if (!timescale || duration === 0xffffffff || !Number.isFinite(duration)) return undefined;
  return duration / timescale;
}

/** The first box of `type` among the boxes in [start, end), or undefined. */
function findBox(data: Buffer, start: number, end: number, type: string): { body: number; end: number } | undefined {
  for (let at = start; at + 8 <= end; ) {
    let size = data.readUInt32BE(at);
    let header = 8;
    if (size === 1) {
      if (at + 16 > end) return undefined;
      size = Number(data.readBigUInt64BE(at + 8));
      header = 16;
    } else if (size === 0) {
      size = end - at; // the box runs to the end
    }
    if (size < header || at + size > end) return undefined;
    if (data.toString('latin1', at + 4, at + 8) === type) return { body: at + header, end: at + size };
    at += size;
  }
  return undefined;
}
