/**
 * Entry point of temporal-dev: how a developer, a new user and the test suite get a Temporal server
 * without installing anything by hand (see cli.ts for the CLI search/install order, server.ts for
 * starting `temporal server start-dev` and registering search attributes).
 */
export { findTemporalCli } from './cli.js';
export {
  startDevServer,
  ensureSearchAttributes,
  type DevServer,
} from './server.js';
