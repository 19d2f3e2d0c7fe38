// biome-ignore-all lint/suspicious/noExplicitAny: request bodies are arbitrary JSON
// A loopback fal queue server for tests, speaking fal's queue protocol (see
// activities/providers/fal/queue.ts): POST {model path} → {request_id, response_url, status_url,
// cancel_url}; GET {owner}/{app}/requests/{id}/status (IN_QUEUE with queue_position, IN_PROGRESS
// with logs, COMPLETED with metrics, or `error`/`error_type` when the run failed); GET
// .../requests/{id} (the output, or the run's error body: {detail, error_type} for runner
// failures, {detail:[{loc,msg,type,url}]} for model errors such as content_policy_violation);
// PUT .../requests/{id}/cancel (202 CANCELLATION_REQUESTED, 400 ALREADY_COMPLETED). Keys are
// checked as `Authorization: Key <key>`. Finished videos are served as small MP4 files
// (a valid ftyp/mdat box structure) under /files/.
// Each submitted job follows the next script in line (or the default): queue for N polls,
// progress for N polls, then complete, fail, refuse as NSFW, flag NSFW, or hang until cancelled.
// Image models answer `{images:[{url, content_type, width, height}], seed, has_nsfw_concepts}`;
// models named in `syncModels` answer their output on the POST itself, as fal's run host does.
// A submit can be answered late, or accepted and its answer lost (the connection dropped), as
// when a network or a worker fails between fal accepting a job and the caller reading its id.
import http from 'node:http';
import { createHash } from 'node:crypto';
import { solidPng } from '../png.js';
import { listenOnLoopback, closeServer } from './loopback.js';

/** The PNG served as output image `i` of job `id` (its colour follows both). */
export const falImage = (id: string, i: number) => solidPng(16, 16, [(id.length * 7) % 256, i * 50, 200]);

interface FalScript {
  /** status polls answered IN_QUEUE (default 1) */
  queuePolls?: number;
  /** status polls answered IN_PROGRESS after that (default 1), with "NN%" runner logs */
  progressPolls?: number;
  /** how the run ends (default completed) */
  outcome?: 'completed' | 'failed' | 'failed_label' | 'nsfw' | 'nsfw_flag' | 'hang';
  /** answer the submit with this status and an error body, this many times before accepting */
  submitErrors?: Array<{ status: number; detail?: unknown }>;
  /** output videos (default 1; more are answered as `videos: [...]`) */
  videos?: number;
  /** `duration` reported on each output video (seconds); absent when undefined */
  duration?: number;
  /** stay IN_PROGRESS until `release(requestId)` is called */
  gate?: boolean;
  /** accept the submit (the job exists and runs) but answer it only after this long */
  submitDelayMs?: number;
  /** accept the submit, then drop the connection without answering (the caller never learns the id) */
  loseSubmitResponse?: boolean;
  /** serve the job's output files this much later (a slow download) */
  fileDelayMs?: number;
  /** an image model's job: this many output images (`{images:[{url,...}]}`, PNGs under /files/) */
  images?: number;
  /** `has_nsfw_concepts`, one flag per output image */
  nsfwFlags?: boolean[];
}

interface FalJob {
  id: string;
  model: string;
  input: any;
  script: FalScript;
  polls: number;
  cancelled: boolean;
  released: boolean;
  resultFetches: number;
}

export interface FalUpstream {
  url: string;
  apiKey: string;
  jobs: FalJob[];
  /** every request, in order */
  requests: Array<{ method: string; path: string; auth: string | undefined; body: any }>;
  script(...scripts: FalScript[]): void;
  /** the default when no script is queued */
  setDefault(s: FalScript): void;
  release(requestId: string): void;
  /** the bytes served for output `i` of job `id` */
  fileBytes(id: string, i: number): Buffer;
  close(): Promise<void>;
}

/** A small MP4: ftyp + free + mdat boxes, content derived from the job id (so tests can compare). */
function mp4(id: string, i: number): Buffer {
  const box = (type: string, payload: Buffer) => {
    const head = Buffer.alloc(8);
    head.writeUInt32BE(8 + payload.length, 0);
    head.write(type, 4, 'latin1');
    return Buffer.concat([head, payload]);
  };
  const ftyp = box(
    'ftyp',
    Buffer.concat([
      Buffer.from('isom', 'latin1'),
      Buffer.from([0, 0, 2, 0]),
      Buffer.from('isomiso2avc1mp41', 'latin1'),
    ]),
  );
  const seed = createHash('sha256').update(`${id}/${i}`).digest();
  const data = Buffer.alloc(4096);
  for (let k = 0; k < data.length; k++) data[k] = seed[k % seed.length] ^ (k & 0xff);
  return Buffer.concat([ftyp, box('free', Buffer.alloc(0)), box('mdat', data)]);
}

