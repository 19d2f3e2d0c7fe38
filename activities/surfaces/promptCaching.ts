// biome-ignore-all lint/suspicious/noExplicitAny: wire JSON, read field by field
// The prompt-caching fields of a text request (README, Prompt caching): `stickyprovider` (alias
// `stickyProvider`) and `prompt_caching` (alias `promptCaching`: `enabled`, `ttl`,
// `cut_after_message_index`, `stickyProvider`), read once with the checks a schema cannot make,
// and the cache breakpoint `prompt_caching.enabled` asks for. `caching: true` and the `:caching`
// suffixes are routing needs (routing/planRoute.ts); inline `cache_control` is read with the
// content (chat.ts's cacheControlOf).
import type { CacheControl, Message } from '../core/types.js';
import { RequestError } from '../core/errors.js';

export interface PromptCaching {
  /** no fallback away from the route this prompt's prefix is remembered on (routing/cacheAffinity.ts) */
  sticky: boolean;
  /** `prompt_caching.enabled`: where to put one more breakpoint (default: after the last message) */
  breakpoint?: { cutAfterMessageIndex?: number; ttl: '5m' | '1h' };
}

/** Anthropic takes at most four cache breakpoints per request; a fifth is its 400. */
const MAX_BREAKPOINTS = 4;

const bad = (message: string, param: string) => new RequestError(400, 'invalid_parameter_value', message, { param });

/** One of two spellings of a field; both sent must agree (a client mixing conventions means one thing). */
function eitherOf(body: any, a: string, b: string): { value: any; name: string } {
  const has = (k: string) => body[k] !== undefined && body[k] !== null;
  if (has(a) && has(b) && JSON.stringify(body[a]) !== JSON.stringify(body[b]))
    throw bad(`'${a}' and '${b}' are the same field spelled twice, with different values. Send one.`, b);
  return has(a) ? { value: body[a], name: a } : { value: has(b) ? body[b] : undefined, name: b };
}

/** The body's prompt-caching settings; `messageCount` = the length of the caller's `messages`. */
export function promptCachingOf(body: any, messageCount: number): PromptCaching {
  const sticky = eitherOf(body, 'stickyprovider', 'stickyProvider').value === true;
  const { value: pc, name } = eitherOf(body, 'prompt_caching', 'promptCaching');
  if (pc === undefined) return { sticky };
  const out: PromptCaching = { sticky: sticky || pc.stickyProvider === true };
  const cut = pc.cut_after_message_index;
  if (pc.enabled !== true) {
    const inert = ['ttl', 'cut_after_message_index'].find((k) => pc[k] !== undefined);
    if (inert)
      throw bad(
        `${name}.${inert} places a cache breakpoint, which only ${name}.enabled: true does. Set enabled: true, or remove ${inert}.`,
        `${name}.${inert}`,
      );
    return out;
  }
  if (cut !== undefined && cut >= messageCount)
    throw bad(
      `${name}.cut_after_message_index is ${cut}, but 'messages' has ${messageCount} (indexes 0-${messageCount - 1}). ` +
        'Point it at the last message of the prefix to cache.',
      `${name}.cut_after_message_index`,
    );
  out.breakpoint = { cutAfterMessageIndex: cut, ttl: pc.ttl ?? '5m' };
  return out;
}

/**
 * Put the breakpoint `prompt_caching.enabled` asks for into the internal messages: on the last part
 * of the message at `cutAfterMessageIndex` (`origins[j]` says which caller message kept message j
 * was; a message the translation dropped moves the cut to the one before it), or of the last
 * message. Only upstreams that take explicit breakpoints (Anthropic's protocol) send it; the others
 * cache implicitly and ignore it. A message that already is a breakpoint keeps the caller's, and a
 * request already at Anthropic's limit of four gets none more.
 */
export function insertBreakpoint(
  messages: Message[],
  origins: number[],
  breakpoint: NonNullable<PromptCaching['breakpoint']>,
): void {
  const inline = messages.reduce((n, m) => n + m.content.filter((p) => p.cacheControl).length, 0);
  if (inline >= MAX_BREAKPOINTS) return;
  const cut = breakpoint.cutAfterMessageIndex ?? Number.POSITIVE_INFINITY;
  const control: CacheControl = breakpoint.ttl === '1h' ? { type: 'ephemeral', ttl: '1h' } : { type: 'ephemeral' };
  for (let j = messages.length - 1; j >= 0; j--) {
    const m = messages[j];
    if (origins[j] > cut || m.content.length === 0) continue;
    if (m.content.some((p) => p.cacheControl)) return;
    const last = m.content.length - 1;
    m.content[last] = { ...m.content[last], cacheControl: control };
    return;
  }
}
