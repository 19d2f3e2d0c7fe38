// A loopback x402 facilitator speaking the real protocol (the one the official SDK's
// HTTPFacilitatorClient talks to): GET /supported, POST /verify and POST /settle with
// `{x402Version, paymentPayload, paymentRequirements}`. It checks an EVM "exact" payment the way
// a facilitator does before it broadcasts: the EIP-3009 TransferWithAuthorization signature is
// recovered with viem against the token's EIP-712 domain (name and version from the requirements'
// `extra`, chain id from the CAIP-2 network, the asset as verifying contract), then the receiver,
// the value, the validity window, the payer's token balance and the nonce (each authorization
// settles once). Settling moves the tokens between its in-memory balances and answers a
// transaction hash. Failures can be scripted: `failNext('verify' | 'settle', status)` answers an
// HTTP error once, `hangSettle` never answers a settle.
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { getAddress, isAddressEqual, verifyTypedData } from 'viem';
import { authorizationTypes } from '@x402/evm';
import { listenOnLoopback, closeServer } from './loopback.js';

interface Authorization {
  from: `0x${string}`;
  to: `0x${string}`;
  value: string;
  validAfter: string;
  validBefore: string;
  nonce: `0x${string}`;
}

export interface X402Facilitator {
  url: string;
  network: string;
  /** token balances (atomic units) by lower-case address: payers must be funded */
  balances: Map<string, bigint>;
  /** settled transfers, in order */
  settled: Array<{ from: string; to: string; value: bigint; nonce: string; transaction: string }>;
  requests: Array<{ path: string; body: any }>;
  failNext(op: 'verify' | 'settle', status: number): void;
  hangSettle: boolean;
  close(): Promise<void>;
}

export async function startX402Facilitator(opts: { network?: string } = {}): Promise<X402Facilitator> {
  const network = opts.network ?? 'eip155:84532';
  const chainId = Number(network.split(':')[1]);
  const balances = new Map<string, bigint>();
  const usedNonces = new Set<string>();
  const settled: X402Facilitator['settled'] = [];
  const requests: X402Facilitator['requests'] = [];
  const failures: Array<{ op: string; status: number }> = [];

  /** The facilitator's checks, in the order a real one makes them; a reason on the first failure. */
  async function check(body: any): Promise<{ payer?: string; reason?: string; auth?: Authorization }> {
    const payload = body?.paymentPayload;
    const req = body?.paymentRequirements;
    if (!payload || !req) return { reason: 'invalid_payload' };
    if (payload.accepted?.scheme !== 'exact' || req.scheme !== 'exact') return { reason: 'unsupported_scheme' };
    if (req.network !== network || payload.accepted?.network !== network) return { reason: 'invalid_network' };
    const auth = payload.payload?.authorization as Authorization | undefined;
    const signature = payload.payload?.signature as `0x${string}` | undefined;
    if (!auth || !signature) return { reason: 'invalid_payload' };
    const payer = auth.from;
    let valid = false;
    try {
      valid = await verifyTypedData({
        address: getAddress(auth.from),
        domain: {
          name: String(req.extra?.name),
          version: String(req.extra?.version),
          chainId,
          verifyingContract: getAddress(req.asset),
        },
        types: authorizationTypes,
        primaryType: 'TransferWithAuthorization',
        message: {
          from: getAddress(auth.from),
          to: getAddress(auth.to),
          value: BigInt(auth.value),
          validAfter: BigInt(auth.validAfter),
          validBefore: BigInt(auth.validBefore),
          nonce: auth.nonce,
        },
        signature,
      });
    } catch {
      valid = false;
    }
    if (!valid) return { payer, reason: 'invalid_exact_evm_payload_signature' };
    if (!isAddressEqual(getAddress(auth.to), getAddress(req.payTo)))
      return { payer, reason: 'invalid_exact_evm_payload_recipient_mismatch' };
    if (BigInt(auth.value) < BigInt(req.amount))
      return { payer, reason: 'invalid_exact_evm_payload_authorization_value' };
    const now = BigInt(Math.floor(Date.now() / 1000));
    if (BigInt(auth.validBefore) < now + 6n)
      return { payer, reason: 'invalid_exact_evm_payload_authorization_valid_before' };
    if (BigInt(auth.validAfter) > now) return { payer, reason: 'invalid_exact_evm_payload_authorization_valid_after' };
    if ((balances.get(payer.toLowerCase()) ?? 0n) < BigInt(auth.value)) return { payer, reason: 'insufficient_funds' };
    if (usedNonces.has(auth.nonce.toLowerCase())) return { payer, reason: 'invalid_exact_evm_payload_nonce_used' };
    return { payer, auth };
  }

  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    let body: any;
    try {
      body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
    } catch {
      res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'invalid JSON' }));
      return;
    }
    const path = (req.url ?? '/').split('?')[0]!;
    requests.push({ path, body });
    const send = (status: number, out: unknown) =>
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(out));
    const op = path.slice(1);
    const failure = failures.findIndex((f) => f.op === op);
    if (failure >= 0) {
      const [f] = failures.splice(failure, 1);
      send(f!.status, { error: 'scripted failure' });
      return;
    }
    if (req.method === 'GET' && path === '/supported') {
      send(200, {
        kinds: [{ x402Version: 2, scheme: 'exact', network }],
        extensions: [],
        signers: { 'eip155:*': ['0x000000000000000000000000000000000000fac1'] },
      });
      return;
    }
    if (req.method === 'POST' && path === '/verify') {
      const v = await check(body);
      send(
        200,
        v.reason ? { isValid: false, invalidReason: v.reason, payer: v.payer } : { isValid: true, payer: v.payer },
      );
      return;
    }
    if (req.method === 'POST' && path === '/settle') {
      if (facilitator.hangSettle) return; // never answers: the client's deadline decides
      // check and spend in one turn of the event loop: two settles of one authorization cannot both pass
      const v = await check(body);
      if (v.reason || !v.auth || usedNonces.has(v.auth.nonce.toLowerCase())) {
        send(200, {
          success: false,
          errorReason: v.reason ?? 'invalid_exact_evm_payload_nonce_used',
          payer: v.payer,
          transaction: '',
          network,
        });
        return;
      }
      const a = v.auth;
      usedNonces.add(a.nonce.toLowerCase());
      const value = BigInt(a.value);
      balances.set(a.from.toLowerCase(), (balances.get(a.from.toLowerCase()) ?? 0n) - value);
      balances.set(a.to.toLowerCase(), (balances.get(a.to.toLowerCase()) ?? 0n) + value);
      const transaction = `0x${randomBytes(32).toString('hex')}`;
      settled.push({ from: a.from.toLowerCase(), to: a.to.toLowerCase(), value, nonce: a.nonce, transaction });
      send(200, { success: true, payer: a.from, transaction, network });
      return;
    }
    send(404, { error: `no route ${req.method} ${path}` });
  });
  const { port } = await listenOnLoopback(server);
  const facilitator: X402Facilitator = {
    url: `http://127.0.0.1:${port}`,
    network,
    balances,
    settled,
    requests,
    failNext: (op, status) => void failures.push({ op, status }),
    hangSettle: false,
    close: () => closeServer(server),
  };
  return facilitator;
}
