// The x402 side of the official SDK (@x402/core, @x402/evm): a resource server with the EVM
// "exact" scheme (EIP-3009 transferWithAuthorization of the network's USDC) whose facilitator,
// at X402_FACILITATOR_URL, verifies and settles payments (POST /verify, POST /settle, GET
// /supported, through the SDK's HTTPFacilitatorClient). Payments go to X402_PAY_TO on
// X402_NETWORK (CAIP-2, e.g. `eip155:8453` for Base). Built on first use and again when a setting
// changes; a facilitator that cannot be reached at start is asked again on the next request.
import type { x402ResourceServer } from '@x402/core/server';
import type { PaymentPayload, PaymentRequirements, SettleResponse } from '@x402/core/types';
import { config } from '../config.js';
import { RequestError } from '../core/errors.js';
import { formatAmount } from '../core/money.js';

/** USDC, the exact scheme's default asset, counts in millionths of a dollar: quotes round up to one. */
export const X402_USD_STEP = 1000n;

let current: { key: string; ready: Promise<x402ResourceServer> } | undefined;

function x402Configured(): boolean {
  return Boolean(config.x402FacilitatorUrl && config.x402PayTo);
}

function unavailable(why: string): RequestError {
  return new RequestError(
    503,
    'x402_unavailable',
    `Accountless payment is unavailable just now (${why}). Nothing was charged; retry, or use an API key.`,
    { retryAfterSeconds: 5 },
  );
}

/**
 * The SDK's server with its EVM scheme. Imported here, on the first x402 request, rather than at
 * start: the EVM scheme brings viem, about 30 MB resident that an API process without x402
 * traffic never needs (README, Memory of one API process).
 */
async function build(): Promise<x402ResourceServer> {
  const [{ HTTPFacilitatorClient, x402ResourceServer }, { ExactEvmScheme }] = await Promise.all([
    import('@x402/core/server'),
    import('@x402/evm/exact/server'),
  ]);
  const server = new x402ResourceServer(
    new HTTPFacilitatorClient({ url: config.x402FacilitatorUrl, timeoutMs: config.x402FacilitatorTimeoutMs }),
  );
  server.register(config.x402Network as `${string}:${string}`, new ExactEvmScheme());
  await server.initialize();
  return server;
}

async function resourceServer(): Promise<x402ResourceServer> {
  if (!x402Configured()) throw unavailable('the gateway has no x402 facilitator or receiving address configured');
  const key = `${config.x402FacilitatorUrl} ${config.x402Network} ${config.x402FacilitatorTimeoutMs}`;
  if (current?.key !== key) {
    const ready = build();
    current = { key, ready };
    ready.catch(() => {
      if (current?.ready === ready) current = undefined;
    });
  }
  try {
    return await current.ready;
  } catch (err) {
    console.error('[x402] the facilitator did not answer GET /supported:', err);
    throw unavailable('the payment facilitator cannot be reached');
  }
}

/** What a quote of `amountUsd` (nano-USD, a whole number of X402_USD_STEP) asks the payer for. */
export async function requirementsFor(amountUsd: bigint, paymentId: string): Promise<PaymentRequirements> {
  const server = await resourceServer();
  let built: PaymentRequirements[];
  try {
    built = await server.buildPaymentRequirements({
      scheme: 'exact',
      payTo: config.x402PayTo!,
      price: `$${formatAmount(amountUsd, 'USD')}`,
      network: config.x402Network as `${string}:${string}`,
      maxTimeoutSeconds: config.x402QuoteTtlSeconds,
    });
  } catch (err) {
    console.error('[x402] could not build payment requirements:', err);
    throw unavailable(`the facilitator does not offer the exact scheme on ${config.x402Network}`);
  }
  const [requirements] = built;
  if (!requirements) throw unavailable(`the facilitator does not offer the exact scheme on ${config.x402Network}`);
  // the quote's id rides along in `extra`, which a payer echoes back in its payload's `accepted`
  return { ...requirements, extra: { ...requirements.extra, paymentId } };
}

/** Does the payer's `accepted` name what was quoted (scheme, network, asset, amount, receiver)? */
export function acceptsQuote(payload: PaymentPayload, quoted: PaymentRequirements): boolean {
  const a = payload.accepted;
  return (
    a?.scheme === quoted.scheme &&
    a.network === quoted.network &&
    String(a.asset).toLowerCase() === quoted.asset.toLowerCase() &&
    String(a.amount) === quoted.amount &&
    String(a.payTo).toLowerCase() === quoted.payTo.toLowerCase()
  );
}

export type Verdict = { ok: true; payer?: string } | { ok: false; reason: string };

/** Ask the facilitator whether the payload pays the quote (signature, amount, receiver, time, funds). */
export async function verifyPayment(payload: PaymentPayload, quoted: PaymentRequirements): Promise<Verdict> {
  const server = await resourceServer();
  try {
    const v = await server.verifyPayment(payload, quoted);
    return v.isValid ? { ok: true, payer: v.payer } : { ok: false, reason: v.invalidReason ?? 'invalid_payment' };
  } catch (err) {
    const reason = (err as { invalidReason?: string }).invalidReason;
    if (reason) return { ok: false, reason };
    console.error('[x402] verify failed:', err);
    throw unavailable('the payment facilitator did not answer');
  }
}

export type SettleOutcome =
  | { ok: true; response: SettleResponse }
  | { ok: false; reason: string }
  /** the facilitator did not say: the transfer may or may not have happened */
  | { ok: 'unknown'; error: string };

/** Have the facilitator execute the transfer on chain. */
export async function settlePayment(payload: PaymentPayload, quoted: PaymentRequirements): Promise<SettleOutcome> {
  const server = await resourceServer();
  try {
    const response = await server.settlePayment(payload, quoted);
    return response.success ? { ok: true, response } : { ok: false, reason: response.errorReason ?? 'settle_failed' };
  } catch (err) {
    const reason = (err as { errorReason?: string }).errorReason;
    if (reason) return { ok: false, reason };
    return { ok: 'unknown', error: (err as Error).message };
  }
}
