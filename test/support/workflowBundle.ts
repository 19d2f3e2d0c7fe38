// The project's workflows bundled once per test run (webpack, a few seconds of CPU) instead of once
// per worker: the run's global setup writes the bundle to a file and names it in the environment;
// every worker the tests start in this process or in processes of their own loads it from there.
import { readFileSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { workflowsPath } from '../../bin/worker.js';

const ENV = 'SWITCHYARD_TEST_WORKFLOW_BUNDLE';

/** Bundles the workflows into a file for this run (`tag` names it) and names it in the environment. */
export async function writeWorkflowBundle(tag: string): Promise<void> {
  const { code } = await bundleWorkflowCode({ workflowsPath: workflowsPath(), logger: new DefaultLogger('WARN') });
  const file = path.join(tmpdir(), `switchyard-test-${tag}-workflows.js`);
  await writeFile(file, code);
  process.env[ENV] = file;
}

export async function removeWorkflowBundle(): Promise<void> {
  const file = process.env[ENV];
  if (file) await rm(file, { force: true });
}

/** The run's bundle, or undefined when there is none (a runner without the global setup): bundle as usual. */
export function workflowBundle(): { code: string } | undefined {
  const file = process.env[ENV];
  return file ? { code: readFileSync(file, 'utf8') } : undefined;
}
