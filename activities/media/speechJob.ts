// Asynchronous speech and music (POST /api/tts answering 202): one `media_jobs` row per job
// (kind 'speech', id `tts_<hex>`, which is also the workflow id and the request id of its
// reservation, charge and request record), and the activities the `speechJob` workflow runs.
//
// The API has planned the routes, reserved the worst case (for SPEECH_JOB_HOLD_SECONDS, longer
// than the workflow can run, so the hold sweeper never releases a live job's money) and stored
// the row as `pending`. runSpeechJob makes the audio with the same SpeechCall the synchronous
// routes use, hosts it and records it on the row, settles, and marks the row `completed` (a
// retry after a crash past that record only bills it: the provider is paid once too); a request
// the providers refuse marks it `error` and releases the reservation. Failures worth another try
// (timeouts, 429, 5xx, a cut stream, a worker that died or shut down mid-call) are left to
// Temporal's retry policy (workflows/speechJob.ts); when it gives up, closeSpeechJob releases and
// records the error. Retries never charge twice: the charge settles the one reservation, and a
// settled hold stays settled (ledger.settle is idempotent per hold).
import { ApplicationFailure, Context } from '@temporalio/activity';
import { db } from '../db.js';
import { catalog, type Route } from '../catalog/catalog.js';
import type { Caller } from '../core/caller.js';
import { MeteredCall } from '../metering/meteredCall.js';
import { SpeechCall, speechBillFields, type SpeechPlan } from './speech.js';
import { describeHostedFile, storeHostedFile, type HostedFileRef } from './hostedFiles.js';
import { RequestError } from '../core/errors.js';

/** A speech job's reservation outlives any run of its workflow (3 attempts of at most 15 minutes, plus backoff). */
export const SPEECH_JOB_HOLD_SECONDS = 2 * 3600;

type StoredCaller = Omit<Caller, 'dailyUsdLimit'> & { dailyUsdLimit: string | null };

/** What the API stores in `media_jobs.request` so a worker can rebuild the call. */
export interface SpeechJobRequest {
  caller: StoredCaller;
  modelId: string;
  routeIds: string[];
  plan: Omit<SpeechPlan, 'model'>;
}

/** What `media_jobs.result` holds once the audio exists (the status route shows it). */
interface SpeechJobResult {
  contentType: string;
  bytes: number;
  cost: number;
  amount: number;
  paymentSource: string;
  characters: number;
  seconds?: number;
  fileExpiresAt: string;
}

export interface SpeechJobView {
  id: string;
  accountId: string;
  model: string;
  status: string;
  error: string | null;
  outputFileId: string | null;
  result: SpeechJobResult | null;
}

/** The job as the status route shows it, or undefined when there is no such speech job. */
export async function loadSpeechJob(id: string): Promise<SpeechJobView | undefined> {
  const row = await db().prisma.mediaJob.findUnique({ where: { id } });
  if (row?.kind !== 'speech') return undefined;
  return {
    id: row.id,
    accountId: row.accountId,
    model: row.model,
    status: row.status,
    error: row.error,
    outputFileId: row.outputFileId,
    result: (row.result as SpeechJobResult | null) ?? null,
  };
}

async function markError(jobId: string, message: string): Promise<void> {
  await db().prisma.mediaJob.updateMany({
    where: { id: jobId, status: 'pending' },
    data: { status: 'error', error: message, completedAt: new Date() },
  });
}

