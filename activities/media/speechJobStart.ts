// Starting an asynchronous speech job (POST /api/tts answering 202): reserve, store the row, start
// the `speechJob` workflow. Apart from the job's activities (speechJob.ts) because it names the
// workflow, which imports the activities' types: one module doing both would be an import cycle.
import { randomBytes } from 'node:crypto';
import type { Caller } from '../core/caller.js';
import { startJob, type JobRow } from '../jobs/jobs.js';
import { speechJob } from '../../workflows/speechJob.js';
import { SpeechCall, type SpeechPlan } from './speech.js';
import { SPEECH_JOB_HOLD_SECONDS, type SpeechJobRequest } from './speechJob.js';

/**
 * Reserve the job's worst case (held past any run of its workflow) and start it: the job
 * pattern (activities/jobs/jobs.ts) stores the row, starts `speechJob` (workflow id = the
 * job id) and undoes both if the engine does not take it.
 */
export async function startSpeechJob(
  caller: Caller,
  plan: SpeechPlan,
  explicitProvider: string | undefined,
): Promise<{ runId: string; model: string; status: 'pending' }> {
  const runId = `tts_${randomBytes(12).toString('hex')}`;
  const call = new SpeechCall(caller, runId, plan, explicitProvider, { holdTtlSeconds: SPEECH_JOB_HOLD_SECONDS });
  const hold = await call.reserve();
  await startJob({
    id: runId,
    accountId: caller.accountId,
    workflow: speechJob,
    args: [runId],
    reservation: call,
    row: speechJobRow(runId, caller, call, hold),
    unavailable: {
      code: 'job_unavailable',
      message:
        'Asynchronous speech is unavailable right now (the workflow engine did not accept the job). Nothing was charged; retry later, or send a shorter text.',
    },
  });
  return { runId, model: plan.model.id, status: 'pending' };
}

/** A reserved call as a pending job's row. */
function speechJobRow(
  jobId: string,
  caller: Caller,
  call: SpeechCall,
  hold: { currency: string; amount: bigint } | undefined,
): JobRow {
  const { model, ...plan } = call.plan;
  const request: SpeechJobRequest = {
    caller: { ...caller, dailyUsdLimit: caller.dailyUsdLimit?.toString() ?? null },
    modelId: model.id,
    routeIds: call.routes.map((r) => r.id),
    plan,
  };
  const first = call.routes[0];
  return {
    table: 'media_jobs',
    columns: {
      id: jobId,
      kind: 'speech',
      account_id: caller.accountId,
      api_key_id: caller.keyId,
      model: model.id,
      provider_id: first?.provider.id ?? '',
      upstream_model: first?.upstreamModel ?? '',
      status: 'pending',
      request,
      hold_id: call.reservation ?? null,
      currency: hold?.currency ?? null,
      precharge: hold ? hold.amount.toString() : null,
    },
  };
}
