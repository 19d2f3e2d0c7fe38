// The built-in speech adapter: no key, no download. Each request runs eSpeak NG (WebAssembly)
// and the encoder in a worker thread (speechWorker.mjs), at most LOCAL_SPEECH_CONCURRENCY
// (default 2) at once; audio pieces stream back as they are encoded. Formats: mp3, wav, pcm
// (s16le mono at the route's `sample_rate`, default 24 kHz, OpenAI's pcm rate); the surface
// refuses the others before we get here.
import { Worker } from 'node:worker_threads';
import type { SpeechAdapter, SpeechFormat } from '../types.js';
import { FORMAT_CONTENT_TYPES } from '../types.js';
import { upstreamError } from '../../core/errors.js';

const LOCAL_SPEECH_FORMATS: SpeechFormat[] = ['mp3', 'wav', 'pcm'];

const limit = Math.max(1, Number(process.env.LOCAL_SPEECH_CONCURRENCY) || 2);
let running = 0;
const waiting: Array<() => void> = [];

async function slot(): Promise<() => void> {
  if (running >= limit) await new Promise<void>((r) => waiting.push(r));
  running++;
  let freed = false;
  return () => {
    if (freed) return;
    freed = true;
    running--;
    waiting.shift()?.();
  };
}

const fail = (message: string, status = 500, code = 'provider_error') =>
  upstreamError(message, status, false, { code, providerId: 'local' });

/**
 * How long the engine may go without posting audio before it is taken for hung and stopped
 * (LOCAL_SPEECH_STALL_SECONDS, default 120; the longest input's first piece takes about 10 s
 * here). An HTTP provider's silence is bounded the same way (providers/http.ts); a hung engine
 * would otherwise hold its slot, and a job's attempt, until the job's own 15-minute limit.
 */
const stallSeconds = () => Number(process.env.LOCAL_SPEECH_STALL_SECONDS) || 120;

type Msg = { chunk?: Uint8Array; done?: true; error?: string };

/** Runs one synthesis; yields the audio pieces as the worker posts them. */
async function* synthesizeInWorker(
  job: { text: string; voice: string; speed: number; format: SpeechFormat; sampleRate: number; kbps: number },
  signal: AbortSignal,
): AsyncGenerator<Buffer> {
  const free = await slot();
  const worker = new Worker(new URL('./speechWorker.mjs', import.meta.url), { workerData: job });
  const queue: Msg[] = [];
  let wake: (() => void) | undefined;
  const push = (m: Msg) => {
    queue.push(m);
    wake?.();
  };
  worker.on('message', push);
  worker.on('error', (err) => push({ error: err.message }));
  worker.on('exit', (code) => push(code === 0 ? { done: true } : { error: `worker exited with ${code}` }));
  const onAbort = () => push({ error: 'aborted' });
  signal.addEventListener('abort', onAbort, { once: true });
  const stall = stallSeconds();
  try {
    for (;;) {
      if (queue.length === 0) {
        let timer: NodeJS.Timeout | undefined;
        const stalled = await new Promise<boolean>((r) => {
          wake = () => r(false);
          timer = setTimeout(() => r(true), stall * 1000);
        });
        clearTimeout(timer);
        if (stalled)
          throw upstreamError(`the local speech engine produced no audio for ${stall} s`, 504, true, {
            code: 'upstream_timeout',
            providerId: 'local',
          });
      }
      wake = undefined;
      const m = queue.shift()!;
      if (signal.aborted) throw fail('request to local was aborted', 499, 'aborted');
      if (m.error) throw fail(`local speech engine failed: ${m.error}`);
      if (m.done) return;
      if (m.chunk) yield Buffer.from(m.chunk.buffer, m.chunk.byteOffset, m.chunk.byteLength);
    }
  } finally {
    signal.removeEventListener('abort', onAbort);
    void worker.terminate();
    free();
  }
}

export const localSpeech: SpeechAdapter = {
  async synthesize(req, target, signal) {
    if (!LOCAL_SPEECH_FORMATS.includes(req.format))
      throw fail(`the local speech engine cannot produce ${req.format}`, 400, 'unsupported_format');
    const job = {
      text: req.input,
      voice: req.voice,
      speed: req.speed ?? 1,
      format: req.format,
      sampleRate: Number(target.options.sample_rate ?? 24000),
      kbps: Number(target.options.mp3_kbps ?? 64),
    };
    return { contentType: FORMAT_CONTENT_TYPES[req.format], audio: synthesizeInWorker(job, signal) };
  },
};
