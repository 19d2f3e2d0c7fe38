// Whether a request is redacted, by the spec's rules: the `redaction` header (or its aliases
// `redacted`, `piiredaction`, `piiredacted`) set truthy turns it on and set falsy turns it off; a
// model suffix (`:redaction`, `:redacted`, `:piiredaction`, `:piiredacted`) turns it on and a falsy
// header cannot turn it off again; a request that says nothing gets its key's default, or its
// account's when the key inherits (`always` = on, `never` and `inherit` = off). A header value
// that is neither truthy nor falsy is refused rather than guessed at.
import { RequestError } from '../core/errors.js';

export const REDACTION_HEADERS = ['redaction', 'redacted', 'piiredaction', 'piiredacted'] as const;

const TRUTHY = new Set(['true', '1', 'yes', 'on', 'enabled', 'enable', 'always', 'redact', 'pii']);
const FALSY = new Set(['false', '0', 'no', 'off', 'never', 'disabled', 'disable', 'none']);

/** The fee of one redacted request: 0.0005 USD, in nano-USD. */
export const REDACTION_FEE_NANO_USD = 500_000n;

export type RedactionDefault = 'inherit' | 'always' | 'never';

/** What the request's headers say: on, off, or nothing. */
function fromHeaders(headers: Record<string, string | string[] | undefined>): boolean | undefined {
  let said: boolean | undefined;
  for (const name of REDACTION_HEADERS) {
    const raw = headers[name];
    if (raw === undefined) continue;
    const value = String(raw).trim().toLowerCase();
    if (TRUTHY.has(value)) said = true;
    else if (FALSY.has(value)) said ??= false;
    else
      throw new RequestError(
        400,
        'invalid_parameter_value',
        `The '${name}' header takes true or false (also 1/0, yes/no, on/off); '${String(raw).slice(0, 40)}' is neither.`,
        { param: name },
      );
  }
  // two headers that disagree: on wins (redacting more is the side that cannot leak)
  return said;
}

export function redactionWanted(a: {
  headers: Record<string, string | string[] | undefined>;
  suffix: boolean;
  callerDefault: RedactionDefault | undefined;
}): boolean {
  const header = fromHeaders(a.headers);
  if (a.suffix) return true;
  if (header !== undefined) return header;
  return a.callerDefault === 'always';
}