export async function startFalUpstream(
  apiKey = 'fal-loopback-key',
  opts: { syncModels?: string[] } = {},
): Promise<FalUpstream> {
  const jobs: FalJob[] = [];
  const requests: FalUpstream['requests'] = [];
  const queue: FalScript[] = [];
  let fallback: FalScript = {};
  let n = 0;
  const refusals = new WeakMap<FalScript, number>();
  let base = '';

  const server = http.createServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://x');
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      let body: any = null;
      try {
        body = raw ? JSON.parse(raw) : null;
      } catch {
        // left null
      }
      requests.push({ method: req.method ?? '', path: u.pathname, auth: req.headers.authorization, body });
      const json = (status: number, payload: unknown, headers: Record<string, string> = {}) => {
        res.writeHead(status, { 'content-type': 'application/json', ...headers });
        res.end(JSON.stringify(payload));
      };

      const png = /^\/files\/([^/]+)\/(\d+)\.png$/.exec(u.pathname);
      if (png && req.method === 'GET') {
        const bytes = falImage(png[1], Number(png[2]));
        res.writeHead(200, { 'content-type': 'image/png', 'content-length': String(bytes.length) });
        res.end(bytes);
        return;
      }
      const imageOutput = (job: FalJob) => {
        const count = job.script.images ?? (Number.isInteger(job.input?.num_images) ? job.input.num_images : 1);
        return {
          images: Array.from({ length: count }, (_, i) => ({
            url: `${base}/files/${job.id}/${i}.png`,
            content_type: 'image/png',
            width: 16,
            height: 16,
          })),
          seed: 7,
          has_nsfw_concepts: job.script.nsfwFlags ?? Array(count).fill(false),
          prompt: job.input?.prompt,
        };
      };
      const file = /^\/files\/([^/]+)\/(\d+)\.mp4$/.exec(u.pathname);
      if (file && req.method === 'GET') {
        const bytes = mp4(file[1], Number(file[2]));
        const serve = () => {
          res.writeHead(200, { 'content-type': 'video/mp4', 'content-length': String(bytes.length) });
          res.end(bytes);
        };
        const delay = jobs.find((j) => j.id === file[1])?.script.fileDelayMs;
        if (delay) setTimeout(() => res.destroyed || serve(), delay);
        else serve();
        return;
      }
      if (req.headers.authorization !== `Key ${apiKey}`) {
        return json(401, { detail: 'No user found for Key ID and Secret' });
      }

      const m = /^\/([^/]+\/[^/]+)\/requests\/([^/]+)(\/status|\/cancel)?$/.exec(u.pathname);
      if (!m) {
        if (req.method !== 'POST') return json(405, { detail: 'Method Not Allowed' });
        const model = u.pathname.slice(1);
        if (!body || typeof body !== 'object')
          return json(422, {
            detail: [{ loc: ['body'], msg: 'Input should be a valid dictionary', type: 'dict_type' }],
          });
        // the next script answers its scripted submit errors first, then accepts the job
        const script = queue[0] ?? fallback;
        const errors = script.submitErrors ?? [];
        const k = refusals.get(script) ?? 0;
        if (k < errors.length) {
          refusals.set(script, k + 1);
          const e = errors[k];
          // a final refusal (4xx) ends this job's story: the client will not resubmit it
          if (k + 1 === errors.length && e.status < 500 && e.status !== 429 && queue[0] === script) queue.shift();
          return json(
            e.status,
            { detail: e.detail ?? 'Internal Server Error' },
            e.status >= 500 ? { 'x-fal-retryable': 'true' } : {},
          );
        }
        if (queue[0] === script) queue.shift();
        const id = `req-${++n}-${Date.now().toString(36)}`;
        jobs.push({ id, model, input: body, script, polls: 0, cancelled: false, released: false, resultFetches: 0 });
        if (opts.syncModels?.includes(model)) return json(200, imageOutput(jobs.at(-1)!));
        if (script.loseSubmitResponse) {
          req.socket.destroy();
          return;
        }
        const app = model.split('/').slice(0, 2).join('/');
        const answer = () =>
          json(200, {
            request_id: id,
            response_url: `${base}/${app}/requests/${id}`,
            status_url: `${base}/${app}/requests/${id}/status`,
            cancel_url: `${base}/${app}/requests/${id}/cancel`,
            queue_position: 0,
          });
        if (!script.submitDelayMs) return answer();
        setTimeout(() => res.destroyed || answer(), script.submitDelayMs);
        return;
      }

      const [, app, id, tail] = m;
      const job = jobs.find((j) => j.id === id && j.model.split('/').slice(0, 2).join('/') === app);
      if (!job) return json(404, { detail: `Request ${id} not found` });
      const s = job.script;
      const queued = s.queuePolls ?? 1;
      const progress = s.progressPolls ?? 1;
      const outcome = s.outcome ?? 'completed';
      const running = () => outcome === 'hang' || (s.gate && !job.released) || job.polls <= queued + progress;
      const done = () => !job.cancelled && !running();

      if (tail === '/cancel') {
        if (req.method !== 'PUT') return json(405, { detail: 'Method Not Allowed' });
        if (done()) return json(400, { status: 'ALREADY_COMPLETED' });
        job.cancelled = true;
        return json(202, { status: 'CANCELLATION_REQUESTED' });
      }
      if (tail === '/status') {
        job.polls++;
        if (job.cancelled)
          return json(200, {
            status: 'COMPLETED',
            request_id: id,
            error: 'Request was cancelled',
            error_type: 'client_cancelled',
          });
        if (job.polls <= queued)
          return json(200, {
            status: 'IN_QUEUE',
            request_id: id,
            queue_position: queued - job.polls,
            response_url: `${base}/${app}/requests/${id}`,
          });
        if (running()) {
          const pct = Math.min(95, Math.round(((job.polls - queued) / (progress + 1)) * 100));
          return json(200, {
            status: 'IN_PROGRESS',
            request_id: id,
            logs: [{ message: `Generating video... ${pct}%`, level: 'INFO', timestamp: new Date().toISOString() }],
          });
        }
        if (outcome === 'failed_label') return json(200, { status: 'FAILED', request_id: id });
        if (outcome === 'failed')
          return json(200, {
            status: 'COMPLETED',
            request_id: id,
            error: 'Runner crashed while generating',
            error_type: 'runner_server_error',
            metrics: {},
          });
        return json(200, {
          status: 'COMPLETED',
          request_id: id,
          metrics: { inference_time: 12.5 },
          response_url: `${base}/${app}/requests/${id}`,
        });
      }
      // result
      job.resultFetches++;
      if (job.cancelled) return json(499, { detail: 'Request was cancelled', error_type: 'client_cancelled' });
      if (!done()) return json(400, { detail: 'Request is still in progress' });
      if (outcome === 'failed' || outcome === 'failed_label')
        return json(
          500,
          { detail: 'Runner crashed while generating', error_type: 'runner_server_error' },
          { 'x-fal-error-type': 'runner_server_error' },
        );
      if (outcome === 'nsfw') {
        return json(422, {
          detail: [
            {
              loc: ['body', 'prompt'],
              msg: 'The content could not be processed because it contained material flagged by a content checker.',
              type: 'content_policy_violation',
              url: 'https://docs.fal.ai/errors#content_policy_violation',
            },
          ],
        });
      }
      // an image model's job (image requests carry num_images): images, not a video
      if (s.images !== undefined || job.input?.num_images !== undefined) return json(200, imageOutput(job));
      const count = s.videos ?? 1;
      const videos = Array.from({ length: count }, (_, i) => ({
        url: `${base}/files/${id}/${i}.mp4`,
        content_type: 'video/mp4',
        file_name: `${i}.mp4`,
        file_size: mp4(id, i).length,
        ...(s.duration !== undefined ? { duration: s.duration } : {}),
      }));
      const out: any = count > 1 ? { videos } : { video: videos[0] };
      out.seed = 42;
      if (outcome === 'nsfw_flag') out.has_nsfw_concepts = [true];
      return json(200, out);
    });
  });
  base = (await listenOnLoopback(server)).origin;
  return {
    url: base,
    apiKey,
    jobs,
    requests,
    script: (...s) => queue.push(...s),
    setDefault: (s) => (fallback = s),
    release: (id) => {
      const j = jobs.find((x) => x.id === id);
      if (j) j.released = true;
    },
    fileBytes: mp4,
    close: () => closeServer(server),
  };
}
