// Background responses (`background: true` on the Responses API): the activities the
// `backgroundResponse` workflow runs. The API has already validated the request, reserved its
// worst case and stored the response as `queued`, with everything needed to rebuild the call;
// here the call runs, is settled (the money moves in this activity), and the stored response is
// kept current: queued → in_progress → completed | incomplete | failed | cancelled.
import { Context } from '@temporalio/activity';
import { db } from '../db.js';
import { catalog } from '../catalog/catalog.js';
import type { Caller } from '../core/caller.js';
import { hasOutput, InferenceCall, producedText } from '../inference/execute.js';
import type { InferenceRequest } from '../core/types.js';
import { assistantTurn, type ChatMessage } from '../surfaces/responses.js';
import { toResponse, type ResponseMeta, type ResponseObject } from '../surfaces/responsesResponse.js';
import { RequestError } from '../core/errors.js';
import { MeteredCall } from '../metering/meteredCall.js';
import { storable } from '../surfaces/responsesStore.js';

/** What the API stores beside a queued response so the worker can run it. */
export interface BackgroundJob {
  caller: Omit<Caller, 'dailyUsdLimit'> & { dailyUsdLimit: string | null };
  requestId: string;
  modelId: string;
  routeIds: string[];
  request: InferenceRequest;
  promptTokenEstimate: number;
  holdId: string | null;
  meta: ResponseMeta;
}

interface Row {
  status: string;
  request: { conversation: ChatMessage[]; job: BackgroundJob; inputItems: Array<Record<string, unknown>> };
  response: ResponseObject;
}

const TERMINAL = new Set(['completed', 'incomplete', 'failed', 'cancelled']);

async function load(id: string): Promise<Row> {
  const row = await db().prisma.storedResponse.findUnique({ where: { id } });
  if (!row) throw new Error(`background response ${id} is not stored`);
  return row as unknown as Row;
}

async function update(
  id: string,
  status: string,
  response: ResponseObject,
  conversation?: ChatMessage[],
  row?: Row,
): Promise<void> {
  const request = conversation && row ? { ...row.request, conversation } : undefined;
  await db().prisma.storedResponse.update({
    where: { id },
    data: {
      status,
      response: storable({ ...response, status }) as object,
      ...(request ? { request: storable(request) as object } : {}),
    },
  });
}

/** Runs the call; returns the terminal status. A cancelled activity aborts the upstream call and rethrows. */
export async function runBackgroundResponse(id: string): Promise<string> {
  const row = await load(id);
  if (TERMINAL.has(row.status)) return row.status; // a retry after the work was done
  const job = row.request.job;
  await update(id, 'in_progress', row.response);

  const model = catalog().model(job.modelId);
  const routes = (model?.routes ?? [])
    .filter((r) => job.routeIds.includes(r.id))
    .sort((a, b) => job.routeIds.indexOf(a.id) - job.routeIds.indexOf(b.id));
  const caller: Caller = {
    ...job.caller,
    dailyUsdLimit: job.caller.dailyUsdLimit === null ? null : BigInt(job.caller.dailyUsdLimit),
  };
  const call = new InferenceCall({
    caller,
    requestId: job.requestId,
    surface: 'responses',
    modelId: job.modelId,
    routes,
    request: job.request,
    promptTokenEstimate: job.promptTokenEstimate,
  });
  call.adoptReservation(job.holdId ?? undefined);

  const ctx = Context.current();
  const beat = setInterval(() => ctx.heartbeat(), 1000);
  try {
    if (routes.length === 0)
      throw new RequestError(
        503,
        'model_not_available',
        `Model '${job.modelId}' has no configured provider on this worker.`,
      );
    const { result, route } = await call.complete(ctx.cancellationSignal);
    if (!hasOutput(result))
      throw new RequestError(
        502,
        'empty_response',
        `${route.provider.id} returned an empty response. Nothing was charged.`,
      );
    const { usage } = await call.settle(result.usage, producedText(result));
    const response = toResponse(result, usage, { ...job.meta, provider: route.provider.id });
    // an answer that could not be stored never reaches the caller: refund it (a retry may store it)
    await call.metered.orAbandon(
      update(id, response.status, response, [...row.request.conversation, assistantTurn(result)], row),
      'response_not_stored',
    );
    return response.status;
  } catch (err) {
    // Cancelled: stop here with the cancellation itself; the workflow releases and marks it cancelled.
    if (ctx.cancellationSignal.aborted) throw ctx.cancellationSignal.reason ?? err;
    if (err instanceof RequestError || (err as { status?: number }).status !== undefined) {
      // A request that cannot succeed (every provider failed, bad input): release, record, done.
      await call.fail((err as { code?: string }).code ?? 'error');
      await update(id, 'failed', {
        ...row.response,
        error: { code: (err as { code?: string }).code ?? 'error', message: (err as Error).message },
      } as ResponseObject);
      return 'failed';
    }
    throw err; // unexpected: let Temporal retry the activity
  } finally {
    clearInterval(beat);
  }
}

/** Cancelled (or given up on): give the reservation back and say so. Idempotent. */
export async function closeBackgroundResponse(
  id: string,
  status: 'cancelled' | 'failed',
  message?: string,
): Promise<void> {
  const row = await load(id);
  if (TERMINAL.has(row.status)) return;
  const { job } = row.request;
  await MeteredCall.adopted({
    caller: { ...job.caller, dailyUsdLimit: null },
    requestId: job.requestId,
    surface: 'responses',
    modelId: job.modelId,
    holdId: job.holdId,
  }).fail(status);
  const response = {
    ...row.response,
    ...(message ? { error: { code: 'background_failed', message } } : {}),
  } as ResponseObject;
  await update(id, status, response);
}
