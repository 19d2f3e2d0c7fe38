// The one error type for a request that cannot be served as asked: bad input discovered after
// schema validation, routing dead ends, upstream failures, missing funds. It carries the spec's
// status and code; api/errors.ts renders it in the caller's envelope.
export class RequestError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly param: string | null = null,
    readonly extra: { retryAfterSeconds?: number; details?: Record<string, unknown> } = {},
  ) {
    super(message);
  }
}
