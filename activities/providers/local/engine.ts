// Loads GGUF models into llama.cpp (node-llama-cpp) once per file and keeps them: one Llama
// runtime per process, one model + one context per file, the context's sequences shared through a
// pool. Concurrent first requests share the same load. Weights are never fetched here: a file that
// is not on disk is an error naming where we looked.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import os from 'node:os';
import type { ChatWrapper, Llama, LlamaContext, LlamaModel } from 'node-llama-cpp';
import { findLocalModel, localModelDirs } from './modelFiles.js';
import { SequencePool } from './pool.js';
import { llamaLib, loadLlamaLib } from './llama.js';
import { upstreamError } from '../../core/errors.js';

export const PROVIDER_ID = 'local';

export interface LocalModel {
  file: string;
  path: string;
  model: LlamaModel;
  context: LlamaContext;
  pool: SequencePool;
  /** tokens one request may hold: prompt + output */
  contextSize: number;
  /** the chat template from the GGUF metadata; null = the model has none and gets plain text */
  chatWrapper: ChatWrapper | null;
  threads: number;
}

export interface LoadOptions {
  /** hex sha256 the file must have (the catalog's route option); checked once per process */
  sha256?: string;
}

function envInt(name: string, fallback: number, min: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be an integer >= ${min}, got "${raw}"`);
  return n;
}

/**
 * Threads per context. Always explicit: llama.cpp's own default oversubscribes small machines.
 * LOCAL_THREADS wins; otherwise the CPU count, at most 4, except for tiny models: below ~64 MB
 * of weights the matrix products take microseconds and ggml's spinning thread barrier costs more
 * than it saves (stories260K on 2 cores: ~1200 tokens/s on one thread, 40-100 on two, and far
 * worse when the machine is busy).
 */
export function threadsFor(fileBytes: number): number {
  const cpus = os.availableParallelism?.() ?? os.cpus().length;
  const fallback = fileBytes < 64 * 1024 * 1024 ? 1 : Math.max(1, Math.min(cpus, 4));
  return envInt('LOCAL_THREADS', fallback, 1);
}

/** Requests one model serves at once (context sequences); more wait in the pool's queue. */
const parallelSequences = (): number => envInt('LOCAL_PARALLEL', 2, 1);

/** Upper bound on each sequence's context; the model's training context caps it further. */
const maxContextSize = (): number => envInt('LOCAL_CONTEXT_SIZE', 4096, 64);

let llamaPromise: Promise<Llama> | undefined;

/**
 * The llama.cpp runtime, loaded once. `build: 'never'`: use the prebuilt binary npm installed (or
 * a local build made earlier), never download or compile llama.cpp at run time.
 */
export function runtime(): Promise<Llama> {
  llamaPromise ??= loadLlamaLib()
    .then(({ getLlama, LlamaLogLevel }) =>
      getLlama({ build: 'never', gpu: 'auto', progressLogs: false, logLevel: LlamaLogLevel.error }),
    )
    .catch((err) => {
      llamaPromise = undefined;
      throw upstreamError(`the local llama.cpp runtime could not start: ${(err as Error).message}`, 503, false, {
        code: 'local_runtime_unavailable',
        providerId: PROVIDER_ID,
      });
    });
  return llamaPromise;
}

const checkedHashes = new Map<string, Promise<void>>();

/** Stream the file through sha256 (chunks, so the event loop keeps turning) and compare. */
export function verifySha256(file: string, filePath: string, expected: string): Promise<void> {
  const key = `${filePath}\0${expected.toLowerCase()}`;
  let p = checkedHashes.get(key);
  if (!p) {
    p = new Promise<string>((resolve, reject) => {
      const hash = createHash('sha256');
      createReadStream(filePath, { highWaterMark: 1 << 20 })
        .on('data', (chunk) => hash.update(chunk))
        .on('error', reject)
        .on('end', () => resolve(hash.digest('hex')));
    }).then((actual) => {
      if (actual !== expected.toLowerCase()) {
        throw upstreamError(
          `local model file ${filePath} does not match its sha256 (expected ${expected}, got ${actual}); download ${file} again`,
          503,
          false,
          {
            code: 'local_model_corrupt',
            providerId: PROVIDER_ID,
          },
        );
      }
    });
    p.catch(() => checkedHashes.delete(key));
    checkedHashes.set(key, p);
  }
  return p;
}

const loaded = new Map<string, Promise<LocalModel>>();

/** The path of a model file, or a 503 that names the searched directories. */
export function modelPath(file: string): string {
  const found = findLocalModel(file);
  if (!found) {
    throw upstreamError(
      `local model file ${file} was not found; looked in ${localModelDirs().join(', ')}`,
      503,
      false,
      {
        code: 'local_model_missing',
        providerId: PROVIDER_ID,
      },
    );
  }
  return found;
}

async function load(file: string, filePath: string): Promise<LocalModel> {
  const llama = await runtime();
  const { size } = await stat(filePath);
  const threads = threadsFor(size);
  let model: LlamaModel;
  try {
    model = await llama.loadModel({ modelPath: filePath });
  } catch (err) {
    throw upstreamError(`local model ${file} could not be loaded: ${(err as Error).message}`, 503, false, {
      code: 'local_model_load_failed',
      providerId: PROVIDER_ID,
    });
  }
  try {
    const sequences = parallelSequences();
    const context = await model.createContext({
      sequences,
      threads,
      contextSize: { max: Math.min(maxContextSize(), model.trainContextSize) },
    });
    const seqs = Array.from({ length: sequences }, () => context.getSequence());
    // Only a template the GGUF itself carries counts: resolveChatWrapper would otherwise guess one
    // from the architecture name (a base Llama would get Llama 2's chat format it never learned).
    const hasTemplate = typeof model.fileInfo.metadata?.tokenizer?.chat_template === 'string';
    const chatWrapper = hasTemplate ? llamaLib().resolveChatWrapper(model, { warningLogs: false }) : null;
    return {
      file,
      path: filePath,
      model,
      context,
      pool: new SequencePool(seqs),
      contextSize: seqs[0].contextSize,
      chatWrapper,
      threads,
    };
  } catch (err) {
    await model.dispose().catch(() => {});
    throw upstreamError(`local model ${file} could not get a context: ${(err as Error).message}`, 503, false, {
      code: 'local_model_load_failed',
      providerId: PROVIDER_ID,
    });
  }
}

/** The loaded model for a file, loading it on first use; every caller of one file shares one load. */
export async function localModel(file: string, opts: LoadOptions = {}): Promise<LocalModel> {
  const filePath = modelPath(file);
  if (opts.sha256) await verifySha256(file, filePath, opts.sha256);
  let p = loaded.get(filePath);
  if (!p) {
    p = load(file, filePath);
    loaded.set(filePath, p);
    p.catch(() => loaded.delete(filePath));
  }
  return p;
}

/** Free every loaded model and the runtime (shutdown, tests). */
export async function closeLocalModels(): Promise<void> {
  const models = [...loaded.values()];
  loaded.clear();
  for (const p of models) {
    const m = await p.catch(() => undefined);
    if (m) {
      m.pool.close();
      await m.context.dispose().catch(() => {});
      await m.model.dispose().catch(() => {});
    }
  }
  const llama = await llamaPromise?.catch(() => undefined);
  llamaPromise = undefined;
  await llama?.dispose().catch(() => {});
}
