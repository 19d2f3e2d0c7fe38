// x402 accountless payment on POST /api/v1/audio/speech, as on chat: no key and `X-X402: true`
// gets a 402 quote priced at the input's worst case; a payment signed with the official SDK and
// settled by the loopback facilitator replays the request (audio bytes, X-PAYMENT-RESPONSE), once;
// a paid request whose provider failed stays payable and completes by its complete URL; a stream
// is never quoted.
import assert from 'node:assert/strict';
import { x402Client, x402HTTPClient } from '@x402/core/client';
import { decodePaymentResponseHeader, encodePaymentSignatureHeader } from '@x402/core/http';
import { registerExactEvmScheme } from '@x402/evm/exact/client';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { startApi } from './support/api.js';
import { assertBooksBalance } from './support/books.js';
import { keepConfig } from './support/keepConfig.js';
import { useProviderEnv } from './support/providerEnv.js';
import {
  speechEnv,
  startElevenLabsUpstream,
  startOpenAISpeechUpstream,
  type SpeechUpstream,
} from './support/upstreams/speech.js';
import { startX402Facilitator, type X402Facilitator } from './support/upstreams/x402Facilitator.js';
import { perMillion, SPEECH_PER_MILLION_CHARS } from './support/prices.js';
import { config } from '../activities/config.js';
import { db } from '../activities/db.js';
import { X402_ACCOUNT_ID } from '../activities/x402/payments.js';

const PAY_TO = '0x2222222222222222222222222222222222222222';
const ENV = ['OPENAI_API_KEY', 'OPENAI_BASE_URL', 'ELEVENLABS_API_KEY', 'ELEVENLABS_BASE_URL', 'OPENROUTER_API_KEY'];

