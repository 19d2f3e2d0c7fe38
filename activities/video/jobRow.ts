// The video job's row as the workflow's activities read it (run.ts, finish.ts): the row itself,
// the request stored in it, the route and provider it was planned on, and guarded updates.
import { ApplicationFailure } from '@temporalio/activity';
import { db } from '../db.js';
import { catalog, type Route } from '../catalog/catalog.js';
import { RequestError } from '../core/errors.js';
import { capability, targetFor } from '../providers/registry.js';
import { loadVideoJob, type VideoJobRequest, type VideoJobRow, type VideoStatus } from './jobs.js';

/** What the workflow learns from one step. */
export type VideoStep = VideoStatus;

export async function job(id: string): Promise<VideoJobRow> {
  const row = await loadVideoJob(id);
  // A job row is written before its workflow starts and never deleted while it runs.
  if (!row) throw ApplicationFailure.nonRetryable(`video job ${id} is not stored`, 'VideoJobMissing');
  return row;
}

export const request = (row: VideoJobRow) => row.request as unknown as VideoJobRequest;

/** The route the API planned for the job (rows from before routes were stored: its provider's route of the model). */
function routeOf(row: VideoJobRow): Route {
  const routes = catalog().model(row.model)?.routes ?? [];
  const id = request(row).routeId;
  const route = routes.find((r) => r.id === id) ?? routes.find((r) => r.provider.id === row.providerId);
  if (!route)
    throw ApplicationFailure.nonRetryable(
      `video job ${row.id}: its route is no longer in the catalog`,
      'VideoRouteMissing',
    );
  return route;
}

/** The job's provider, as its video capability and how to reach it. */
export function provider(row: VideoJobRow) {
  const route = routeOf(row);
  return { video: capability(route, 'video'), target: targetFor(route) };
}

/** Update a job that is not finished yet (a late poll must not undo a cancellation). */
export async function updateOpen(id: string, data: Record<string, unknown>): Promise<boolean> {
  const { count } = await db().prisma.mediaJob.updateMany({
    where: { id, status: { notIn: ['completed', 'failed', 'cancelled'] } },
    data,
  });
  return count > 0;
}

/** Upstream trouble that retrying cannot fix (our credentials, a 4xx that is not the job's fault) stops the retries. */
export function rethrow(err: unknown): never {
  if (err instanceof RequestError && !err.retryable)
    throw ApplicationFailure.nonRetryable(err.message, 'VideoProviderError');
  throw err;
}
