// A loopback confidential-inference provider (the OpenAI-compatible TEE API of dstack/Phala-style
// services), with a real secp256k1 signing key (viem), as the gateway's providers/tee uses it:
//   POST /v1/chat/completions                      OpenAI chat answer, id `chatcmpl-<hex>`; the answer is
//        signed: text = sha256(request body):sha256(response body) (hex), EIP-191 personal-sign
//   GET  /v1/attestation/report?model&nonce&signing_algo   {signing_address, signing_algo, request_nonce,
//        intel_quote, nvidia_payload (a JSON string), event_log, info}
//   GET  /v1/signature/{chat_id}?model&signing_algo        {text, signature, signing_address}; 404 unknown id
// `Authorization: Bearer <key>` is checked (401). Faults a test can set: `tamper` (the signature of
// another text is served: it recovers to another address), `wrongNonce` (the report echoes a nonce
// it was not sent), `impostor` (answers signed by a key the report does not attest),
// `alterResponse` (the enclave signs its answer, but the body that leaves is changed on the way:
// the signature is valid, over a response nobody received), `otherRecord` (the signature route
// serves the genuine record of the previous answer instead of the one asked for).
import http from 'node:http';
import { createHash, randomBytes } from 'node:crypto';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { listenOnLoopback, closeServer } from './loopback.js';

export interface TeeUpstream {
  url: string;
  apiKey: string;
  /** the enclave's attested signing address */
  address: string;
  faults: { tamper: boolean; wrongNonce: boolean; impostor: boolean; alterResponse: boolean; otherRecord: boolean };
  /** attestation requests seen (their nonces) and signature requests (chat ids) */
  nonces: string[];
  signatureIds: string[];
  close(): Promise<void>;
}

const sha256 = (s: string | Buffer) => createHash('sha256').update(s).digest('hex');

export async function startTeeUpstream(): Promise<TeeUpstream> {
  const apiKey = `tee-${randomBytes(8).toString('hex')}`;
  const enclave = privateKeyToAccount(generatePrivateKey());
  const impostor = privateKeyToAccount(generatePrivateKey());
  const records = new Map<string, { text: string; signature: string }>();
  const up: TeeUpstream = {
    url: '',
    apiKey,
    address: enclave.address,
    faults: { tamper: false, wrongNonce: false, impostor: false, alterResponse: false, otherRecord: false },
    nonces: [],
    signatureIds: [],
    close: () => closeServer(server),
  };
  const json = (res: http.ServerResponse, status: number, body: unknown, sent?: string) => {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json' }).end(sent ?? text);
    return text;
  };

  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const rawBytes = Buffer.concat(chunks);
    const raw = rawBytes.toString();
    if (req.headers.authorization !== `Bearer ${apiKey}`)
      return json(res, 401, { error: { message: 'Invalid API key', type: 'authentication_error' } });
    const url = new URL(req.url ?? '/', 'http://x');
    if (req.method === 'POST' && url.pathname === '/v1/chat/completions') {
      const body = JSON.parse(raw) as { model: string; messages: { content: string }[] };
      const id = `chatcmpl-${randomBytes(12).toString('hex')}`;
      const answer = {
        id,
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model: body.model,
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: `Sealed answer to: ${body.messages.at(-1)?.content}` },
            finish_reason: 'stop',
          },
        ],
        usage: { prompt_tokens: 12, completion_tokens: 6, total_tokens: 18 },
      };
      // what the enclave signs is what it wrote; with `alterResponse` something else arrives
      const altered = JSON.stringify({
        ...answer,
        choices: [{ ...answer.choices[0], message: { role: 'assistant', content: 'Altered on the way' } }],
      });
      const text = json(res, 200, answer, up.faults.alterResponse ? altered : undefined);
      const signed = `${sha256(rawBytes)}:${sha256(text)}`;
      const signer = up.faults.impostor ? impostor : enclave;
      // tampered: the record keeps its text, but the signature is over something else
      const signature = await signer.signMessage({ message: up.faults.tamper ? `${signed}x` : signed });
      records.set(id, { text: signed, signature });
      return;
    }
    if (req.method === 'GET' && url.pathname === '/v1/attestation/report') {
      const nonce = url.searchParams.get('nonce') ?? '';
      up.nonces.push(nonce);
      return json(res, 200, {
        signing_address: enclave.address,
        signing_algo: url.searchParams.get('signing_algo') ?? 'ecdsa',
        request_nonce: up.faults.wrongNonce ? randomBytes(32).toString('hex') : nonce,
        intel_quote: randomBytes(64).toString('hex'),
        nvidia_payload: JSON.stringify({ nonce, evidence_list: [], arch: 'HOPPER' }),
        event_log: '[]',
        info: { app_name: 'loopback-tee', model: url.searchParams.get('model') },
      });
    }
    const sig = /^\/v1\/signature\/([^/]+)$/.exec(url.pathname);
    if (req.method === 'GET' && sig) {
      const id = decodeURIComponent(sig[1]);
      up.signatureIds.push(id);
      const rec = records.get(id);
      const other = [...records.keys()].reverse().find((k) => k !== id);
      if (rec && up.faults.otherRecord && other)
        return json(res, 200, { ...records.get(other), signing_address: enclave.address, signing_algo: 'ecdsa' });
      if (!rec) return json(res, 404, { error: { message: `Chat id not found or expired: ${id}` } });
      return json(res, 200, { ...rec, signing_address: enclave.address, signing_algo: 'ecdsa' });
    }
    json(res, 404, { error: { message: `no route ${req.method} ${url.pathname}` } });
  });
  up.url = `${(await listenOnLoopback(server)).origin}/v1`;
  return up;
}
