// Confidential inference (TEE models): the attestation capability's contract.
import type { ProviderTarget } from './target.js';

/**
 * A confidential-inference upstream's proofs (wire-details "TEE verification"): the attestation
 * report of the enclave serving `model` (echoing `nonce`, naming the `signing_address` its key
 * signs with) and the signature record of one of its answers (`{text, signature,
 * signing_address}`). Both are the upstream's JSON as it came: the gateway passes them through and
 * checks them itself (activities/tee/verify.ts). Failures are RequestErrors, as for chat.
 */
export interface AttestationAdapter {
  report(
    target: ProviderTarget,
    model: string,
    nonce: string,
    signingAlgo: string,
    signal: AbortSignal,
  ): Promise<Record<string, unknown>>;
  signature(
    target: ProviderTarget,
    model: string,
    chatId: string,
    signingAlgo: string,
    signal: AbortSignal,
  ): Promise<Record<string, unknown>>;
}
