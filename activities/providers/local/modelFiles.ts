// Where the built-in local provider looks for model files, in order: LOCAL_MODELS_DIR, the
// project's data folder (where an install downloads them), then ../shared/models beside the
// checkout (the development machines' offline copies). Weights are never fetched at run time.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { config, projectDir } from '../../config.js';
import type { AvailabilityAdapter } from '../types.js';

export function localModelDirs(): string[] {
  const dirs = [path.join(config.dataDir, 'models'), path.resolve(projectDir, '..', 'shared', 'models')];
  const fromEnv = process.env.LOCAL_MODELS_DIR;
  return fromEnv ? [path.resolve(fromEnv), ...dirs] : dirs;
}

/** The absolute path of a model file, or null when it is on none of the search paths. */
export function findLocalModel(file: string): string | null {
  if (path.isAbsolute(file)) return existsSync(file) ? file : null;
  for (const dir of localModelDirs()) {
    const candidate = path.join(dir, file);
    if (existsSync(candidate)) return candidate;
  }
  return null;
}

/**
 * Served from this machine, so nothing is configured: a route is usable once its model file is on
 * disk, or at once for a built-in engine (`builtin: true`, the speech synthesizer: no file).
 */
export const localAvailability: AvailabilityAdapter = {
  provider: () => true,
  route: (r) => r.options.builtin === true || findLocalModel(r.upstreamModel) !== null,
  enabledBy: (r) => `the model file ${r.upstreamModel} (npm run models:fetch)`,
};