/** Makes, hosts and bills the audio. Returns the terminal status; throws to have Temporal try again. */
export async function runSpeechJob(jobId: string): Promise<string> {
  const row = await db().prisma.mediaJob.findUnique({ where: { id: jobId } });
  if (!row) throw ApplicationFailure.nonRetryable(`speech job ${jobId} is not stored`, 'SpeechJobMissing');
  if (row.status !== 'pending') return row.status; // a retry after the work was done
  const job = row.request as unknown as SpeechJobRequest;
  const caller: Caller = {
    ...job.caller,
    dailyUsdLimit: job.caller.dailyUsdLimit === null ? null : BigInt(job.caller.dailyUsdLimit),
  };
  const model = catalog().model(job.modelId);
  if (!model) {
    await adopted(row, job).fail('model_not_available');
    await markError(jobId, `Model '${job.modelId}' is no longer in the catalog. Nothing was charged.`);
    return 'error';
  }
  const call = new SpeechCall(caller, jobId, { ...job.plan, model } as SpeechPlan, { routeIds: job.routeIds });
  call.adoptReservation(row.holdId ?? undefined);

  const ctx = Context.current();
  const beat = setInterval(() => ctx.heartbeat(), 1000);
  try {
    const audio = (await audioMadeEarlier(row, call)) ?? (await makeAudio(row, call, ctx.cancellationSignal));
    const bill = await call.settle();
    const result: SpeechJobResult = {
      contentType: audio.contentType,
      bytes: audio.bytes,
      ...speechBillFields(bill),
      fileExpiresAt: audio.file.expiresAt.toISOString(),
    };
    // Only a pending job: an attempt given up for silence that wakes up later (its worker was
    // frozen) must not overwrite what the attempt that replaced it recorded.
    await db().prisma.mediaJob.updateMany({
      where: { id: jobId, status: 'pending' },
      data: {
        status: 'completed',
        providerId: audio.route.provider.id,
        upstreamModel: audio.route.upstreamModel,
        outputFileId: audio.file.id,
        currency: bill.currency,
        cost: bill.chargedUnits.toString(),
        paymentSource: bill.paymentSource,
        result: result as object,
        completedAt: new Date(),
      },
    });
    return 'completed';
  } catch (err) {
    // Cancelled, or this worker is shutting down: the reservation stays for the next attempt.
    if (ctx.cancellationSignal.aborted) throw ctx.cancellationSignal.reason ?? err;
    if (err instanceof RequestError && err.retryable) {
      throw ApplicationFailure.create({ message: err.message, type: 'SpeechUpstreamFailure', nonRetryable: false });
    }
    if (err instanceof RequestError) {
      // The providers refused the request itself (bad key, rejected input): trying again cannot help.
      await call.fail(err.code);
      await markError(jobId, err.message);
      return 'error';
    }
    throw err; // unexpected: let Temporal retry the activity
  } finally {
    clearInterval(beat);
  }
}

/** The job's audio, hosted: the file, what it is, and the route that made it (what it costs). */
interface JobAudio {
  route: Route;
  file: HostedFileRef;
  contentType: string;
  bytes: number;
}

/**
 * Makes the audio and hosts it, then records it on the (still pending) job before anything is
 * charged: a worker that dies after this point leaves the next attempt only the billing to do,
 * never the provider to pay a second time. A crash before the record leaves an unreferenced file,
 * swept after its retention; never a charge without audio.
 */
async function makeAudio(
  row: { id: string; accountId: string },
  call: SpeechCall,
  signal: AbortSignal,
): Promise<JobAudio> {
  const out = await call.collect(signal);
  const file = await storeHostedFile({
    accountId: row.accountId,
    jobId: row.id,
    contentType: out.contentType,
    data: out.audio,
  });
  await db().prisma.mediaJob.updateMany({
    where: { id: row.id, status: 'pending' },
    data: { providerId: out.route.provider.id, upstreamModel: out.route.upstreamModel, outputFileId: file.id },
  });
  return { route: out.route, file, contentType: out.contentType, bytes: out.audio.length };
}

/** The audio an earlier attempt made and recorded but did not get to bill (undefined when there is none to use). */
async function audioMadeEarlier(
  row: { outputFileId: string | null; providerId: string; upstreamModel: string },
  call: SpeechCall,
): Promise<JobAudio | undefined> {
  if (!row.outputFileId) return undefined;
  const route = call.routes.find((r) => r.provider.id === row.providerId && r.upstreamModel === row.upstreamModel);
  const file = await describeHostedFile(row.outputFileId);
  if (!route || !file) return undefined; // its route left the catalog, or the file expired: make it again
  call.resumeAnswered(route);
  return {
    route,
    file: { id: row.outputFileId, expiresAt: file.expiresAt },
    contentType: file.contentType,
    bytes: file.bytes,
  };
}

/** Temporal gave up on the job: give the reservation back and record why. Idempotent. */
export async function closeSpeechJob(jobId: string, message: string): Promise<void> {
  const row = await db().prisma.mediaJob.findUnique({ where: { id: jobId } });
  if (row?.status !== 'pending') return;
  await adopted(row, row.request as unknown as SpeechJobRequest).fail('upstream_error');
  await markError(jobId, `${message.replace(/\.?$/, '.')} Nothing was charged.`);
}

/** The job's reservation, to release from a worker that is not running the call itself. */
function adopted(
  row: { id: string; accountId: string; apiKeyId: string | null; model: string; holdId: string | null },
  job: SpeechJobRequest,
): MeteredCall {
  return MeteredCall.adopted({
    caller: { accountId: row.accountId, keyId: row.apiKeyId, billingMode: job.caller.billingMode, dailyUsdLimit: null },
    requestId: row.id,
    surface: job.plan.kind,
    modelId: row.model,
    holdId: row.holdId,
  });
}
