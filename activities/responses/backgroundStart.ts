// Handing a background response to its workflow (the job pattern). Apart from the activities the
// workflow runs (background.ts) because it names the workflow, which imports the activities'
// types: one module doing both would be an import cycle.
import type { Caller } from '../core/caller.js';
import type { InferenceCall } from '../inference/execute.js';
import { startJob } from '../jobs/jobs.js';
import { inputItemsOf, type ChatMessage } from '../surfaces/responses.js';
import { responseShell, type ResponseMeta, type ResponseObject } from '../surfaces/responsesResponse.js';
import { retentionDays } from '../surfaces/responsesStore.js';
import { backgroundResponse } from '../../workflows/backgroundResponse.js';
import type { BackgroundJob } from './background.js';

/**
 * Hands a reserved call to the `backgroundResponse` workflow (the job pattern): the response is
 * stored as `queued` with everything the worker needs to run it, the workflow started with
 * workflow id = the response id, and both undone if the engine does not take it.
 */
export async function startBackgroundResponse(
  call: InferenceCall,
  meta: ResponseMeta,
  conversation: ChatMessage[],
  caller: Caller,
): Promise<ResponseObject> {
  const queued = responseShell(meta, 'queued');
  const job: BackgroundJob = {
    caller: { ...caller, dailyUsdLimit: caller.dailyUsdLimit?.toString() ?? null },
    requestId: call.ctx.requestId,
    modelId: call.ctx.modelId,
    routeIds: call.ctx.routes.map((r) => r.id),
    request: call.ctx.request,
    promptTokenEstimate: call.ctx.promptTokenEstimate,
    holdId: call.reservation ?? null,
    meta,
  };
  await startJob({
    id: meta.id,
    accountId: caller.accountId,
    workflow: backgroundResponse,
    args: [meta.id],
    reservation: call,
    row: {
      table: 'stored_responses',
      columns: {
        id: meta.id,
        account_id: caller.accountId,
        status: 'queued',
        request: { conversation, job, inputItems: inputItemsOf(meta.body.input) },
        response: queued,
        expires_at: new Date(Date.now() + Math.max(1, retentionDays()) * 86_400_000),
      },
    },
    unavailable: {
      code: 'background_unavailable',
      message:
        'Background responses are unavailable right now (the workflow engine did not accept the job). Nothing was charged; retry, or send the request without background.',
    },
  });
  return queued;
}
