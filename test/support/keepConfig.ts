// The settings a suite changes, put back when it ends. The snapshot is taken when the suite starts,
// not where it is declared: Mocha loads every file before the root hook (setup.ts) sets the run's
// database URL, so a snapshot taken at load time would put back "no database" for every later suite.
import { type Config, config } from '../../activities/config.js';

/** Call at the top of a `describe`, before hooks that change settings; returns the snapshot (filled once the suite starts). */
export function keepConfig(): Readonly<Config> {
  const saved = {} as Config;
  before(() => {
    Object.assign(saved, config);
  });
  after(() => {
    Object.assign(config, saved);
  });
  return saved;
}
