// sha256 as hex text, the one way the gateway hashes: API keys and session tokens on every request
// (to find them), and the exact bytes of TEE exchanges.
import * as crypto from 'node:crypto';

/**
 * `crypto.hash` (Node 20.12 and later) does it in one call, without a Hash object, in about a third
 * of the time of createHash().update().digest() (hashing the key was about 1.5% of a chat
 * request's CPU in a profile); older Node 20 takes the long way.
 */
export const sha256Hex: (data: string | Buffer) => string = crypto.hash
  ? (data) => crypto.hash('sha256', data, 'hex')
  : (data) => crypto.createHash('sha256').update(data).digest('hex');
