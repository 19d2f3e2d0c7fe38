// Failed authentications per client address, over a sliding minute. A random well-formed key
// costs a database lookup (only known keys are cached), so guessing is limited where it is
// cheapest to stop: past the limit an address gets 429 before its key is looked up
// (middleware/auth.ts). Counted per API process, like the other rate limits (middleware/rateLimit.ts):
// with N processes behind one port an address may fail N times the limit before every one of them
// refuses it. Memory stays bounded: at most `limit` timestamps per address, and addresses whose
// failures have all left the window are forgotten when the table grows.
import { isIPv4 } from 'node:net';

const WINDOW_MS = 60_000;

export class FailedAuthentications {
  private readonly failures = new Map<string, number[]>();

  constructor(private readonly maxAddresses = 100_000) {}

  /** Addresses being tracked (for tests). */
  get size(): number {
    return this.failures.size;
  }

  /** 0 while `address` may still try; otherwise seconds until its oldest failure leaves the window. */
  retryAfterSeconds(address: string, limit: number, now = Date.now()): number {
    if (limit <= 0 || this.failures.size === 0) return 0;
    const times = this.failures.get(bucketOf(address));
    if (!times || times.length < limit) return 0;
    const waitMs = times[times.length - limit]! + WINDOW_MS - now;
    return waitMs > 0 ? Math.ceil(waitMs / 1000) : 0;
  }

  record(address: string, limit: number, now = Date.now()): void {
    if (limit <= 0) return;
    const bucket = bucketOf(address);
    const times = this.failures.get(bucket);
    if (times) {
      times.push(now);
      if (times.length > limit) times.splice(0, times.length - limit);
      return;
    }
    if (this.failures.size >= this.maxAddresses) this.forgetStale(now);
    this.failures.set(bucket, [now]);
  }

  private forgetStale(now: number): void {
    for (const [bucket, times] of this.failures) {
      if (times[times.length - 1]! <= now - WINDOW_MS) this.failures.delete(bucket);
    }
    // all recent: drop the oldest-inserted rather than grow without bound
    if (this.failures.size >= this.maxAddresses) this.failures.delete(this.failures.keys().next().value!);
  }
}

/**
 * What counts as one client: an IPv4 address (also when IPv4-mapped), or an IPv6 /64, the
 * smallest block a host is usually given (so a host cannot walk through its own addresses).
 */
export function bucketOf(address: string): string {
  if (!address.includes(':')) return address;
  // what a dual-stack server sees for an IPv4 client
  if (/^::ffff:/i.test(address) && isIPv4(address.slice(7))) return address.slice(7);
  const [head = '', tail] = address.toLowerCase().split('::', 2);
  const left = head ? head.split(':') : [];
  const right = tail === undefined ? [] : tail ? tail.split(':') : [];
  const groups = [...left, ...Array(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right];
  return groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ''))
    .join(':');
}
