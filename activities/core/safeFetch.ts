// Fetching a URL on a caller's behalf (an image reference, a media input) without letting the
// caller aim the gateway at its own network: only http(s), every address the host resolves to is
// vetted before connecting, the connection goes to exactly those vetted addresses (a second DNS
// answer cannot rebind it to 127.0.0.1), each redirect is vetted again, and size and time are
// capped. Operators with internal media hosts may open private ranges with
// SWITCHYARD_FETCH_ALLOW_PRIVATE: `1` (any address) or a comma-separated list of CIDRs.
import dns from 'node:dns';
import net from 'node:net';
import { Agent, request } from 'undici';

export interface SafeFetchOptions {
  signal?: AbortSignal;
  /** largest body accepted; default 20 MB */
  maxBytes?: number;
  /** for the whole fetch, redirects included; default 15 s */
  timeoutMs?: number;
  /** default 3 */
  maxRedirects?: number;
  /** which private addresses are allowed; default from SWITCHYARD_FETCH_ALLOW_PRIVATE (read per call) */
  allowPrivate?: boolean | string[];
  /** the `code` of the errors thrown, so the API can name what was wrong (default `invalid_media_url`) */
  errorCode?: string;
}

export interface FetchedMedia {
  data: Buffer;
  /** the Content-Type's media type, lowercased, without parameters ('' when absent) */
  mediaType: string;
  /** where the bytes came from after redirects */
  url: string;
}

/**
 * A URL the gateway will not (or could not) fetch for the caller: a 400 for them, never retried.
 * Whatever depends on how the far end behaved (its name not resolving, a refused or reset
 * connection, a timeout, an HTTP error status) reads the same to the caller, "could not fetch
 * <url>": a distinct message per cause would let a caller map which hosts and ports answer from
 * the gateway's network. `reason` and `detail` say what happened, for the operator's log.
 */
export class MediaFetchError extends Error {
  readonly status = 400;
  constructor(
    message: string,
    readonly code: string,
    readonly reason:
      | 'bad_url'
      | 'forbidden_address'
      | 'dns'
      | 'too_many_redirects'
      | 'too_large'
      | 'timeout'
      | 'http_status'
      | 'network',
    readonly detail?: string,
  ) {
    super(message);
    this.name = 'MediaFetchError';
  }
}

const DEFAULT_MAX_MEDIA_BYTES = 20 * 1024 * 1024;

