// TEE models: a loopback confidential-inference provider with a real secp256k1 key
// (support/upstreams/tee.ts). A chat answer of a `TEE/` model is verified by the gateway (fresh
// nonce's attestation, the answer's EIP-191 signature recovered to the attested address) and says
// so; a tampered signature, an impostor key or a report that does not echo the nonce is flagged on
// the answer and refused by the proof routes; the proofs pass through; streaming a TEE model through
// the message-style API is refused.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { recoverMessageAddress } from 'viem';
import { newAccount, startApi } from './support/api.js';
import { assertBooksBalance } from './support/books.js';
import { useProviderEnv } from './support/providerEnv.js';
import { startTeeUpstream, type TeeUpstream } from './support/upstreams/tee.js';
import { keepConfig } from './support/keepConfig.js';
import { config } from '../activities/config.js';

const MODEL = 'TEE/llama-3.3-70b-instruct';

describe('TEE models', function () {
  this.timeout(60_000);
  const saved = keepConfig();
  let api: Awaited<ReturnType<typeof startApi>>;
  let up: TeeUpstream;
  let restoreEnv: () => Promise<void>;
  let key: string;

  before(async () => {
    up = await startTeeUpstream();
    restoreEnv = await useProviderEnv({ REDPILL_API_KEY: up.apiKey, REDPILL_BASE_URL: up.url });
    api = await startApi();
    ({ key } = await newAccount('5'));
  });
  after(async () => {
    await api.close();
    await up.close();
    await restoreEnv();
  });
  afterEach(async () => {
    up.faults = { tamper: false, wrongNonce: false, impostor: false, alterResponse: false, otherRecord: false };
    await assertBooksBalance();
  });

  const auth = () => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });
  const chat = (extra: Record<string, unknown> = {}) =>
    fetch(`${api.base}/v1/chat/completions`, {
      method: 'POST',
      headers: auth(),
      body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'Is this sealed?' }], ...extra }),
    });
  const get = (path: string) => fetch(`${api.base}${path}`, { headers: auth() });
  /** the signature the upstream serves for an id, read straight from it */
  const signatureOf = async (id: string): Promise<`0x${string}`> => {
    const res = await fetch(`${up.url}/signature/${id}?model=x&signing_algo=ecdsa`, {
      headers: { authorization: `Bearer ${up.apiKey}` },
    });
    return (await res.json()).signature;
  };

  it('verifies a chat answer against a fresh attestation and says so', async () => {
    const res = await chat();
    const body = await res.json();
    assert.equal(res.status, 200, JSON.stringify(body));
    assert.match(body.choices[0].message.content, /Sealed answer/);
    assert.equal(res.headers.get('x-tee-verified'), 'true');
    const v = body.tee_verification;
    assert.equal(v.verified, true, v.reason);
    assert.equal(v.signing_address, up.address.toLowerCase());
    assert.equal(v.request_id, body.id);
    assert.match(body.id, /^chatcmpl-[0-9a-f]{24}$/);
    assert.match(v.text, /^[0-9a-f]{64}:[0-9a-f]{64}$/);
    assert.equal(v.bodies_checked, true);
    // the gateway asked with a fresh nonce, and for this answer's signature
    assert.match(up.nonces.at(-1)!, /^[0-9a-f]{64}$/);
    assert.equal(up.signatureIds.at(-1), body.id);
    assert.ok(body.cost > 0);
  });

  it('verifies a translated answer too (pass-through off): the id is still the upstream chat id', async () => {
    config.passThrough = false;
    try {
      const res = await chat();
      const body = await res.json();
      assert.equal(res.status, 200, JSON.stringify(body));
      assert.equal(body.tee_verification.verified, true, body.tee_verification.reason);
      assert.equal(up.signatureIds.at(-1), body.id);
      assert.match(body.id, /^chatcmpl-[0-9a-f]{24}$/);
    } finally {
      config.passThrough = saved.passThrough;
    }
  });

  it('flags an answer whose signature was tampered with, or signed by a key not attested', async () => {
    for (const fault of ['tamper', 'impostor'] as const) {
      up.faults[fault] = true;
      const res = await chat();
      const body = await res.json();
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('x-tee-verified'), 'false', fault);
      assert.equal(body.tee_verification.verified, false, fault);
      assert.match(body.tee_verification.reason, /does not recover to the attested signing address/);
      // and the signature route refuses it rather than passing it on
      const sig = await get(`/api/v1/tee/signature/${body.id}?model=${encodeURIComponent(MODEL)}&signing_algo=ecdsa`);
      assert.equal(sig.status, 502);
      assert.equal(sig.headers.get('x-tee-verified'), 'false');
      assert.equal((await sig.json()).error.code, 'tee_signature_invalid');
      up.faults[fault] = false;
    }
  });

  it('flags an answer whose response body changed on the way (the signature itself is genuine)', async () => {
    up.faults.alterResponse = true;
    const res = await chat();
    const body = await res.json();
    assert.equal(res.status, 200, JSON.stringify(body));
    assert.equal(body.choices[0].message.content, 'Altered on the way');
    assert.equal(res.headers.get('x-tee-verified'), 'false');
    const v = body.tee_verification;
    assert.equal(v.verified, false);
    assert.equal(v.bodies_checked, true);
    assert.match(v.reason, /response hash is not the sha256 of the response body the gateway received/);
    // the signature recovers to the enclave: only the comparison with the bytes received catches it
    const rec = up.signatureIds.at(-1)!;
    assert.equal(rec, body.id);
    // and the signature route, later, compares with the digests kept for this answer
    up.faults.alterResponse = false;
    const sig = await get(`/api/v1/tee/signature/${body.id}?model=${encodeURIComponent(MODEL)}&signing_algo=ecdsa`);
    assert.equal(sig.status, 502);
    const err = (await sig.json()).error;
    assert.equal(err.code, 'tee_signature_invalid');
    assert.match(err.message, /response body the gateway received/);
  });

  it('flags an answer whose signature is the record of another request', async () => {
    const first = await (await chat()).json();
    assert.equal(first.tee_verification.verified, true, first.tee_verification.reason);
    up.faults.otherRecord = true;
    const res = await fetch(`${api.base}/v1/chat/completions`, {
      method: 'POST',
      headers: auth(),
      body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'A different question' }] }),
    });
    const body = await res.json();
    assert.equal(res.status, 200, JSON.stringify(body));
    const v = body.tee_verification;
    assert.equal(v.verified, false);
    // a genuine signature by the attested key, over another request's bodies
    assert.equal(await recoverMessageAddress({ message: v.text, signature: await signatureOf(body.id) }), up.address);
    assert.match(v.reason, /request hash is not the sha256 of the request body the gateway sent/);
    const sig = await get(`/api/v1/tee/signature/${body.id}?model=${encodeURIComponent(MODEL)}&signing_algo=ecdsa`);
    assert.equal(sig.status, 502);
    assert.match((await sig.json()).error.message, /request body the gateway sent/);
  });

  it('flags an answer when the attestation does not echo the nonce', async () => {
    up.faults.wrongNonce = true;
    const body = await (await chat()).json();
    assert.equal(body.tee_verification.verified, false);
    assert.match(body.tee_verification.reason, /does not echo the nonce/);
    const nonce = randomBytes(32).toString('base64');
    const res = await get(
      `/api/v1/tee/attestation?model=${encodeURIComponent(MODEL)}&nonce=${encodeURIComponent(nonce)}`,
    );
    assert.equal(res.status, 502);
    assert.equal((await res.json()).error.code, 'tee_attestation_invalid');
  });

  it('passes the attestation report through, echoing the nonce', async () => {
    const nonce = randomBytes(32).toString('base64');
    const res = await get(
      `/api/v1/tee/attestation?model=${encodeURIComponent(MODEL)}&nonce=${encodeURIComponent(nonce)}`,
    );
    const report = await res.json();
    assert.equal(res.status, 200, JSON.stringify(report));
    assert.equal(report.request_nonce, nonce);
    assert.equal(report.signing_address, up.address);
    assert.equal(typeof report.intel_quote, 'string');
    assert.equal(JSON.parse(report.nvidia_payload).nonce, nonce);
    assert.equal(up.nonces.at(-1), nonce);
    // the /v1 alias is the same route
    const again = await get(
      `/v1/tee/attestation?model=${encodeURIComponent(MODEL)}&nonce=${encodeURIComponent(nonce)}`,
    );
    assert.equal(again.status, 200);
    assert.equal((await again.json()).request_nonce, nonce);
  });

  it('passes a verified signature through; a client can check it itself', async () => {
    const answer = await (await chat()).json();
    const res = await get(`/api/v1/tee/signature/${answer.id}?model=${encodeURIComponent(MODEL)}&signing_algo=ecdsa`);
    const rec = await res.json();
    assert.equal(res.status, 200, JSON.stringify(rec));
    const alias = await get(`/v1/tee/signature/${answer.id}?model=${encodeURIComponent(MODEL)}&signing_algo=ecdsa`);
    assert.equal(alias.status, 200);
    assert.equal((await alias.json()).signature, rec.signature);
    assert.equal(res.headers.get('x-tee-verified'), 'true');
    assert.equal(rec.verification.verified, true);
    assert.equal(rec.verification.bodies_checked, true);
    assert.equal(await recoverMessageAddress({ message: rec.text, signature: rec.signature }), up.address);
    assert.equal(rec.signing_address, up.address);
  });

  it('refuses bad proof requests with clear errors', async () => {
    const m = encodeURIComponent(MODEL);
    const cases: [string, number, string][] = [
      [`/api/v1/tee/attestation?nonce=${'a'.repeat(16)}`, 400, 'missing_required_parameter'],
      [`/api/v1/tee/attestation?model=${m}`, 400, 'invalid_parameter_value'],
      [`/api/v1/tee/attestation?model=openai%2Fgpt-4o-mini&nonce=${'a'.repeat(16)}`, 400, 'invalid_parameter_value'],
      [`/api/v1/tee/signature/chatcmpl-x?model=${m}&signing_algo=rsa`, 400, 'invalid_parameter_value'],
      [`/api/v1/tee/attestation?model=nope%2Fnothing&nonce=${'a'.repeat(16)}`, 404, 'model_not_found'],
    ];
    for (const [path, status, code] of cases) {
      const res = await get(path);
      assert.equal(res.status, status, path);
      assert.equal((await res.json()).error.code, code, path);
    }
    // an id the provider does not know: its 404, as ours
    const unknown = await get(`/api/v1/tee/signature/chatcmpl-unknown?model=${m}&signing_algo=ecdsa`);
    assert.equal(unknown.status, 404);
    assert.equal((await unknown.json()).error.code, 'not_found');
    const anon = await fetch(`${api.base}/api/v1/tee/attestation?model=${m}&nonce=${'a'.repeat(16)}`);
    assert.equal(anon.status, 401);
  });

  it('refuses to stream a TEE model through the message-style API', async () => {
    const res = await fetch(`${api.base}/v1/messages`, {
      method: 'POST',
      headers: auth(),
      body: JSON.stringify({ model: MODEL, max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    const body = await res.json();
    assert.equal(res.status, 400);
    assert.equal(body.type, 'error');
    assert.match(body.error.message, /chat\/completions/);
  });
});