describe('x402 on audio speech', function () {
  this.timeout(60_000);
  const saved = keepConfig();
  let api: Awaited<ReturnType<typeof startApi>>;
  let openai: SpeechUpstream;
  let eleven: SpeechUpstream;
  let facilitator: X402Facilitator;
  let restoreEnv: () => Promise<void>;

  before(async () => {
    openai = await startOpenAISpeechUpstream();
    eleven = await startElevenLabsUpstream();
    facilitator = await startX402Facilitator();
    restoreEnv = await useProviderEnv(speechEnv(openai, eleven), ENV);
    api = await startApi();
    config.x402FacilitatorUrl = facilitator.url;
    config.x402PayTo = PAY_TO;
    config.x402Network = facilitator.network;
  });
  after(async () => {
    config.x402FacilitatorUrl = saved.x402FacilitatorUrl;
    config.x402PayTo = saved.x402PayTo;
    config.x402Network = saved.x402Network;
    await api.close();
    await openai.close();
    await eleven.close();
    await facilitator.close();
    await restoreEnv();
  });
  afterEach(async () => {
    openai.script();
    await assertBooksBalance();
  });

  const post = (body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${api.base}/api/v1/audio/speech`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });

  function payer(units = 10_000_000n) {
    const account = privateKeyToAccount(generatePrivateKey());
    facilitator.balances.set(account.address.toLowerCase(), units);
    const client = new x402Client();
    registerExactEvmScheme(client, { signer: account });
    return new x402HTTPClient(client);
  }

  async function quote(body: unknown) {
    const res = await post(body, { 'X-X402': 'true' });
    const json: any = await res.json();
    assert.equal(res.status, 402, JSON.stringify(json));
    return { res, json };
  }

  async function paymentHeader(res: Response, json: unknown): Promise<string> {
    const http = payer();
    const required = http.getPaymentRequiredResponse((name) => res.headers.get(name), json);
    return encodePaymentSignatureHeader(await http.createPaymentPayload(required));
  }

  const houseEntries = async (paymentId: string) =>
    (
      await db().pool.query(`SELECT kind, amount FROM ledger_entries WHERE account_id = $1 AND idempotency_key = $2`, [
        X402_ACCOUNT_ID,
        `x402:${paymentId}`,
      ])
    ).rows;
  const status = async (id: string) => (await (await fetch(`${api.base}/api/x402/status/${id}`)).json()) as any;

  it('is listed among the endpoints that take x402', async () => {
    const r: any = await (await fetch(`${api.base}/api/v1/x402/endpoints`)).json();
    const speech = r.data.find((d: any) => d.endpoint === '/api/v1/audio/speech');
    assert.deepEqual(
      { supported: speech.supported, method: speech.method, streaming: speech.streaming },
      { supported: true, method: 'POST', streaming: false },
    );
  });

  it('quotes the input’s price, pays with the SDK, answers the audio once with X-PAYMENT-RESPONSE', async () => {
    const input = 'Pay per character, no account.';
    const body = { model: 'openai/tts-1', input, voice: 'alloy', response_format: 'wav' };
    // without the header: the usual 401, nothing quoted
    const none = await post(body);
    assert.equal(none.status, 401);
    assert.equal(((await none.json()) as any).error.code, 'missing_api_key');
    const sent = openai.requests.length;
    const { res, json } = await quote(body);
    assert.equal(json.error.code, 'insufficient_quota');
    assert.equal(openai.requests.length, sent, 'a quote sends nothing upstream');
    // the quote is the characters' price (rounded up to the token's millionth of a dollar)
    const price = perMillion(input.length, SPEECH_PER_MILLION_CHARS['openai/tts-1']);
    const step = 1000n; // nano-USD per USDC unit
    assert.equal(BigInt(json.payment.accepted[0].amount), (price + step - 1n) / step);

    const payment = await paymentHeader(res, json);
    const answer = await post(body, { 'X-PAYMENT': payment });
    assert.equal(answer.status, 200, await answer.clone().text());
    assert.equal(answer.headers.get('content-type'), 'audio/wav');
    const audio = Buffer.from(await answer.arrayBuffer());
    assert.equal(audio.toString('latin1', 0, 4), 'RIFF');
    assert.equal(openai.requests.at(-1)!.body.input, input);
    const receipt = decodePaymentResponseHeader(answer.headers.get('x-payment-response')!);
    assert.equal(receipt.success, true);
    assert.equal(facilitator.settled.at(-1)!.to, PAY_TO);
    const credits = await houseEntries(json.payment.paymentId);
    assert.deepEqual(
      credits.map((e) => e.kind),
      ['credit'],
    );
    assert.equal((await status(json.payment.paymentId)).status, 'completed');
    // used once
    const again = await post(body, { 'X-PAYMENT': payment });
    assert.equal(again.status, 409);
    assert.equal(((await again.json()) as any).error.code, 'payment_already_used');
    assert.equal(openai.requests.length, sent + 1);
  });

  it('a paid request whose provider failed stays paid and completes by its complete URL', async () => {
    const body = { model: 'openai/tts-1', input: 'Complete me later.', voice: 'alloy', response_format: 'mp3' };
    const { res, json } = await quote(body);
    openai.script({ status: 500 });
    const failed = await post(body, { 'X-PAYMENT': await paymentHeader(res, json) });
    assert.equal(failed.status, 502, await failed.clone().text());
    assert.ok(failed.headers.get('x-payment-response'));
    const s = await status(json.payment.paymentId);
    assert.equal(s.status, 'paid');
    assert.equal(s.readyToComplete, true);
    openai.script();
    const done = await fetch(json.payment.completeUrl, { method: 'POST' });
    assert.equal(done.status, 200, await done.clone().text());
    assert.equal(done.headers.get('content-type'), 'audio/mpeg');
    assert.ok((await done.arrayBuffer()).byteLength > 0);
    assert.equal((await status(json.payment.paymentId)).status, 'completed');
    assert.equal((await fetch(json.payment.completeUrl, { method: 'POST' })).status, 409);
    assert.equal((await houseEntries(json.payment.paymentId)).length, 1);
  });

  it('never quotes a stream', async () => {
    const res = await post(
      { model: 'openai/tts-1', input: 'stream', voice: 'alloy', stream: true },
      { 'X-X402': 'true' },
    );
    assert.equal(res.status, 400);
    assert.equal(((await res.json()) as any).error.code, 'unsupported_stream');
  });
});
