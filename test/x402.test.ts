// x402 accountless payments end to end: a quote (402 with the top-level `payment` object and the
// v2 PAYMENT-REQUIRED header), a payment made with the official SDK's client (@x402/core,
// @x402/evm: a real EIP-3009 signature by a viem private key), verified and settled by a loopback
// facilitator that checks that signature, the replay answered with X-PAYMENT-RESPONSE, the
// complete URL, the status route, and the rules: a payment is used once (also when replayed twice
// at once), only for the request it was quoted for; refused payments leave the quote payable.
import assert from 'node:assert/strict';
import { x402Client, x402HTTPClient } from '@x402/core/client';
import {
  decodePaymentRequiredHeader,
  decodePaymentResponseHeader,
  encodePaymentSignatureHeader,
} from '@x402/core/http';
import type { PaymentPayload } from '@x402/core/types';
import { registerExactEvmScheme } from '@x402/evm/exact/client';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { startChatBench, type ChatBench } from './support/chatEnv.js';
import { startX402Facilitator, type X402Facilitator } from './support/upstreams/x402Facilitator.js';
import { assertBooksBalance } from './support/books.js';
import { keepConfig } from './support/keepConfig.js';
import { config } from '../activities/config.js';
import { db } from '../activities/db.js';
import { X402_ACCOUNT_ID } from '../activities/x402/payments.js';
import { apiPost } from './support/api.js';

const PAY_TO = '0x1111111111111111111111111111111111111111';

function chatBody(text = 'Hello there', extra: Record<string, unknown> = {}) {
  return { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: text }], max_tokens: 50, ...extra };
}

/** A payer with a real key, funded at the facilitator with `units` of the token (USDC: 6 decimals). */
function payer(facilitator: X402Facilitator, units = 10_000_000n) {
  const account = privateKeyToAccount(generatePrivateKey());
  facilitator.balances.set(account.address.toLowerCase(), units);
  const client = new x402Client();
  registerExactEvmScheme(client, { signer: account });
  return { account, http: new x402HTTPClient(client) };
}

