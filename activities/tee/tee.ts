// TEE models (`TEE/` ids): their attestation reports and answer signatures, passed through from the
// route's confidential-inference upstream (providers/tee), and the gateway's verification of an
// answer: a fresh nonce's report, the answer's signature record, and both checked (verify.ts).
import { randomBytes } from 'node:crypto';
import type { ModelInfo, Route } from '../catalog/catalog.js';
import { RequestError } from '../core/errors.js';
import { capability, optionalCapability, targetFor } from '../providers/registry.js';
import { type BodyDigests, keepBodyDigests, keptBodyDigests } from './digests.js';
import { attestedAddress, checkBodies, checkNonce, checkSignature } from './verify.js';

/** Whether a route's provider proves its answers (a confidential-inference upstream: attestation). */
export const attests = (route: Route): boolean => optionalCapability(route, 'attestation') !== undefined;

/**
 * A TEE model: one served by a provider that attests (the catalog names them `TEE/`, as the spec
 * says). Its answers are verified, it streams through chat completions only, no advisor sees it.
 */
export const isTeeModel = (model: ModelInfo): boolean => model.routes.some(attests);

/** The route that attests a TEE model: its first usable route whose protocol has attestation. */
export function attestingRoute(model: ModelInfo): Route {
  const route = model.routes.find((r) => r.available && attests(r));
  if (!route)
    throw new RequestError(
      400,
      'invalid_parameter_value',
      `Model '${model.id}' is not a TEE model served here: attestation is for models whose id starts with 'TEE/'.`,
      { param: 'model' },
    );
  return route;
}

export function attestationReport(route: Route, nonce: string, signingAlgo: string, signal: AbortSignal) {
  return capability(route, 'attestation').report(targetFor(route), route.upstreamModel, nonce, signingAlgo, signal);
}

function answerSignature(route: Route, chatId: string, signingAlgo: string, signal: AbortSignal) {
  return capability(route, 'attestation').signature(targetFor(route), route.upstreamModel, chatId, signingAlgo, signal);
}

/** What a TEE answer carries (`tee_verification`, README "TEE models"). */
export interface TeeVerification {
  verified: boolean;
  signing_address: string | null;
  signing_algo: 'ecdsa';
  /** the id to pass to GET /api/v1/tee/signature/{requestId} */
  request_id: string;
  /** the signed text: sha256(request body):sha256(response body) */
  text: string | null;
  /**
   * whether `text` was compared with the sha256 of the bodies the gateway sent and received (false:
   * it kept none for this id: a streamed answer, or one older than the window)
   */
  bodies_checked: boolean;
  reason?: string;
}

/**
 * Verify one answer of `route` (its upstream id `chatId`): attestation with a fresh nonce, the
 * signature, and the signed text against the sha256 of the bodies the gateway exchanged for it
 * (`digests`, just recorded by the call: kept for later lookups; otherwise the ones kept earlier).
 * Never throws: an upstream that cannot prove its answer gives `verified: false` and why.
 * `record` is the upstream's signature record, when it gave one. With `rethrow`, an upstream that
 * fails to answer throws its RequestError instead (the proof routes pass its status on: an unknown
 * chat id is the upstream's 404).
 */
export async function verifyAnswer(
  route: Route,
  chatId: string,
  signal: AbortSignal,
  opts: { rethrow?: boolean; digests?: BodyDigests } = {},
): Promise<{ verification: TeeVerification; record?: Record<string, unknown> }> {
  const out: TeeVerification = {
    verified: false,
    signing_address: null,
    signing_algo: 'ecdsa',
    request_id: chatId,
    text: null,
    bodies_checked: false,
  };
  let digests: BodyDigests | null = opts.digests ?? null;
  try {
    // kept for a later signature lookup; this answer is compared with them either way
    if (opts.digests) await keepBodyDigests(route.provider.id, chatId, opts.digests);
    else digests = await keptBodyDigests(route.provider.id, chatId);
  } catch (err) {
    // the gateway's own store failing: the proof routes say so (500); an answer is still checked
    // against the digests of its own call
    if (opts.rethrow) throw err;
  }
  let record: Record<string, unknown> | undefined;
  const failed = (reason: string | undefined) => ({ verification: { ...out, reason }, record });
  try {
    const nonce = randomBytes(32).toString('hex');
    const report = await attestationReport(route, nonce, 'ecdsa', signal);
    const address = attestedAddress(report);
    if (!address) return failed('the attestation report names no signing address');
    out.signing_address = address;
    const fresh = checkNonce(report, nonce);
    if (!fresh.ok) return failed(fresh.reason);
    record = await answerSignature(route, chatId, 'ecdsa', signal);
    out.text = typeof record.text === 'string' ? record.text : null;
    const signed = await checkSignature(record, address);
    if (!signed.ok) return failed(signed.reason);
    if (digests) {
      out.bodies_checked = true;
      const bodies = checkBodies(out.text!, digests);
      if (!bodies.ok) return failed(bodies.reason);
    }
    return { verification: { ...out, verified: true }, record };
  } catch (err) {
    if (opts.rethrow) throw err;
    return failed(`the upstream's proofs could not be fetched: ${(err as Error).message}`);
  }
}
