// The job pattern: how the API hands long-running work to a Temporal workflow. The caller has
// already reserved the job's money (a metered call's hold); this stores the job's row, starts its
// workflow BY FUNCTION REFERENCE (typed arguments) with workflow id = the job's public id and the
// owner as search attribute (SwitchyardAccountId, so an operator finds a user's jobs in the Web UI),
// and, if the engine does not take the job, undoes everything: the reservation is released, the
// row deleted, and the caller told 503 with nothing charged. Status routes read the row that the
// workflow's activities keep current; cancel goes through the workflow.
import type { Workflow } from '@temporalio/client';
import { config } from '../config.js';
import { RequestError } from '../core/errors.js';
import { temporal } from '../temporalClient.js';

export interface JobStart<W extends Workflow> {
  /** the job's public id: its row's id, its workflow's id, its reservation's request id */
  id: string;
  /** the owner's account, searchable as SwitchyardAccountId */
  accountId: string;
  workflow: W;
  args: Parameters<W>;
  /** the reservation the workflow will settle, given back if the job never starts */
  reservation: { fail(code: string): Promise<void> };
  /** writes the job's row (the workflow's activities read and update it) */
  store(): Promise<void>;
  /** deletes the row of a job that never started */
  forget(): Promise<void>;
  /** what the caller hears when the engine refuses the job: 503 with this code and message */
  unavailable: { code: string; message: string };
}

export async function startJob<W extends Workflow>(job: JobStart<W>): Promise<void> {
  try {
    await job.store();
  } catch (err) {
    await job.reservation.fail('job_not_stored');
    throw err;
  }
  try {
    const client = await temporal();
    await client.workflow.start<Workflow>(job.workflow, {
      workflowId: job.id,
      taskQueue: config.taskQueue,
      args: job.args,
      searchAttributes: { SwitchyardAccountId: [job.accountId] },
    });
  } catch (err) {
    await job.reservation.fail(job.unavailable.code);
    await job.forget().catch((e) => console.error(`[jobs] could not forget ${job.id}:`, e));
    console.error(`[jobs] the workflow engine did not take ${job.workflow.name} ${job.id}:`, err);
    throw new RequestError(503, job.unavailable.code, job.unavailable.message);
  }
}

/**
 * Ask a job's workflow to cancel (its own compensation releases the money and marks the row).
 * A workflow that has already closed is not an error: its row says how it ended.
 */
export async function cancelJob(id: string): Promise<void> {
  try {
    await (await temporal()).workflow.getHandle(id).cancel();
  } catch (err) {
    // by name, not instanceof: the client library is loaded lazily (activities/temporalClient.ts)
    if ((err as Error).name === 'WorkflowNotFoundError' || /not found|already completed/i.test((err as Error).message))
      return;
    throw err;
  }
}
