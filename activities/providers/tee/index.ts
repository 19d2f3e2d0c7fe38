// Confidential-inference upstreams (protocol `openai-tee`): the common OpenAI-compatible API of
// TEE inference services (dstack/Phala-style, as RedPill and NEAR AI serve it). Chat is OpenAI's
// protocol unchanged (the same adapter); beside it, GET /v1/attestation/report?model&nonce&signing_algo
// and GET /v1/signature/{chat_id}?model&signing_algo give the enclave's proofs.
import { readJson, send, statusError } from '../http.js';
import { openaiChat } from '../openai/index.js';
import { quirksFor } from '../openai/quirks.js';
import { requestHeaders } from '../openai/request.js';
import type { AttestationAdapter, Provider, ProviderTarget } from '../types.js';

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

export const teeProvider: Provider = {
  protocol: 'openai-tee',
  chat: openaiChat,
  attestation: teeAttestation,
};
