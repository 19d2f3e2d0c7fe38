// fal's queue API (https://docs.fal.ai, "Queue"), the protocol of every video provider here:
//   submit  POST {base}/{model_id}[/{subpath}]             → {request_id, response_url, status_url, cancel_url}
//   status  GET  {base}/{owner}/{app}/requests/{id}/status?logs=1
//           → {status: IN_QUEUE (queue_position) | IN_PROGRESS (logs) | COMPLETED (metrics, error?)}
//   result  GET  {base}/{owner}/{app}/requests/{id}        → the model's output, e.g. {video:{url,...}}
//   cancel  PUT  {base}/{owner}/{app}/requests/{id}/cancel → 202 CANCELLATION_REQUESTED | 400 ALREADY_COMPLETED
// with `Authorization: Key <key>`. Status and result paths use the app id only (owner/app): a
// model's sub-path (`/v2.1/master/text-to-video`) is part of the submit URL alone, as fal's own
// clients do. A run that failed still reads COMPLETED on the status route (with `error` /
// `error_type` on newer deployments) and its result route answers the error: request errors as
// {detail:"...", error_type} and model errors as {detail:[{loc,msg,type,url,ctx}]}, where type
// `content_policy_violation` is a safety refusal. FAILED and CANCELED are accepted as statuses
// too (the spec names them, and bridges that speak this protocol use them).
import { readJson, send, statusError } from '../http.js';
import type { ProviderTarget, VideoJobFailure } from '../types.js';
import { type RequestError, UPSTREAM_ERROR, isRetryableStatus, upstreamError } from '../../core/errors.js';

type FalStatus = 'IN_QUEUE' | 'IN_PROGRESS' | 'COMPLETED' | 'FAILED' | 'CANCELED';

export interface FalStatusReply {
  status: FalStatus | string;
  queuePosition: number | null;
  /** the runner's log lines, newest last */
  logs: string[];
  /** a failure reported on the status route itself */
  error: string | null;
  errorType: string | null;
}

export type FalResult = { ok: true; output: Record<string, unknown> } | { ok: false; failure: VideoJobFailure };

const trimBase = (t: ProviderTarget) => t.baseUrl.replace(/\/+$/, '');

/** `fal-ai/kling-video/v2.1/master/text-to-video` → `fal-ai/kling-video` (status, result and cancel paths). */
function appId(model: string): string {
  return model.split('/').filter(Boolean).slice(0, 2).join('/');
}

export function falHeaders(target: ProviderTarget, json: boolean): Record<string, string> {
  const h: Record<string, string> = { accept: 'application/json', ...target.headers };
  if (json) h['content-type'] = 'application/json';
  if (target.apiKey) h.authorization = `Key ${target.apiKey}`;
  return h;
}

/** Submit one job; returns fal's request id. 4xx = the job was refused (content, input): not retryable. */
export async function falSubmit(
  target: ProviderTarget,
  model: string,
  input: Record<string, unknown>,
  signal: AbortSignal,
): Promise<string> {
  const res = await send(target.providerId, `${trimBase(target)}/${model}`, {
    headers: falHeaders(target, true),
    body: JSON.stringify(input),
    signal,
  });
  if (res.status < 200 || res.status >= 300) throw await falError(target, res);
  const body = await readJson(target.providerId, res);
  if (typeof body?.request_id !== 'string' || !body.request_id) {
    throw upstreamError(`${target.providerId} accepted the job but sent no request_id`, 502, true, {
      code: 'upstream_bad_response',
      providerId: target.providerId,
    });
  }
  return body.request_id;
}

export async function falStatus(
  target: ProviderTarget,
  model: string,
  requestId: string,
  signal: AbortSignal,
): Promise<FalStatusReply> {
  const url = `${trimBase(target)}/${appId(model)}/requests/${encodeURIComponent(requestId)}/status?logs=1`;
  const res = await send(target.providerId, url, { method: 'GET', headers: falHeaders(target, false), signal });
  if (res.status < 200 || res.status >= 300) throw await statusError(target.providerId, res);
  const b = await readJson(target.providerId, res);
  const logs = Array.isArray(b?.logs)
    ? b.logs.map((l: { message?: unknown }) => String(l?.message ?? '')).filter(Boolean)
    : [];
  return {
    status: String(b?.status ?? ''),
    queuePosition: Number.isInteger(b?.queue_position) ? b.queue_position : null,
    logs,
    error: typeof b?.error === 'string' && b.error ? b.error : null,
    errorType: typeof b?.error_type === 'string' ? b.error_type : null,
  };
}