// Addresses no caller may reach through us. IPv4: "this network", loopback, private (RFC 1918),
// CGNAT, link-local (cloud metadata lives at 169.254.169.254), protocol-assignment, documentation
// and benchmarking nets, multicast, reserved, broadcast.
const forbiddenV4 = new net.BlockList();
for (const [a, p] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  forbiddenV4.addSubnet(a, p, 'ipv4');

// IPv6: only global unicast (2000::/3) is reachable, so everything outside it is refused whole:
// unspecified, loopback, the IPv4-compatible, NAT64 (64:ff9b::/96, 64:ff9b:1::/48) and discard
// blocks, unique-local, link-local, site-local, multicast. Inside it, the blocks that embed an
// IPv4 address or route nowhere public: Teredo, ORCHID, documentation, 6to4. The two forms that
// name one IPv4 host directly, IPv4-mapped (::ffff:a.b.c.d, also written ::ffff:7f00:1) and
// IPv4-translated (::ffff:0:a.b.c.d, ::ffff:0:7f00:1), are judged as that IPv4 address.
const forbiddenV6 = new net.BlockList();
for (const [a, p] of [
  ['::', 3],
  ['4000::', 2],
  ['8000::', 1],
  ['2001::', 23],
  ['2001:db8::', 32],
  ['2002::', 16],
  ['3fff::', 20],
] as const)
  forbiddenV6.addSubnet(a, p, 'ipv6');

/** The eight 16-bit groups of an IPv6 literal (a trailing dotted quad included), or undefined. */
function ipv6Groups(address: string): number[] | undefined {
  let text = address.toLowerCase();
  const zone = text.indexOf('%');
  if (zone !== -1) text = text.slice(0, zone);
  const quad = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (quad) {
    const b = quad.slice(1).map(Number);
    text = `${text.slice(0, quad.index)}${((b[0] << 8) | b[1]).toString(16)}:${((b[2] << 8) | b[3]).toString(16)}`;
  }
  const [head, tail] = text.split('::');
  const part = (s: string | undefined) => (s ? s.split(':').map((g) => Number.parseInt(g, 16)) : []);
  const left = part(head);
  const right = part(tail);
  const groups = tail === undefined ? left : [...left, ...Array(8 - left.length - right.length).fill(0), ...right];
  return groups.length === 8 && groups.every((g) => g >= 0 && g <= 0xffff) ? groups : undefined;
}

/** The IPv4 host an IPv4-mapped (::ffff:0:0/96) or IPv4-translated (::ffff:0:0:0/96) address names. */
function embeddedIPv4(address: string): string | undefined {
  const g = ipv6Groups(address);
  if (!g || g[0] || g[1] || g[2] || g[3]) return undefined;
  const mapped = g[4] === 0 && g[5] === 0xffff;
  const translated = g[4] === 0xffff && g[5] === 0;
  if (!mapped && !translated) return undefined;
  return [g[6] >> 8, g[6] & 0xff, g[7] >> 8, g[7] & 0xff].join('.');
}

/** Whether `address` (an IP literal) is one the policy lets us connect to. */
export function isAllowedAddress(address: string, allowPrivate: boolean | string[] = false): boolean {
  const family = net.isIP(address);
  if (family === 0) return false;
  if (family === 6) {
    const v4 = embeddedIPv4(address);
    if (v4) return isAllowedAddress(v4, allowPrivate);
  }
  const type = family === 4 ? 'ipv4' : 'ipv6';
  if (!(family === 4 ? forbiddenV4 : forbiddenV6).check(address, type)) return true;
  if (allowPrivate === true) return true;
  if (Array.isArray(allowPrivate) && allowPrivate.length > 0) return allowList(allowPrivate).check(address, type);
  return false;
}

function allowList(cidrs: string[]): net.BlockList {
  const list = new net.BlockList();
  for (const cidr of cidrs) {
    const [addr, bits] = cidr.trim().split('/');
    const family = net.isIP(addr);
    if (family === 0) throw new Error(`SWITCHYARD_FETCH_ALLOW_PRIVATE: "${cidr}" is not an address or CIDR`);
    list.addSubnet(addr, bits === undefined ? (family === 4 ? 32 : 128) : Number(bits), family === 4 ? 'ipv4' : 'ipv6');
  }
  return list;
}

function policyFromEnv(): boolean | string[] {
  const raw = process.env.SWITCHYARD_FETCH_ALLOW_PRIVATE?.trim();
  if (!raw || raw === '0' || raw.toLowerCase() === 'false') return false;
  if (raw === '1' || raw.toLowerCase() === 'true') return true;
  return raw.split(',').filter(Boolean);
}

/** Fetch `url` for a caller, under the rules above. Throws MediaFetchError for anything refused or failed. */
export async function safeFetch(url: string, opts: SafeFetchOptions = {}): Promise<FetchedMedia> {
  const code = opts.errorCode ?? 'invalid_media_url';
  const maxBytes = opts.maxBytes ?? DEFAULT_MAX_MEDIA_BYTES;
  const maxRedirects = opts.maxRedirects ?? 3;
  const policy = opts.allowPrivate ?? policyFromEnv();
  const timeout = AbortSignal.timeout(opts.timeoutMs ?? 15_000);
  const signal = opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout;
  const fail = (message: string, reason: MediaFetchError['reason']) => new MediaFetchError(message, code, reason);
  const unreachable: Unreachable = (reason, detail) =>
    new MediaFetchError(`could not fetch ${url.slice(0, 200)}`, code, reason, detail);

  let current = url;
  for (let hop = 0; ; hop++) {
    const target = parseUrl(current, fail);
    const addresses = await vettedAddresses(target.hostname, policy, signal, opts.signal, fail, unreachable);
    // A dispatcher per hop whose only way to resolve a name is the list we just vetted.
    const agent = new Agent({ connect: { lookup: pinnedLookup(target.hostname, addresses), timeout: 10_000 } });
    try {
      let res: Awaited<ReturnType<typeof request>>;
      try {
        res = await request(target, {
          method: 'GET',
          signal,
          dispatcher: agent,
          headers: { accept: 'image/*,*/*;q=0.8', 'user-agent': 'Switchyard media fetch' },
        });
      } catch (err) {
        throw fetchFailure(err, current, signal, opts.signal, unreachable);
      }
      if (res.statusCode >= 300 && res.statusCode < 400 && res.headers.location) {
        discard(res.body);
        if (hop >= maxRedirects) throw fail(`${url}: more than ${maxRedirects} redirects`, 'too_many_redirects');
        current = new URL(String(res.headers.location), target).href;
        continue;
      }
      if (res.statusCode < 200 || res.statusCode >= 300) {
        discard(res.body);
        throw unreachable('http_status', `${current} answered HTTP ${res.statusCode}`);
      }
      const declared = Number(res.headers['content-length']);
      if (Number.isFinite(declared) && declared > maxBytes) {
        discard(res.body);
        throw fail(`${url} is larger than the ${maxBytes}-byte limit`, 'too_large');
      }
      const chunks: Buffer[] = [];
      let size = 0;
      try {
        for await (const chunk of res.body) {
          size += chunk.length;
          if (size > maxBytes) {
            discard(res.body);
            throw fail(`${url} is larger than the ${maxBytes}-byte limit`, 'too_large');
          }
          chunks.push(chunk as Buffer);
        }
      } catch (err) {
        throw fetchFailure(err, current, signal, opts.signal, unreachable);
      }
      const contentType = String(res.headers['content-type'] ?? '');
      return { data: Buffer.concat(chunks), mediaType: contentType.split(';')[0].trim().toLowerCase(), url: current };
    } finally {
      agent.destroy().catch(() => undefined);
    }
  }
}

/** Drop a body we will not read (undici reports the destroy as an error event: nobody is listening). */
function discard(body: { on(event: 'error', fn: () => void): unknown; destroy(): unknown }): void {
  body.on('error', () => undefined);
  body.destroy();
}

function parseUrl(raw: string, fail: (m: string, r: MediaFetchError['reason']) => MediaFetchError): URL {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw fail(`not a valid URL: ${raw.slice(0, 200)}`, 'bad_url');
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw fail(`only http and https URLs can be fetched, not ${u.protocol}`, 'bad_url');
  return u;
}

/** Every address of `hostname` (an IP literal is its own answer), all of which must be allowed. */
async function vettedAddresses(
  hostname: string,
  policy: boolean | string[],
  signal: AbortSignal,
  callerSignal: AbortSignal | undefined,
  fail: (m: string, r: MediaFetchError['reason']) => MediaFetchError,
  unreachable: Unreachable,
): Promise<Array<{ address: string; family: number }>> {
  const bare = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
  let found: Array<{ address: string; family: number }>;
  if (net.isIP(bare)) {
    found = [{ address: bare, family: net.isIP(bare) }];
  } else {
    try {
      found = await abortable(dns.promises.lookup(bare, { all: true, verbatim: true }), signal);
    } catch (err) {
      if (callerSignal?.aborted) throw err;
      if (signal.aborted) throw unreachable('timeout', `${hostname}: timed out resolving the host`);
      throw unreachable('dns', `${hostname}: ${(err as Error).message}`);
    }
  }
  // Refuse when ANY answer is off limits: a name that mixes public and private addresses is a trap.
  const bad = found.find((a) => !isAllowedAddress(a.address, policy));
  if (bad || found.length === 0)
    throw fail(`${hostname} resolves to an address the gateway may not fetch from`, 'forbidden_address');
  return found;
}

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | dns.LookupAddress[],
  family?: number,
) => void;

