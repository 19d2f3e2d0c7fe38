// How long a piece of audio plays, read from the file itself, for the formats whose length is in
// their structure: WAV (the data chunk's size over the byte rate) and MP3 (the frames counted,
// each with its own bitrate and sample rate, so variable-bitrate files come out right). Anything
// else, or a file these readers cannot make sense of, is `undefined`: the caller decides.

/** Seconds of audio in `data`, or undefined when its format is not one read here. */
export function audioSeconds(data: Buffer): number | undefined {
  if (data.length >= 12 && data.toString('latin1', 0, 4) === 'RIFF' && data.toString('latin1', 8, 12) === 'WAVE')
    return wavSeconds(data);
  return mp3Seconds(data);
}

function wavSeconds(data: Buffer): number | undefined {
  let byteRate = 0;
  for (let at = 12; at + 8 <= data.length; ) {
    const id = data.toString('latin1', at, at + 4);
    const size = data.readUInt32LE(at + 4);
    const body = at + 8;
    if (id === 'fmt ' && size >= 16 && body + 16 <= data.length) byteRate = data.readUInt32LE(body + 8);
    if (id === 'data') {
      if (!byteRate) return undefined;
      // a streamed WAV writes 0 or 0xFFFFFFFF as the size: what is there is the audio
      const bytes = size === 0 || body + size > data.length ? data.length - body : size;
      return bytes / byteRate;
    }
    at = body + size + (size % 2);
  }
  return undefined;
}

// MPEG audio frame headers: bitrates (kbit/s) by version and layer, sample rates by version.
const BITRATES: Record<string, number[]> = {
  '1-1': [0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448],
  '1-2': [0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384],
  '1-3': [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320],
  '2-1': [0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256],
  '2-2': [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
  '2-3': [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
};
const SAMPLE_RATES: Record<number, number[]> = {
  1: [44100, 48000, 32000],
  2: [22050, 24000, 16000],
  25: [11025, 12000, 8000],
};

function mp3Seconds(data: Buffer): number | undefined {
  let at = 0;
  // an ID3v2 tag first: its size is four 7-bit bytes
  if (data.length >= 10 && data.toString('latin1', 0, 3) === 'ID3')
    at = 10 + ((data[6]! << 21) | (data[7]! << 14) | (data[8]! << 7) | data[9]!);
  let seconds = 0;
  let frames = 0;
  while (at + 4 <= data.length) {
    const h = data.readUInt32BE(at);
    if (h >>> 21 !== 0x7ff) break; // not a frame: the end of the audio (or a trailing tag)
    const versionBits = (h >>> 19) & 3;
    const layerBits = (h >>> 17) & 3;
    const bitrateIndex = (h >>> 12) & 15;
    const rateIndex = (h >>> 10) & 3;
    const padding = (h >>> 9) & 1;
    if (versionBits === 1 || layerBits === 0 || bitrateIndex === 0 || bitrateIndex === 15 || rateIndex === 3) break;
    const version = versionBits === 3 ? 1 : versionBits === 2 ? 2 : 25;
    const layer = 4 - layerBits;
    const kbps = BITRATES[`${version === 1 ? 1 : 2}-${layer}`]![bitrateIndex]!;
    const rate = SAMPLE_RATES[version]![rateIndex]!;
    const samples = layer === 1 ? 384 : layer === 3 && version !== 1 ? 576 : 1152;
    const length =
      layer === 1
        ? (Math.floor((12 * kbps * 1000) / rate) + padding) * 4
        : Math.floor(((samples / 8) * kbps * 1000) / rate) + padding;
    if (length <= 4) break;
    seconds += samples / rate;
    frames++;
    at += length;
  }
  return frames > 0 ? seconds : undefined;
}
