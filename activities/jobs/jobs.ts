// The job pattern: how the API hands long-running work to a Temporal workflow. The caller has
// already reserved the job's money (a metered call's hold); this stores the job's row, starts its
// workflow BY FUNCTION REFERENCE (typed arguments) with workflow id = the job's public id and the
// owner as search attribute (SwitchyardAccountId, so an operator finds a user's jobs in the Web UI),
// and, if the engine does not take the job, undoes everything: the reservation is released, the
// row deleted, and the caller told 503 with nothing charged. Status routes read the row that the
// workflow's activities keep current; cancel goes through the workflow.
//
// Accepting a job is on the caller's critical path (the 202 waits for it), so it costs two short
// statements and one call to the engine: the reservation and the row are written as the request
// path writes its reservations (one prepared statement each on the request pool, asynchronous
// commit: activities/db.ts says what that risks), and the row is written before the workflow starts,
// so the workflow's first activity always finds it. The 202 waits for the engine's answer: a job
// is accepted only once its workflow is durably started.
import type { Workflow } from '@temporalio/client';
import { config } from '../config.js';
import { RequestError } from '../core/errors.js';
import { db } from '../db.js';
import { beforeDeadline, ENGINE_DEADLINE_MS, temporal } from '../temporalClient.js';
import { jobEndedUpdate } from '../../workflows/jobEnded.js';

/** A job's row: its table, and its columns by their SQL names (JSON columns as objects). */
export interface JobRow {
  table:
    | 'media_jobs'
    | 'stored_responses'
    | 'batches'
    | 'team_invitations'
    | 'credit_invitations'
    | 'crypto_deposits'
    | 'subscriptions';
  columns: { id: string; status: string } & Record<string, unknown>;
}

export interface JobStart<W extends Workflow> {
  /** the job's public id: its row's id, its workflow's id, its reservation's request id */
  id: string;
  /** the owner's account, searchable as SwitchyardAccountId */
  accountId: string;
  workflow: W;
  args: Parameters<W>;
  /**
   * the reservation the workflow will settle, given back if the job never starts (none for a job
   * whose steps reserve their own, such as a batch's rows)
   */
  reservation?: { fail(code: string): Promise<void> };
  /** the row the workflow's activities read and update */
  row: JobRow;
  /**
   * the row is already in its table (written by the caller in a transaction of its own, as a batch
   * read as it arrives is): only the workflow is started, and the row deleted if it does not start
   */
  stored?: boolean;
  /** what the caller hears when the engine refuses the job: 503 with this code and message */
  unavailable: { code: string; message: string };
}

export async function startJob<W extends Workflow>(job: JobStart<W>): Promise<void> {
  try {
    if (!job.stored) await insertRow(job.row);
  } catch (err) {
    await job.reservation?.fail('job_not_stored');
    throw err;
  }
  try {
    // an engine that is down answers 503 within the deadline, not after the SDK's retries
    await beforeDeadline(Date.now() + ENGINE_DEADLINE_MS, (client) =>
      client.workflow.start<Workflow>(job.workflow, {
        workflowId: job.id,
        taskQueue: config.taskQueue,
        args: job.args,
        searchAttributes: { SwitchyardAccountId: [job.accountId] },
      }),
    );
  } catch (err) {
    await job.reservation?.fail(job.unavailable.code);
    await forgetRow(job.row).catch((e) => console.error(`[jobs] could not forget ${job.id}:`, e));
    console.error(`[jobs] the workflow engine did not take ${job.workflow.name} ${job.id}:`, err);
    if (isDeadlineExceeded(err)) void stopIfStarted(job.id);
    throw new RequestError(503, job.unavailable.code, job.unavailable.message);
  }
}

/** A call cut off by its deadline (gRPC DEADLINE_EXCEEDED, 4): the engine may have done it all the same. */
function isDeadlineExceeded(err: unknown): boolean {
  for (let e = err as { code?: unknown; cause?: unknown } | undefined; e; e = e.cause as typeof e)
    if (e.code === 4) return true;
  return false;
}

