// The one error type for "the request failed": bad input found after schema validation, routing
// dead ends, missing funds, an upstream's failure. It carries the status and code the spec
// promises, a message a person can act on, and what the envelopes and the fallback loop need;
// activities/surfaces/errors.ts renders it in the envelope of the surface that was called.
//
// An upstream's failure is the same type (made by `upstreamError`): `status` is then the
// upstream's own status and `providerId` says whose it was; the metered call turns the last one
// into the status the caller sees. `retryable` says whether another route (or a job's next
// attempt) may succeed where this one failed. The upstream's own words never reach the caller
// as they came: its message is the provider's name and what kind of failure it was, and the
// upstream's text (scrubbed of anything like a credential) is kept in `detail` for the operator's
// log. Only a refusal of the caller's own request (a 400 about their prompt) carries the text.

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
  /** what the upstream (or its transport) said, scrubbed of credentials: for the operator's log */
  detail?: string;
  /** fields the answer carries beside its envelope (an x402 challenge's `payment` and `x402Version`) */
  topLevel?: Record<string, unknown>;
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
 * An upstream's failure, mapped once by its adapter. `detail` is what the upstream (or the
 * transport) said, in its own words; `status` is the upstream's; `code`, when the upstream names
 * one (`content_policy_violation`, `unsupported_format`), is kept for the caller. The caller's
 * message is made here (see callerMessage); `detail` goes to the operator's log.
 */
export function upstreamError(
  detail: string,
  status: number,
  retryable: boolean,
  opts: { code?: string; providerId?: string; retryAfterSeconds?: number; upstreamBody?: string } = {},
): RequestError {
  const { code, ...rest } = opts;
  const clean = scrubSecrets(detail);
  const options: RequestErrorOptions = {
    ...rest,
    upstreamBody: rest.upstreamBody === undefined ? undefined : scrubSecrets(rest.upstreamBody),
    detail: clean,
    retryable,
  };
  return new RequestError(status, code ?? UPSTREAM_ERROR, callerMessage(opts.providerId, status, code, clean), options);
}

/** An upstream refusal of what the caller sent (their prompt, their parameters), not of us. */
export function isCallersOwn(status: number): boolean {
  return status === 400 || status === 413 || status === 422;
}

/** What the caller reads of an upstream failure: whose it was and what kind, never the upstream's text. */
function callerMessage(providerId = 'The provider', status: number, code: string | undefined, detail: string): string {
  if (isCallersOwn(status)) return `${providerId} refused the request (HTTP ${status}): ${detail}`;
  return `${providerId} ${failureKind(status, code)}.`;
}

function failureKind(status: number, code: string | undefined): string {
  if (code === 'upstream_timeout' || status === 408 || status === 504) return 'did not answer in time';
  if (code === 'upstream_unreachable') return 'could not be reached';
  if (code === 'upstream_stream_cut') return 'broke off its answer midway';
  if (code === 'upstream_bad_response') return 'sent a response the gateway could not read';
  if (status === 499) return 'call was aborted';
  if (status === 401 || status === 402 || status === 403 || status === 407)
    return `refused the gateway's credentials (an authentication error, HTTP ${status})`;
  if (status === 429) return 'is rate limiting the gateway (HTTP 429)';
  if (status === 404) return 'does not serve what was asked of it (HTTP 404)';
  if (status >= 500) return `failed (a server error, HTTP ${status})`;
  return `refused the call (a client error, HTTP ${status})`;
}

// What a credential looks like in an upstream's message: vendor key formats (OpenAI, Anthropic
// and our own `sk-…`, Google's `AIza…`), an Authorization scheme and its token, a `key=value`
// pair naming a secret, and any long opaque token mixing letters and digits.
const SECRET_SHAPES: Array<[RegExp, string]> = [
  [/\b(?:sk|pk|rk)[-_][A-Za-z0-9*._-]{6,}/g, '[redacted]'],
  [/\bAIza[0-9A-Za-z_-]{10,}/g, '[redacted]'],
  [/\b(bearer|basic|key)(\s+)(?=\S*\d)[A-Za-z0-9._~+/=*-]{8,}/gi, '$1$2[redacted]'],
  [
    /\b((?:x-)?(?:api[_-]?key|access[_-]?token|auth[_-]?token|token|secret|password|passwd|authorization|key)["']?\s*[:=]\s*["']?)[^\s"'&,;]{4,}/gi,
    '$1[redacted]',
  ],
  [/\b(?=[A-Za-z0-9_-]*\d)(?=[A-Za-z0-9_-]*[A-Za-z])[A-Za-z0-9_-]{32,}/g, '[redacted]'],
];

/** The values of the credential settings of this process (`*_API_KEY`, `*_TOKEN`, `*_SECRET`, …). */
function configuredSecrets(): string[] {
  const out: string[] = [];
  for (const [name, value] of Object.entries(process.env))
    if (value && value.length >= 8 && /(_API_KEY|_KEY|_TOKEN|_SECRET|_PASSWORD)$/.test(name)) out.push(value);
  return out;
}

/** `text` with anything resembling a credential replaced by `[redacted]`. */
export function scrubSecrets(text: string): string {
  let out = text;
  for (const secret of configuredSecrets()) out = out.split(secret).join('[redacted]');
  for (const [shape, replacement] of SECRET_SHAPES) out = out.replace(shape, replacement);
  return out;
}

/** The usual mapping of an upstream HTTP status to retryability. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 425 || status === 429 || status >= 500;
}

/**
 * What a refusal says of a value the caller sent that the gateway cannot take (a `type`, a media
 * type): the text itself, or that it is missing or not text at all, since an object would read as
 * "[object Object]".
 */
export function notSupported(value: unknown): string {
  if (typeof value === 'string') return `'${value}' is not supported`;
  if (value === undefined || value === null) return 'is missing';
  const kind = Array.isArray(value) ? 'an array' : typeof value === 'object' ? 'an object' : `a ${typeof value}`;
  return `must be a string, not ${kind}`;
}
