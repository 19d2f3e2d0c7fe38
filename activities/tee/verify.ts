// The gateway's own checks of a TEE model's proofs (wire-details "TEE verification"), so a caller
// gets "verified" from us and not merely the upstream's word. A signature record `{text, signature,
// signing_address}` is an EIP-191 personal-sign secp256k1 signature over `text`; it is valid when the
// address recovered from (text, signature) is the one the attestation report names. The report must
// echo the nonce we sent (a replayed old report would not). viem does the elliptic-curve work; it
// is imported by the first signature check, not at start (about 30 MB resident that an API process
// without TEE traffic never needs: README, Memory of one API process).

/** An EVM address in any letter case (viem's `isAddress` with `strict: false`). */
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
/** Hex text, as viem's `isHex` accepts it. */
const HEX = /^0x[0-9a-fA-F]*$/;

export interface TeeCheck {
  ok: boolean;
  /** why not, in words a person can act on */
  reason?: string;
}

/** The signing address an attestation report names (lower case), or undefined. */
export function attestedAddress(report: Record<string, unknown>): string | undefined {
  const a = report.signing_address;
  return typeof a === 'string' && ADDRESS.test(a) ? a.toLowerCase() : undefined;
}

/** The report echoes `nonce` (dstack reports call it `request_nonce`, others `nonce`). */
export function checkNonce(report: Record<string, unknown>, nonce: string): TeeCheck {
  const echoed = report.request_nonce ?? report.nonce;
  return echoed === nonce
    ? { ok: true }
    : { ok: false, reason: 'the attestation report does not echo the nonce sent with it' };
}

/**
 * The signed `text` (`<sha256 of the request body>:<sha256 of the response body>`) names the bodies
 * the gateway itself sent and received: a signature valid for another request, or a response body
 * changed on the way, fails here.
 */
export function checkBodies(text: string, sent: { request: string; response: string }): TeeCheck {
  const [request, response, ...rest] = text.toLowerCase().split(':');
  if (rest.length || !/^[0-9a-f]{64}$/.test(request ?? '') || !/^[0-9a-f]{64}$/.test(response ?? ''))
    return { ok: false, reason: 'the signed text is not <sha256 of the request>:<sha256 of the response>' };
  if (request !== sent.request)
    return { ok: false, reason: 'the signed request hash is not the sha256 of the request body the gateway sent' };
  if (response !== sent.response)
    return {
      ok: false,
      reason: 'the signed response hash is not the sha256 of the response body the gateway received',
    };
  return { ok: true };
}

/** The signature over `text` recovers to `address` (the attested one), and the record names it too. */
export async function checkSignature(record: Record<string, unknown>, address: string): Promise<TeeCheck> {
  const { text, signature, signing_address: named } = record;
  if (typeof text !== 'string' || typeof signature !== 'string' || !HEX.test(signature))
    return { ok: false, reason: 'the signature record has no text or no hex signature' };
  if (typeof named !== 'string' || named.toLowerCase() !== address)
    return { ok: false, reason: 'the signature record names another signing address than the attested one' };
  const { recoverMessageAddress } = await import('viem');
  let recovered: string;
  try {
    recovered = (await recoverMessageAddress({ message: text, signature: signature as `0x${string}` })).toLowerCase();
  } catch {
    return { ok: false, reason: 'the signature is not a valid secp256k1 signature' };
  }
  return recovered === address
    ? { ok: true }
    : { ok: false, reason: 'the signature does not recover to the attested signing address' };
}