/**
 * A start cut off by its deadline may still have reached the engine: that workflow would run a job
 * whose caller heard 503 and whose money was given back, so it is stopped (in the background, as
 * long as it takes the engine to answer; a workflow that never started is nothing to stop).
 */
async function stopIfStarted(id: string): Promise<void> {
  try {
    await beforeDeadline(Date.now() + 60_000, (client) =>
      client.workflow.getHandle(id).terminate('its start was not confirmed in time; the caller was told 503'),
    );
    console.error(`[jobs] ${id} had started after all and was stopped`);
  } catch (err) {
    if (closed(err)) return;
    console.error(`[jobs] could not make sure ${id} is not running:`, err);
  }
}

/** One prepared INSERT per table and column list (statement names must stay short and distinct). */
const inserts = new Map<string, { name: string; text: string }>();

async function insertRow({ table, columns }: JobRow): Promise<void> {
  const names = Object.keys(columns);
  const signature = `${table}(${names.join(',')})`;
  let statement = inserts.get(signature);
  if (!statement) {
    statement = {
      name: `job_row_${inserts.size}`,
      text: `INSERT INTO ${table} (${names.join(', ')}) VALUES (${names.map((_, i) => `$${i + 1}`).join(', ')})`,
    };
    inserts.set(signature, statement);
  }
  const values = Object.values(columns).map((v) =>
    // objects (JSON columns) as JSON text: pg would write an array as a Postgres array literal
    v !== null && typeof v === 'object' && !(v instanceof Date) ? JSON.stringify(v) : v,
  );
  await db().requestPool.query({ ...statement, values });
}

/** Delete the row of a job that never started, unless a workflow has touched it after all. */
async function forgetRow({ table, columns }: JobRow): Promise<void> {
  await db().requestPool.query(`DELETE FROM ${table} WHERE id = $1 AND status = $2`, [columns.id, columns.status]);
}

/** A workflow that has closed (or never ran) no longer takes a cancel or an update: not an error. */
function closed(err: unknown): boolean {
  // by name, not instanceof: the client library is loaded lazily (activities/temporalClient.ts)
  const e = err as Error;
  return e.name === 'WorkflowNotFoundError' || /not found|already completed/i.test(e.message ?? '');
}

/**
 * Ask a job's workflow to cancel (its own compensation releases the money and marks the row).
 * A workflow that has already closed is not an error: its row says how it ended.
 */
export async function cancelJob(id: string): Promise<void> {
  try {
    await (await temporal()).workflow.getHandle(id).cancel();
  } catch (err) {
    if (closed(err)) return;
    throw err;
  }
}

/**
 * Cancel a job and wait for it to end: the workflow is asked to cancel, then its `ended` update
 * (workflows/jobEnded.ts) answers once the compensation has run, so the caller can read the row
 * once, final. Resolves with the state the job ended in; undefined when the workflow had closed
 * already (its row is final) or did not end within `waitMs` (its row still says where it is). An
 * engine that cannot be reached refuses with `unavailable` (503): nothing was cancelled.
 */
export async function cancelJobAndWait(
  id: string,
  waitMs: number,
  unavailable: { code: string; message: string },
): Promise<string | undefined> {
  let client: Awaited<ReturnType<typeof temporal>>;
  try {
    client = await temporal();
    await client.workflow.getHandle(id).cancel();
  } catch (err) {
    if (closed(err)) return undefined;
    console.error(`[jobs] the workflow engine did not take the cancel of ${id}:`, err);
    throw new RequestError(503, unavailable.code, unavailable.message, { retryAfterSeconds: 5 });
  }
  const deadline = AbortSignal.timeout(waitMs);
  try {
    const handle = client.workflow.getHandle(id);
    return await client.withAbortSignal(deadline, () => handle.executeUpdate(jobEndedUpdate));
  } catch (err) {
    // the cancel was taken: closed meanwhile, still compensating, or the engine gone since
    if (!closed(err) && !deadline.aborted) console.error(`[jobs] no end heard from ${id} after its cancel:`, err);
    return undefined;
  }
}
