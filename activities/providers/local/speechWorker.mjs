// The built-in speech engine's worker thread (plain JavaScript, so it runs without a TypeScript
// loader). eSpeak NG compiled to WebAssembly (npm `espeak-ng`) writes a 16-bit WAV into its
// in-memory file system; we mix it to mono, resample it linearly to the requested rate, and
// encode it: wav, raw pcm (s16le) or mp3 (pure-JS LAME, npm `@breezystack/lamejs`). The audio
// is posted in pieces as it is encoded ({chunk}), then {done}; a failure is {error}.
// Synthesis and encoding are CPU work of up to seconds: off the event loop, here.
import { parentPort, workerData } from 'node:worker_threads';
import ESpeakNg from 'espeak-ng';
import { Mp3Encoder } from '@breezystack/lamejs';

const WORDS_PER_MINUTE = 175;
const BLOCK = 1152 * 32; // samples per posted piece (~1.5 s at 24 kHz)

async function synthesize(text, voice, speed) {
  const wpm = Math.round(Math.min(450, Math.max(80, WORDS_PER_MINUTE * speed)));
  const logs = [];
  let m;
  try {
    m = await ESpeakNg({
      arguments: ['-w', '/out.wav', '-v', voice, '-s', String(wpm), '-f', '/in.txt'],
      preRun: [(mod) => mod.FS.writeFile('/in.txt', text)],
      print: () => undefined,
      printErr: (s) => logs.push(s),
    });
  } catch (err) {
    throw new Error(`${err?.message ?? err}${logs.length ? ` (${logs.join('; ')})` : ''}`);
  }
  let wav;
  try {
    wav = m.FS.readFile('/out.wav');
  } catch {
    throw new Error(`espeak-ng wrote no audio${logs.length ? ` (${logs.join('; ')})` : ''}`);
  }
  return parseWav(Buffer.from(wav.buffer, wav.byteOffset, wav.byteLength));
}

function parseWav(buf) {
  if (buf.length < 44 || buf.toString('ascii', 0, 4) !== 'RIFF' || buf.toString('ascii', 8, 12) !== 'WAVE')
    throw new Error('espeak-ng produced no WAV');
  let off = 12;
  let sampleRate = 22050;
  let channels = 1;
  while (off + 8 <= buf.length) {
    const id = buf.toString('ascii', off, off + 4);
    let size = buf.readUInt32LE(off + 4);
    const body = off + 8;
    if (id === 'fmt ') {
      channels = buf.readUInt16LE(body + 2);
      sampleRate = buf.readUInt32LE(body + 4);
    } else if (id === 'data') {
      if (size > buf.length - body) size = buf.length - body; // a header written before the length was known
      const frames = Math.floor(size / 2 / channels);
      const samples = new Int16Array(frames);
      for (let i = 0; i < frames; i++) {
        let sum = 0;
        for (let c = 0; c < channels; c++) sum += buf.readInt16LE(body + (i * channels + c) * 2);
        samples[i] = Math.round(sum / channels);
      }
      return { sampleRate, samples };
    }
    off = body + size + (size & 1);
  }
  throw new Error('espeak-ng produced a WAV without data');
}

function resample(pcm, rate) {
  if (pcm.sampleRate === rate || pcm.samples.length === 0) return { sampleRate: rate, samples: pcm.samples };
  const ratio = pcm.sampleRate / rate;
  const n = Math.floor(pcm.samples.length / ratio);
  const out = new Int16Array(n);
  for (let i = 0; i < n; i++) {
    const x = i * ratio;
    const j = Math.floor(x);
    const a = pcm.samples[j];
    const b = pcm.samples[Math.min(j + 1, pcm.samples.length - 1)];
    out[i] = Math.round(a + (b - a) * (x - j));
  }
  return { sampleRate: rate, samples: out };
}

function wavHeader(sampleRate, dataBytes) {
  const h = Buffer.alloc(44);
  h.write('RIFF', 0, 'ascii');
  h.writeUInt32LE(36 + dataBytes, 4);
  h.write('WAVE', 8, 'ascii');
  h.write('fmt ', 12, 'ascii');
  h.writeUInt32LE(16, 16);
  h.writeUInt16LE(1, 20); // PCM
  h.writeUInt16LE(1, 22); // mono
  h.writeUInt32LE(sampleRate, 24);
  h.writeUInt32LE(sampleRate * 2, 28);
  h.writeUInt16LE(2, 32);
  h.writeUInt16LE(16, 34);
  h.write('data', 36, 'ascii');
  h.writeUInt32LE(dataBytes, 40);
  return h;
}

const post = (u8) => {
  if (u8.length) parentPort.postMessage({ chunk: Buffer.from(u8.buffer, u8.byteOffset, u8.byteLength) });
};

async function run({ text, voice, speed, format, sampleRate, kbps }) {
  const pcm = resample(await synthesize(text, voice, speed), sampleRate);
  const s = pcm.samples;
  if (format === 'mp3') {
    const enc = new Mp3Encoder(1, pcm.sampleRate, kbps);
    for (let i = 0; i < s.length; i += BLOCK) post(enc.encodeBuffer(s.subarray(i, i + BLOCK)));
    post(enc.flush());
  } else if (format === 'wav' || format === 'pcm') {
    if (format === 'wav') post(wavHeader(pcm.sampleRate, s.byteLength));
    for (let i = 0; i < s.length; i += BLOCK)
      post(new Uint8Array(s.buffer, s.byteOffset + i * 2, Math.min(BLOCK, s.length - i) * 2));
  } else {
    throw new Error(`cannot produce ${format}`);
  }
}

run(workerData).then(
  () => parentPort.postMessage({ done: true }),
  (err) => parentPort.postMessage({ error: String(err?.message ?? err) }),
);
