import { RequestError } from '../core/errors.js';
import { isDatabaseBusy, isLostConnection } from '../db.js';
// The one place a failure becomes a response body: every failure is a RequestError (status +
// code + a message a person can act on, activities/core/errors.ts), rendered here in the envelope
// of the surface that was called.
//   openai  : {error:{message,type,code,param}}           (chat, completions, responses, models, ...)
//   image   : {error:{message,type,code,param,parameter}, code}  (the image routes: wire-details "Images")
//   message : {type:"error", error:{type,message}}         (the message-style API)
//   legacy  : {error, message, status, code?, ...details}  (talk-to-gpt, check-balance, ...)
//   teams   : {code, message, details, status}            (teams API)

export type Envelope = 'openai' | 'image' | 'message' | 'legacy' | 'teams';

export const notFound = (code: string, message: string) => new RequestError(404, code, message);

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
  405: 'invalid_request_error',
  409: 'invalid_request_error',
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
  503: 'SERVICE_UNAVAILABLE',
};

export function renderError(err: RequestError, envelope: Envelope): Record<string, unknown> {
  const { status, code, message } = err;
  switch (envelope) {
    case 'message':
      return { type: 'error', error: { type: MESSAGE_TYPES[status] ?? 'api_error', message } };
    case 'legacy':
      return { error: message, message, status, code, ...err.opts.details };
    case 'teams':
      return {
        code: TEAMS_CODES[status] ?? 'INTERNAL_ERROR',
        message,
        // the field at fault, when a check names one (teams clients have no `param` otherwise)
        details: err.opts.details ?? (err.opts.param ? { param: err.opts.param } : null),
        status,
      };
    case 'image': {
      // OpenAI's shape (the openai SDK reads `param`), plus the image API's `parameter` and top-level `code`
      const body = renderError(err, 'openai') as { error: Record<string, unknown> };
      return { error: { ...body.error, parameter: body.error.param }, code };
    }
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

/** How long a caller should wait when the database has no connection to spare. */
const DATABASE_BUSY_RETRY_SECONDS = 2;

/**
 * Anything that is not a RequestError becomes a 500 whose message reveals nothing internal, but for
 * a database refusing connections for now or a connection lost under a statement: those pass, so
 * 503 with Retry-After.
 */
export function asRequestError(err: unknown): RequestError {
  if (err instanceof RequestError) return err;
  if (isDatabaseBusy(err))
    return new RequestError(
      503,
      'database_busy',
      "The gateway's database has no connection to spare just now; retry shortly.",
      { retryAfterSeconds: DATABASE_BUSY_RETRY_SECONDS },
    );
  // a connection that died under a statement not tried again (retryOnLostConnection): as passing
  if (isLostConnection(err))
    return new RequestError(
      503,
      'database_unavailable',
      'The gateway lost its database connection while handling this request; retry shortly.',
      { retryAfterSeconds: DATABASE_BUSY_RETRY_SECONDS },
    );
  return new RequestError(
    500,
    'internal_error',
    'The server failed to handle this request. It has been logged; quote the X-Request-ID when reporting it.',
  );
}

/** The headers an error answer carries: its own, and Retry-After on a 429 or 503 that says when. */
export function errorHeaders(err: RequestError): Record<string, string> {
  const retry = err.opts.retryAfterSeconds;
  if (retry === undefined || (err.status !== 429 && err.status !== 503)) return err.opts.headers ?? {};
  return { 'Retry-After': String(Math.ceil(retry)), ...err.opts.headers };
}
