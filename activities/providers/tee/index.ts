// Confidential-inference upstreams (protocol `openai-tee`): the common OpenAI-compatible API of
// TEE inference services (dstack/Phala-style, as RedPill and NEAR AI serve it). Chat is OpenAI's
// protocol unchanged (the same adapter); beside it, GET /v1/attestation/report?model&nonce&signing_algo
// and GET /v1/signature/{chat_id}?model&signing_algo give the enclave's proofs. The enclave signs
// `sha256(request body):sha256(response body)`, so a non-streamed answer comes back with the
// sha256 of the exact bytes the gateway sent and received (`bodyDigests`), for the gateway to
// compare with what was signed (activities/tee/tee.ts).
import { readJson, send, statusError, type WireDigests } from '../http.js';
import { openaiChat } from '../openai/index.js';
import { openaiPassThrough } from '../openai/native.js';
import { quirksFor } from '../openai/quirks.js';
import { requestHeaders } from '../openai/request.js';
import type { AttestationAdapter, ChatAdapter, Provider, ProviderTarget } from '../types.js';
import type { InferenceResult } from '../../core/types.js';

async function getJson(target: ProviderTarget, path: string, signal: AbortSignal): Promise<Record<string, unknown>> {
  const url = `${target.baseUrl.replace(/\/+$/, '')}${path}`;
  const headers = requestHeaders(target, quirksFor(target.providerId, target.options), false);
  delete headers['content-type'];
  const res = await send(target.providerId, url, { method: 'GET', headers, signal });
  if (res.status < 200 || res.status >= 300) throw await statusError(target.providerId, res);
  const json = await readJson(target.providerId, res);
  return json !== null && typeof json === 'object' && !Array.isArray(json) ? json : { value: json };
}

const teeAttestation: AttestationAdapter = {
  report: (target, model, nonce, signingAlgo, signal) =>
    getJson(target, `/attestation/report?${new URLSearchParams({ model, nonce, signing_algo: signingAlgo })}`, signal),
  signature: (target, model, chatId, signingAlgo, signal) =>
    getJson(
      target,
      `/signature/${encodeURIComponent(chatId)}?${new URLSearchParams({ model, signing_algo: signingAlgo })}`,
      signal,
    ),
};

/** Run one OpenAI-protocol call with its bodies' digests recorded, and give them back on the result. */
async function digested(
  target: ProviderTarget,
  call: (t: ProviderTarget) => Promise<InferenceResult>,
): Promise<InferenceResult> {
  const wire: WireDigests = {};
  const result = await call({ ...target, wire });
  if (wire.sent && wire.received) result.bodyDigests = { request: wire.sent, response: wire.received };
  return result;
}

const teeChat: ChatAdapter = {
  complete: (req, target, signal) => digested(target, (t) => openaiChat.complete(req, t, signal)),
  stream: openaiChat.stream,
  native: {
    ...openaiPassThrough,
    complete: (native, req, target, signal) =>
      digested(target, (t) => openaiPassThrough.complete(native, req, t, signal)),
  },
};

export const teeProvider: Provider = {
  protocol: 'openai-tee',
  chat: teeChat,
  attestation: teeAttestation,
};