describe('x402 accountless payments', function () {
  this.timeout(60_000);
  let bench: ChatBench;
  let facilitator: X402Facilitator;
  const saved = keepConfig();

  before(async () => {
    bench = await startChatBench();
    facilitator = await startX402Facilitator();
  });
  beforeEach(() => {
    config.x402FacilitatorUrl = facilitator.url;
    config.x402PayTo = PAY_TO;
    config.x402Network = facilitator.network;
  });
  afterEach(async () => {
    config.x402FacilitatorUrl = saved.x402FacilitatorUrl;
    config.x402PayTo = saved.x402PayTo;
    config.x402Network = saved.x402Network;
    config.x402QuoteTtlSeconds = saved.x402QuoteTtlSeconds;
    config.x402FacilitatorTimeoutMs = saved.x402FacilitatorTimeoutMs;
    facilitator.hangSettle = false;
    await assertBooksBalance();
  });
  after(async () => {
    await bench.close();
    await facilitator.close();
  });

  const post = (body: unknown, headers: Record<string, string> = {}, path = '/api/v1/chat/completions') =>
    apiPost(bench.base, path, body, { headers });

  async function quote(body: unknown = chatBody(), path?: string) {
    const res = await post(body, { 'x-x402': 'true' }, path);
    const json: any = await res.json();
    assert.equal(res.status, 402, JSON.stringify(json));
    return { res, json };
  }

  /** Sign a payment for a 402 with the SDK, as a client would (from the PAYMENT-REQUIRED header). */
  async function pay(p: ReturnType<typeof payer>, res: Response, json: unknown): Promise<PaymentPayload> {
    const required = p.http.getPaymentRequiredResponse((name) => res.headers.get(name), json);
    return p.http.createPaymentPayload(required);
  }

  async function status(id: string) {
    return (await (await fetch(`${bench.base}/api/x402/status/${id}`)).json()) as any;
  }

  async function houseEntries(paymentId: string) {
    const { rows } = await db().pool.query(
      `SELECT kind, amount FROM ledger_entries WHERE account_id = $1 AND idempotency_key = $2`,
      [X402_ACCOUNT_ID, `x402:${paymentId}`],
    );
    return rows;
  }

  it('lists the endpoints that take x402', async () => {
    const r: any = await (await fetch(`${bench.base}/api/v1/x402/endpoints`)).json();
    assert.equal(r.object, 'x402.endpoint_support.list');
    const chat = r.data.find((d: any) => d.endpoint === '/api/v1/chat/completions');
    assert.deepEqual(
      { supported: chat.supported, method: chat.method, streaming: chat.streaming, schemes: chat.schemes },
      { supported: true, method: 'POST', streaming: false, schemes: ['exact'] },
    );
    assert.equal(r.meta.totalCount, r.data.length);
  });

  it('quotes only without credentials and with x-x402: true; 401 otherwise; never for a stream', async () => {
    const none = await post(chatBody());
    assert.equal(none.status, 401);
    assert.equal(((await none.json()) as any).error.code, 'missing_api_key');
    const { json, res } = await quote();
    assert.deepEqual(json.error, {
      type: 'insufficient_quota',
      code: 'insufficient_quota',
      message: json.error.message,
      param: null,
    });
    assert.match(json.error.message, /^Payment required/);
    assert.equal(json.x402Version, 1);
    const p = json.payment;
    assert.equal(p.version, 1);
    assert.match(p.paymentId, /^pay_[0-9a-f]{32}$/);
    assert.match(p.requestHash, /^sha256:[0-9a-f]{64}$/);
    assert.equal(p.statusUrl, `${bench.base}/api/x402/status/${p.paymentId}`);
    assert.equal(p.completeUrl, `${bench.base}/api/x402/complete/${p.paymentId}`);
    assert.ok(new Date(p.expiresAt).getTime() > Date.now());
    const a = p.accepted[0];
    assert.equal(a.scheme, 'exact');
    assert.equal(a.protocolScheme, 'exact');
    assert.equal(a.network, facilitator.network);
    assert.equal(a.payTo, PAY_TO);
    // USDC has 6 decimals: the quote's dollars, exactly, in token units
    assert.equal(BigInt(a.amount) * 1000n, BigInt(Math.round(Number(p.amountUsd) * 1e6)) * 1000n);
    assert.equal(a.amount, String(Math.round(Number(p.amountUsd) * 1e6)));
    assert.ok(Number(p.amountUsd) > 0);
    const header = decodePaymentRequiredHeader(res.headers.get('payment-required')!);
    assert.equal(header.accepts[0]!.amount, a.amount);
    // the hash is the body's, not its spelling: reordered keys give the same one, another body another
    const reordered = await quote({ max_tokens: 50, messages: chatBody().messages, model: 'openai/gpt-4o-mini' });
    assert.equal(reordered.json.payment.requestHash, p.requestHash);
    const other = await quote(chatBody('Something else'));
    assert.notEqual(other.json.payment.requestHash, p.requestHash);
    const withKey = await post(chatBody(), { 'x-x402': 'true', authorization: 'Bearer sk-nanogpt-nope' });
    assert.equal(withKey.status, 401);
    // text completions take it too; routes that do not are the usual 401
    const text = await post(
      { model: 'openai/gpt-4o-mini', prompt: 'Once', max_tokens: 20 },
      { 'x-x402': 'true' },
      '/v1/completions',
    );
    assert.equal(text.status, 402);
    assert.match(((await text.json()) as any).payment.paymentId, /^pay_/);
    const messages = await post(
      { model: 'openai/gpt-4o-mini', max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] },
      { 'x-x402': 'true' },
      '/v1/messages',
    );
    assert.equal(messages.status, 401);
    // a gateway without a facilitator or receiving address says so, and records nothing
    config.x402PayTo = undefined;
    const off = await post(chatBody('off'), { 'x-x402': 'true' });
    assert.equal(off.status, 503);
    assert.equal(((await off.json()) as any).error.code, 'x402_unavailable');
    config.x402PayTo = PAY_TO;
    const stream = await post(chatBody('s', { stream: true }), { 'x-x402': 'true' });
    assert.equal(stream.status, 400);
    assert.equal(((await stream.json()) as any).error.code, 'unsupported_stream');
    // the redaction header is not kept with a quote (its body is): refused, never quoted; the suffix is quoted
    const byHeader = await post(chatBody('r'), { 'x-x402': 'true', redaction: 'true' });
    assert.equal(byHeader.status, 400);
    assert.match(((await byHeader.json()) as any).error.message, /model suffix ':redaction' instead/);
    const suffixed = await post({ ...chatBody('r'), model: 'openai/gpt-4o-mini:redaction' }, { 'x-x402': 'true' });
    assert.equal(suffixed.status, 402);
    assert.equal((await status(p.paymentId)).status, 'pending');
  });

  it('pays with the SDK, replays with X-PAYMENT: answered once, with X-PAYMENT-RESPONSE; the books say so', async () => {
    const buyer = payer(facilitator);
    const { res, json } = await quote();
    const payload = await pay(buyer, res, json);
    const before = facilitator.settled.length;
    const answer = await post(chatBody(), { 'X-PAYMENT': encodePaymentSignatureHeader(payload) });
    const body: any = await answer.json();
    assert.equal(answer.status, 200, JSON.stringify(body));
    assert.equal(body.choices[0].message.content, 'Echo: Hello there');
    const receipt = decodePaymentResponseHeader(answer.headers.get('x-payment-response')!);
    assert.equal(receipt.success, true);
    assert.equal(facilitator.settled.length, before + 1);
    const transfer = facilitator.settled.at(-1)!;
    assert.equal(receipt.transaction, transfer.transaction);
    assert.equal(transfer.to, PAY_TO);
    assert.equal(transfer.from, buyer.account.address.toLowerCase());
    assert.equal(transfer.value, BigInt(json.payment.accepted[0].amount));
    assert.equal(facilitator.balances.get(buyer.account.address.toLowerCase()), 10_000_000n - transfer.value);
    // the quote's dollars were credited to the house account once, and the request billed from it
    const credits = await houseEntries(json.payment.paymentId);
    assert.deepEqual(
      credits.map((e) => [e.kind, BigInt(e.amount)]),
      [['credit', BigInt(transfer.value) * 1000n]],
    );
    assert.ok(body.cost > 0 && body.cost <= Number(json.payment.amountUsd));
    const s = await status(json.payment.paymentId);
    assert.deepEqual(
      { status: s.status, required: s.amountRequired, received: s.amountReceived, remaining: s.amountRemaining },
      { status: 'completed', required: json.payment.amountUsd, received: json.payment.amountUsd, remaining: '0' },
    );
    assert.equal(s.payTo, PAY_TO);
    assert.equal(s.readyToComplete, false);
    // used once: the same payment again is refused and nothing is settled or answered
    const again = await post(chatBody(), { 'X-PAYMENT': encodePaymentSignatureHeader(payload) });
    assert.equal(again.status, 409);
    assert.equal(((await again.json()) as any).error.code, 'payment_already_used');
    assert.equal(facilitator.settled.length, before + 1);
    assert.equal((await houseEntries(json.payment.paymentId)).length, 1);
  });

  it('race: the same payment replayed twice at once is settled and answered once', async () => {
    for (let round = 0; round < 3; round++) {
      const buyer = payer(facilitator);
      const { res, json } = await quote(chatBody(`race ${round}`));
      const header = encodePaymentSignatureHeader(await pay(buyer, res, json));
      const before = facilitator.settled.length;
      const upstreamBefore = bench.openai.requests.length;
      const answers = await Promise.all([0, 1, 2].map(() => post(chatBody(`race ${round}`), { 'X-PAYMENT': header })));
      const statuses = answers.map((a) => a.status).sort();
      assert.deepEqual(statuses, [200, 409, 409]);
      assert.equal(facilitator.settled.length, before + 1);
      assert.equal(bench.openai.requests.length, upstreamBefore + 1);
      assert.equal((await houseEntries(json.payment.paymentId)).length, 1);
    }
  });

  it('race: two payers paying one quote at once: one is settled, the other is not charged', async () => {
    const [a, b] = [payer(facilitator), payer(facilitator)];
    const { res, json } = await quote(chatBody('two payers'));
    const headers = await Promise.all([a, b].map(async (p) => encodePaymentSignatureHeader(await pay(p, res, json))));
    const before = facilitator.settled.length;
    const answers = await Promise.all(headers.map((h) => post(chatBody('two payers'), { 'X-PAYMENT': h })));
    assert.deepEqual(answers.map((r) => r.status).sort(), [200, 409]);
    assert.equal(facilitator.settled.length, before + 1);
    const paid = [a, b].filter((p) => facilitator.balances.get(p.account.address.toLowerCase()) !== 10_000_000n);
    assert.equal(paid.length, 1);
    assert.equal((await houseEntries(json.payment.paymentId)).length, 1);
  });

  it('a payment pays only for the request it was quoted for', async () => {
    const buyer = payer(facilitator);
    const { res, json } = await quote(chatBody('the quoted one'));
    const header = encodePaymentSignatureHeader(await pay(buyer, res, json));
    const other = await post(chatBody('a dearer one', { max_tokens: 60 }), { 'X-PAYMENT': header });
    assert.equal(other.status, 409);
    assert.equal(((await other.json()) as any).error.code, 'payment_request_mismatch');
    assert.equal((await status(json.payment.paymentId)).status, 'pending');
    assert.equal(facilitator.balances.get(buyer.account.address.toLowerCase()), 10_000_000n);
    // the right request still may use it
    const right = await post(chatBody('the quoted one'), { 'X-PAYMENT': header });
    assert.equal(right.status, 200);
  });

  it('refused payments (bad signature, no funds, facilitator down) leave the quote payable; a good one then pays', async () => {
    const { res, json } = await quote(chatBody('refusals'));
    const id = json.payment.paymentId;
    // a signature over another value: the facilitator recovers someone else
    const forger = payer(facilitator);
    const forged: any = structuredClone(await pay(forger, res, json));
    forged.payload.authorization.value = String(BigInt(forged.payload.authorization.value) + 1n);
    const r1 = await post(chatBody('refusals'), { 'X-PAYMENT': encodePaymentSignatureHeader(forged) });
    const b1: any = await r1.json();
    assert.equal(r1.status, 402);
    assert.match(b1.error.message, /invalid_exact_evm_payload_signature/);
    assert.equal(b1.payment.paymentId, id);
    assert.equal((await status(id)).status, 'pending');
    // no funds
    const poor = payer(facilitator, 1n);
    const r2 = await post(chatBody('refusals'), {
      'X-PAYMENT': encodePaymentSignatureHeader(await pay(poor, res, json)),
    });
    assert.equal(r2.status, 402);
    assert.match(((await r2.json()) as any).error.message, /insufficient_funds/);
    // the facilitator cannot verify: 503, nothing moved
    const buyer = payer(facilitator);
    const header = encodePaymentSignatureHeader(await pay(buyer, res, json));
    facilitator.failNext('verify', 500);
    const r3 = await post(chatBody('refusals'), { 'X-PAYMENT': header });
    assert.equal(r3.status, 503);
    assert.equal((await status(id)).status, 'pending');
    assert.equal((await houseEntries(id)).length, 0);
    // and a good payment still pays
    const r4 = await post(chatBody('refusals'), { 'X-PAYMENT': header });
    assert.equal(r4.status, 200);
    assert.equal((await houseEntries(id)).length, 1);
  });

  it('a settlement the facilitator never confirms is held as failed: no answer, no credit, never retried', async () => {
    config.x402FacilitatorTimeoutMs = 1000;
    const buyer = payer(facilitator);
    const { res, json } = await quote(chatBody('hung'));
    const header = encodePaymentSignatureHeader(await pay(buyer, res, json));
    facilitator.hangSettle = true;
    const upstreamBefore = bench.openai.requests.length;
    const r = await post(chatBody('hung'), { 'X-PAYMENT': header });
    assert.equal(r.status, 502);
    assert.equal(((await r.json()) as any).error.code, 'x402_settlement_unknown');
    assert.equal((await status(json.payment.paymentId)).status, 'failed');
    assert.equal((await houseEntries(json.payment.paymentId)).length, 0);
    assert.equal(bench.openai.requests.length, upstreamBefore);
    facilitator.hangSettle = false;
    const again = await post(chatBody('hung'), { 'X-PAYMENT': header });
    assert.equal(again.status, 409);
  });

  it('completes by the complete URL, also after the paid request failed upstream', async () => {
    const buyer = payer(facilitator);
    const { res, json } = await quote(chatBody('complete me'));
    const complete = json.payment.completeUrl as string;
    // no payment yet: the complete URL answers the quote again
    const unpaid = await fetch(complete, { method: 'POST' });
    assert.equal(unpaid.status, 402);
    // paid, but every route fails: the payment stays paid, ready to complete
    bench.openai.script({ status: 500 });
    bench.openrouter.script({ status: 500 });
    const header = encodePaymentSignatureHeader(await pay(buyer, res, json));
    const failed = await fetch(complete, { method: 'POST', headers: { 'X-PAYMENT': header } });
    assert.equal(failed.status, 502);
    assert.ok(failed.headers.get('x-payment-response'));
    const s = await status(json.payment.paymentId);
    assert.equal(s.status, 'paid');
    assert.equal(s.readyToComplete, true);
    const done = await fetch(complete, { method: 'POST' });
    const body: any = await done.json();
    assert.equal(done.status, 200, JSON.stringify(body));
    assert.equal(body.choices[0].message.content, 'Echo: complete me');
    assert.equal((await status(json.payment.paymentId)).status, 'completed');
    assert.equal((await fetch(complete, { method: 'POST' })).status, 409);
    assert.equal((await houseEntries(json.payment.paymentId)).length, 1);
  });

  it('an expired quote takes no payment; an unknown one is 404', async () => {
    config.x402QuoteTtlSeconds = 10;
    const buyer = payer(facilitator);
    const { res, json } = await quote(chatBody('late'));
    await db().pool.query(`UPDATE x402_payments SET expires_at = now() - interval '1 second' WHERE id = $1`, [
      json.payment.paymentId,
    ]);
    const late = await post(chatBody('late'), {
      'X-PAYMENT': encodePaymentSignatureHeader(await pay(buyer, res, json)),
    });
    assert.equal(late.status, 409);
    assert.equal(((await late.json()) as any).error.code, 'payment_expired');
    assert.equal((await status(json.payment.paymentId)).status, 'expired');
    assert.equal((await fetch(`${bench.base}/api/x402/status/pay_nope`)).status, 404);
    assert.equal(facilitator.balances.get(buyer.account.address.toLowerCase()), 10_000_000n);
  });
});
