// Mocha's root hooks and global fixtures for `npm test` and `npm run test:one` (loaded with --require).
// The run (the main process) migrates one template database and bundles the workflows once
// (./workflowBundle.ts); each process that runs test files (the main process when serial, every
// worker when --parallel) copies the template for itself on its first file and keeps that database,
// and its Temporal server, for every later file it runs. In parallel mode the root hooks run around
// each file, so opening is idempotent and only a serial run closes at its end; a worker's Temporal
// server dies with the worker (temporal-dev stops its children on exit) and the run's end drops
// every database the run made, whatever became of the worker that made it.
import { closeTestDatabase, createTemplateDatabase, openTestDatabase, RUN_TAG_ENV, TEMPLATE_ENV } from './lifecycle.js';
import { dropTestDatabases } from './database.js';
import { removeWorkflowBundle, writeWorkflowBundle } from './workflowBundle.js';

const parallelWorker = process.env.MOCHA_WORKER_ID !== undefined;

export async function mochaGlobalSetup(): Promise<void> {
  const tag = String(process.pid);
  process.env[RUN_TAG_ENV] = tag;
  const [template] = await Promise.all([createTemplateDatabase(tag), writeWorkflowBundle(tag)]);
  process.env[TEMPLATE_ENV] = template.name;
}

export async function mochaGlobalTeardown(): Promise<void> {
  const tag = process.env[RUN_TAG_ENV];
  if (tag) await dropTestDatabases(tag);
  await removeWorkflowBundle();
}

export const mochaHooks = {
  async beforeAll(this: Mocha.Context) {
    this.timeout(120_000);
    await openTestDatabase();
  },
  async afterAll(this: Mocha.Context) {
    if (parallelWorker) return;
    this.timeout(60_000);
    await closeTestDatabase();
  },
};