/** The finished job's output, or the job's own failure (refusal, runner error) as data. Transport trouble throws. */
export async function falResult(
  target: ProviderTarget,
  model: string,
  requestId: string,
  signal: AbortSignal,
): Promise<FalResult> {
  const url = `${trimBase(target)}/${appId(model)}/requests/${encodeURIComponent(requestId)}`;
  const res = await send(target.providerId, url, { method: 'GET', headers: falHeaders(target, false), signal });
  if (res.status >= 200 && res.status < 300) {
    const output = await readJson(target.providerId, res);
    if (!output || typeof output !== 'object') {
      throw upstreamError(`${target.providerId} sent a result that is not an object`, 502, true, {
        code: 'upstream_bad_response',
        providerId: target.providerId,
      });
    }
    return { ok: true, output };
  }
  const err = await falError(target, res);
  // 429 and our own credentials are trouble with the call, not with the job: let the caller retry.
  if (res.status === 429 || res.status === 401 || res.status === 403) throw err;
  return { ok: false, failure: jobFailure(err) };
}

/** Ask fal to stop a job. Best effort: a job that already finished cannot be cancelled, which is fine. */
export async function falCancel(
  target: ProviderTarget,
  model: string,
  requestId: string,
  signal: AbortSignal,
): Promise<'requested' | 'already_completed' | 'not_found'> {
  const url = `${trimBase(target)}/${appId(model)}/requests/${encodeURIComponent(requestId)}/cancel`;
  // (`send` is typed for the GET/POST the text providers use; undici takes any method)
  const res = await send(target.providerId, url, { method: 'PUT', headers: falHeaders(target, false), signal });
  const text = await res.body.text().catch(() => '');
  if (res.status === 404) return 'not_found';
  if (res.status >= 200 && res.status < 300) return 'requested';
  if (res.status === 400 && /ALREADY_COMPLETED/.test(text)) return 'already_completed';
  throw upstreamError(
    `a cancel was answered ${res.status}: ${text.slice(0, 300)}`,
    res.status,
    isRetryableStatus(res.status),
    { providerId: target.providerId },
  );
}

/** A refusal reads NSFW when fal types it so, or its message says so (older endpoints send only text). */
const NSFW = /content[_ ]policy|nsfw|safety (checker|filter)|flagged/i;

export function jobFailure(err: RequestError): VideoJobFailure {
  const type = err.code !== UPSTREAM_ERROR ? err.code : null;
  // the caller reads `message` (no upstream words unless the refusal was of their own request);
  // whether it was a content refusal is read from what fal itself said
  const said = err.opts.detail ?? err.message;
  return { message: err.message, type, nsfw: (type !== null && NSFW.test(type)) || NSFW.test(said) };
}

/** fal's error bodies: {detail:"..."|[{msg,type,loc}], error_type?} (and the X-Fal-Error-Type header). */
export async function falError(target: ProviderTarget, res: Awaited<ReturnType<typeof send>>): Promise<RequestError> {
  const text = await res.body.text().catch(() => '');
  let message = text.slice(0, 500) || `HTTP ${res.status}`;
  let type: string | undefined;
  try {
    const j = JSON.parse(text);
    const d = j?.detail;
    if (typeof d === 'string') message = d;
    else if (Array.isArray(d) && d[0]) {
      message =
        d
          .map((e: { msg?: string }) => e?.msg)
          .filter(Boolean)
          .join('; ') || message;
      type = typeof d[0].type === 'string' ? d[0].type : undefined;
    } else if (typeof j?.error === 'string') message = j.error;
    type ??= typeof j?.error_type === 'string' ? j.error_type : undefined;
  } catch {
    // not JSON: keep the text
  }
  const header = res.headers['x-fal-error-type'];
  type ??= typeof header === 'string' ? header : undefined;
  const retryAfter = Number(res.headers['retry-after']);
  return upstreamError(message, res.status, isRetryableStatus(res.status), {
    code: type,
    providerId: target.providerId,
    retryAfterSeconds: Number.isFinite(retryAfter) ? retryAfter : undefined,
    upstreamBody: text.slice(0, 2000),
  });
}
