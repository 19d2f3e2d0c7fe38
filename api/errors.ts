// The one error module: every failure is an ApiError (status + code + a message a person can
// act on) and is rendered in ONE place, in the envelope of the surface that was called.
//   openai  : {error:{message,type,code,param}}           (chat, completions, responses, models, ...)
//   message : {type:"error", error:{type,message}}         (the message-style API)
//   legacy  : {error, message, status, code?, ...details}  (talk-to-gpt, check-balance, ...)
//   teams   : {code, message, details, status}            (teams API)

import { RequestError } from '../activities/inference/errors.js';

export type Envelope = 'openai' | 'message' | 'legacy' | 'teams';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly opts: {
      param?: string | null;
      /** overrides the OpenAI-style type derived from the status */
      type?: string;
      /** extra fields for the legacy and teams envelopes (e.g. requiredBalance) */
      details?: Record<string, unknown>;
      headers?: Record<string, string>;
    } = {},
  ) {
    super(message);
  }
}

export const badRequest = (code: string, message: string, param?: string) =>
  new ApiError(400, code, message, { param });
export const notFound = (code: string, message: string) => new ApiError(404, code, message);

const OPENAI_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'insufficient_quota',
  403: 'permission_denied_error',
  404: 'not_found_error',
  405: 'invalid_request_error',
  408: 'timeout_error',
  409: 'invalid_request_error',
  413: 'invalid_request_error',
  415: 'invalid_request_error',
  422: 'invalid_request_error',
  429: 'rate_limit_error',
  503: 'service_unavailable',
  504: 'timeout_error',
};

// The message-style API has its own, smaller vocabulary of error types.
const MESSAGE_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  503: 'overloaded_error',
  529: 'overloaded_error',
};

const TEAMS_CODES: Record<number, string> = {
  400: 'INVALID_INPUT',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  409: 'CONFLICT',
  422: 'INVALID_INPUT',
  429: 'RATE_LIMITED',
};

export function renderError(err: ApiError, envelope: Envelope): Record<string, unknown> {
  const { status, code, message } = err;
  switch (envelope) {
    case 'message':
      return { type: 'error', error: { type: MESSAGE_TYPES[status] ?? 'api_error', message } };
    case 'legacy':
      return { error: message, message, status, code, ...err.opts.details };
    case 'teams':
      return { code: TEAMS_CODES[status] ?? 'INTERNAL_ERROR', message, details: err.opts.details ?? null, status };
    case 'openai':
    default:
      return {
        error: {
          message,
          type: err.opts.type ?? OPENAI_TYPES[status] ?? (status >= 500 ? 'server_error' : 'invalid_request_error'),
          code,
          param: err.opts.param ?? null,
        },
      };
  }
}

/** Anything that is not an ApiError or RequestError becomes a 500 whose message reveals nothing internal. */
export function asApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof RequestError) {
    const retry = err.extra.retryAfterSeconds;
    return new ApiError(err.status, err.code, err.message, {
      param: err.param,
      details: err.extra.details,
      headers:
        retry !== undefined && (err.status === 429 || err.status === 503)
          ? { 'Retry-After': String(Math.ceil(retry)) }
          : undefined,
    });
  }
  return new ApiError(
    500,
    'internal_error',
    'The server failed to handle this request. It has been logged; quote the X-Request-ID when reporting it.',
  );
}
