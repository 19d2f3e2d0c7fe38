// Starting a video job (the job pattern): reserve the pre-charge, store the row, start the
// `videoJob` workflow. Apart from the job's records (jobs.ts) and activities (run.ts) because it
// names the workflow, which imports the activities' types: one module doing both would be a cycle.
import { randomBytes } from 'node:crypto';
import type { Caller } from '../core/caller.js';
import { formatAmount, toDisplayNumber, type Currency } from '../core/money.js';
import { startJob } from '../jobs/jobs.js';
import { MeteredCall } from '../metering/meteredCall.js';
import type { Payer } from '../core/caller.js';
import { videoJob, type VideoJobInput } from '../../workflows/videoJob.js';
import { type VideoJobRequest, videoSettings } from './jobs.js';
import type { VideoPlan } from './plan.js';

function newVideoJobId(): string {
  return `vid_${randomBytes(12).toString('hex')}`;
}

export interface StartedVideoJob {
  runId: string;
  id: string;
  status: 'pending';
  cost: number;
  paymentSource: Currency;
  remainingBalance: number;
  prechargeLabel: string;
}

/** A video job's money as a metered call: one route (planned by the API), its pre-charge held past the deadline. */
function videoCall(
  caller: Payer,
  plan: Pick<VideoPlan, 'model' | 'route' | 'maxUsd' | 'perSecond' | 'prechargeLabel'>,
  id: string,
): MeteredCall {
  return new MeteredCall({
    caller,
    requestId: id,
    surface: 'video',
    modelId: plan.model.id,
    routes: [plan.route],
    holdKey: `video:${id}`,
    // the hold must outlive the job, or the hold sweeper would hand the money back mid-run
    holdTtlSeconds: videoSettings.deadlineSeconds() + 3600,
    worstCase: () => plan.maxUsd,
    shortfall: (required, available) =>
      `this video is pre-charged $${required} (${plan.prechargeLabel.replace(/^Pre-charged for /, '')} at $${formatAmount(plan.perSecond, 'USD')}/s) and $${available} is available. Add funds, or ask for a shorter video.`,
  });
}

/**
 * Reserve the pre-charge and start the job (the job pattern, activities/jobs/jobs.ts): the
 * row is stored as `pending`, the `videoJob` workflow started with workflow id = the job id, and
 * on a refusal from the engine both are undone and nothing is charged.
 */
export async function startVideoJob(a: {
  caller: Caller;
  plan: VideoPlan;
  conversationUuid: string | null;
  extendOf?: VideoJobRequest['extendOf'];
}): Promise<StartedVideoJob> {
  const { caller, plan } = a;
  const id = newVideoJobId();
  const call = videoCall(caller, plan, id);
  const hold = await call.reserve();
  const request: VideoJobRequest = {
    routeId: plan.route.id,
    input: plan.input,
    durationSeconds: plan.durationSeconds,
    variants: plan.variants,
    perSecond: plan.perSecond.toString(),
    maxUsd: plan.maxUsd.toString(),
    prechargeLabel: plan.prechargeLabel,
    prompt: plan.prompt,
    typicalSeconds: plan.typicalSeconds,
    ...(a.extendOf ? { extendOf: a.extendOf } : {}),
  };
  const currency: Currency = hold?.currency ?? 'USD';
  const input: VideoJobInput = {
    jobId: id,
    pollMs: videoSettings.pollMs(),
    deadlineMs: videoSettings.deadlineSeconds() * 1000,
  };
  await startJob({
    id,
    accountId: caller.accountId,
    workflow: videoJob,
    args: [input],
    reservation: call,
    row: {
      table: 'media_jobs',
      columns: {
        id,
        kind: 'video',
        account_id: caller.accountId,
        api_key_id: caller.keyId,
        model: plan.model.id,
        provider_id: plan.route.provider.id,
        upstream_model: plan.route.upstreamModel,
        status: 'pending',
        request,
        conversation_uuid: a.conversationUuid,
        currency,
        precharge: (hold?.amount ?? 0n).toString(),
        hold_id: call.reservation ?? null,
        payment_source: currency,
      },
    },
    unavailable: {
      code: 'video_unavailable',
      message:
        'Video generation is unavailable right now (the workflow engine did not accept the job). Nothing was charged; retry shortly.',
    },
  });
  return {
    runId: id,
    id,
    status: 'pending',
    cost: toDisplayNumber(plan.maxUsd, 'USD'),
    paymentSource: currency,
    remainingBalance: hold ? toDisplayNumber(hold.available, currency) : 0,
    prechargeLabel: plan.prechargeLabel,
  };
}