/** A `lookup` for net/tls.connect that answers only from the vetted list, never from DNS. */
function pinnedLookup(hostname: string, addresses: Array<{ address: string; family: number }>) {
  const bare = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
  return (name: string, options: dns.LookupOptions | number, callback: LookupCallback): void => {
    if (name !== bare) {
      callback(Object.assign(new Error(`unexpected host ${name}`), { code: 'ENOTFOUND' }), '', 0);
      return;
    }
    const o = typeof options === 'number' ? { family: options } : options;
    const family = o.family === 'IPv4' ? 4 : o.family === 'IPv6' ? 6 : Number(o.family ?? 0);
    const usable = addresses.filter((a) => !family || a.family === family);
    if (usable.length === 0) {
      callback(Object.assign(new Error(`no IPv${family} address for ${name}`), { code: 'ENOTFOUND' }), '', 0);
      return;
    }
    if (o.all) callback(null, usable);
    else callback(null, usable[0].address, usable[0].family);
  };
}

/** The one failure a caller sees for anything the far end did (see MediaFetchError). */
type Unreachable = (reason: MediaFetchError['reason'], detail: string) => MediaFetchError;

function fetchFailure(
  err: unknown,
  url: string,
  signal: AbortSignal,
  callerSignal: AbortSignal | undefined,
  unreachable: Unreachable,
): Error {
  if (err instanceof MediaFetchError) return err;
  // The caller went away: let their abort surface as such, not as a bad URL.
  if (callerSignal?.aborted) return err as Error;
  if (signal.aborted) return unreachable('timeout', `${url}: timed out`);
  return unreachable('network', `${url}: ${(err as Error).message}`);
}

function abortable<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
