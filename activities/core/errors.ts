// The one error type for "the request failed": bad input found after schema validation, routing
// dead ends, missing funds, an upstream's failure. It carries the status and code the spec
// promises, a message a person can act on, and what the envelopes and the fallback loop need;
// api/errors.ts renders it in the envelope of the surface that was called.
//
// An upstream's failure is the same type (made by `upstreamError`): `status` is then the
// upstream's own status and `providerId` says whose it was; the metered call turns the last one
// into the status the caller sees. `retryable` says whether another route (or a job's next
// attempt) may succeed where this one failed.

export interface RequestErrorOptions {
  /** the request field at fault, for the OpenAI-style envelope */
  param?: string | null;
  /** overrides the OpenAI-style error type derived from the status */
  type?: string;
  /** extra fields for the legacy and teams envelopes (e.g. requiredBalance) */
  details?: Record<string, unknown>;
  retryAfterSeconds?: number;
  /** response headers that go with the error */
  headers?: Record<string, string>;
  /** another route, or a later attempt, may succeed: timeouts, connection errors, 408, 429, 5xx */
  retryable?: boolean;
  /** the upstream whose failure this is (absent for the gateway's own refusals) */
  providerId?: string;
  /** the upstream's answer, for the operator's log; never shown to the caller */
  upstreamBody?: string;
}

export class RequestError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly opts: RequestErrorOptions = {},
  ) {
    super(message);
  }

  get retryable(): boolean {
    return this.opts.retryable === true;
  }
}

/** The code an upstream failure gets when its adapter could not name one. */
export const UPSTREAM_ERROR = 'upstream_error';

/**
 * An upstream's failure, mapped once by its adapter. `status` is the upstream's; `code`, when the
 * upstream names one (`content_policy_violation`, `unsupported_format`), is kept for the caller.
 */
export function upstreamError(
  message: string,
  status: number,
  retryable: boolean,
  opts: { code?: string; providerId?: string; retryAfterSeconds?: number; upstreamBody?: string } = {},
): RequestError {
  const { code, ...rest } = opts;
  const options: RequestErrorOptions = { ...rest, retryable };
  return new RequestError(status, code ?? UPSTREAM_ERROR, message, options);
}

/** The usual mapping of an upstream HTTP status to retryability. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 425 || status === 429 || status >= 500;
}
