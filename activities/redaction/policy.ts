// Whether a request is redacted, by the spec's rules: the `redaction` header (or its aliases
// `redacted`, `piiredaction`, `piiredacted`) set truthy turns it on and set falsy turns it off; a
// model suffix (`:redaction`, `:redacted`, `:piiredaction`, `:piiredacted`) turns it on and a falsy
// header cannot turn it off again; a request that says nothing gets its key's default, or its
// account's when the key inherits (`always` = on, `never` and `inherit` = off). A header value
// that is neither truthy nor falsy is refused rather than guessed at.
//
// Redaction never fails open: a route either applies it (masks what it sends, restores what comes
// back) or refuses a request that asked for it, by any of those means, with a 400 that names what
// asked and how to opt out (redactionDecision). A route that sends no caller text anywhere has
// nothing to mask and needs neither.
import { RequestError } from '../core/errors.js';
import type { ModelName } from '../routing/suffixes.js';

export const REDACTION_HEADERS = ['redaction', 'redacted', 'piiredaction', 'piiredacted'] as const;

const TRUTHY = new Set(['true', '1', 'yes', 'on', 'enabled', 'enable', 'always', 'redact', 'pii']);
const FALSY = new Set(['false', '0', 'no', 'off', 'never', 'disabled', 'disable', 'none']);

/** The fee of one redacted request: 0.0005 USD, in nano-USD. */
export const REDACTION_FEE_NANO_USD = 500_000n;

type RedactionDefault = 'inherit' | 'always' | 'never';

type Headers = Record<string, string | string[] | undefined>;

/** What the request's headers say (on, off, or nothing), and which header turned it on. */
function fromHeaders(headers: Headers): { said?: boolean; by?: string } {
  let said: boolean | undefined;
  let by: string | undefined;
  for (const name of REDACTION_HEADERS) {
    const raw = headers[name];
    if (raw === undefined) continue;
    const value = String(raw).trim().toLowerCase();
    if (TRUTHY.has(value)) {
      said = true;
      by ??= name;
    } else if (FALSY.has(value)) said ??= false;
    else
      throw new RequestError(
        400,
        'invalid_parameter_value',
        `The '${name}' header takes true or false (also 1/0, yes/no, on/off); '${String(raw).slice(0, 40)}' is neither.`,
        { param: name },
      );
  }
  // two headers that disagree: on wins (redacting more is the side that cannot leak)
  return { said, by };
}

/** Everything that can ask for redaction on one request. */
export interface RedactionAsk {
  headers: Headers;
  /** the model name's redaction suffix as written (`:redaction`, `:piiredacted`, ...: redactionSuffix) */
  suffix: string | boolean | undefined;
  /** the caller's default: its key's, or its account's when the key inherits */
  callerDefault: RedactionDefault | undefined;
}

/** What asked for redaction, as the caller would name it, or undefined when nothing did. */
function redactionAskedBy(a: RedactionAsk): { by: 'header' | 'suffix' | 'default'; what: string } | undefined {
  const header = fromHeaders(a.headers);
  if (a.suffix)
    return { by: 'suffix', what: typeof a.suffix === 'string' ? `the '${a.suffix}' model suffix` : 'a model suffix' };
  if (header.said !== undefined) return header.said ? { by: 'header', what: `the '${header.by}' header` } : undefined;
  if (a.callerDefault === 'always')
    return { by: 'default', what: "the API key's PII redaction default ('always', the key's own or its account's)" };
  return undefined;
}

/** The redaction suffix of a parsed model name, as written (`:piiredacted`), or undefined. */
export function redactionSuffix(name: Pick<ModelName, 'redaction' | 'suffixes'>): string | undefined {
  return name.redaction ? (name.suffixes.find((s) => /redact/.test(s)) ?? ':redaction') : undefined;
}

export function redactionWanted(a: RedactionAsk): boolean {
  return redactionAskedBy(a) !== undefined;
}

/**
 * The route's answer to a request: 'apply' (it asked and the route redacts) or 'none' (nothing
 * asked). Where the route does not offer redaction (`offered` false), a request that asked for it
 * is refused with a 400 saying what asked and how to send it unredacted, never sent unmasked.
 * `where` names the route in that message ("the embeddings endpoint").
 */
export function redactionDecision(offered: boolean, ask: RedactionAsk, where: string): 'apply' | 'none' {
  const asked = redactionAskedBy(ask);
  if (!asked) return 'none';
  if (offered) return 'apply';
  throw redactionRefusal(asked, where);
}

const OPT_OUT = {
  suffix: 'Remove the suffix to send the request as it is.',
  header: 'Remove the header (or set it to false) to send the request as it is.',
  default: "Send the header 'redaction: false' (it overrides a key's or account's default) to send it as it is.",
} as const;

/** The 400 for a request that asked for redaction where it is not offered. */
function redactionRefusal(asked: NonNullable<ReturnType<typeof redactionAskedBy>>, where: string): RequestError {
  return new RequestError(
    400,
    'invalid_parameter_value',
    `${capitalized(asked.what)} asks for PII redaction, which ${where} does not offer. The request was refused ` +
      `rather than sent unredacted; nothing was charged. ${OPT_OUT[asked.by]}`,
    { param: asked.by === 'suffix' ? 'model' : 'redaction' },
  );
}

const capitalized = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);
