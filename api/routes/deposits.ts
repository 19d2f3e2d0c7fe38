// Crypto deposits (spec "Crypto deposit"), legacy envelope ({error, message, status, code}):
//   POST /api/transaction/create/{ticker}   a BTCPay invoice for `amount` USD, its workflow started;
//                                           answers the deposit (address, coin amount, wallet URI)
//   GET  /api/transaction/limits/{ticker}   the ticker's USD limits
//   GET  /api/transaction/status/{txId}     the caller's deposit as it stands (not in the spec)
//   POST /api/transaction/webhook/btcpay    BTCPay Server's webhooks (signed, no key): signals to
//                                           the deposits' workflows (not in the spec: the processor's)
// Creating is limited to 10 requests per 10 minutes per API key (or signed-in user, or client
// address), counted in the database so every API process shares the count.
import Router from '@koa/router';
import type { Middleware } from 'koa';
import { authenticate } from '../middleware/auth.js';
import { surface } from '../middleware/surface.js';
import { btcpayWebhookSchema, depositRequestSchema } from '../../activities/surfaces/schemas/deposits.js';
import { validateBody } from '../validate.js';
import { admitAttempt } from '../../activities/accounts/throttle.js';
import { RequestError } from '../../activities/core/errors.js';
import { createDeposit, depositLimits, depositStatus } from '../../activities/payments/deposits.js';
import { receiveWebhook, signedWebhook } from '../../activities/payments/webhooks.js';
import type { AppState } from '../state.js';

export const depositsRouter = new Router<AppState>();

/** The spec's deposit rate: 10 per 10 minutes per key or IP. */
const DEPOSITS_PER_WINDOW = 10;
const WINDOW_SECONDS = 600;

const depositRate: Middleware<AppState> = async (ctx, next) => {
  const caller = ctx.state.caller;
  const subject = caller.keyId ?? (caller.userId != null ? `user:${caller.userId}` : `ip:${ctx.ip}`);
  const verdict = await admitAttempt('deposit-create', subject, DEPOSITS_PER_WINDOW, WINDOW_SECONDS);
  if (!verdict.ok)
    throw new RequestError(
      429,
      'rate_limit_exceeded',
      `Too many deposit requests: at most ${DEPOSITS_PER_WINDOW} per 10 minutes. Retry in ${verdict.retryAfterSeconds} s.`,
      { type: 'rate_limit_error', retryAfterSeconds: verdict.retryAfterSeconds },
    );
  await next();
};

depositsRouter.post(
  '/api/transaction/create/:ticker',
  surface('legacy'),
  authenticate,
  depositRate,
  validateBody(depositRequestSchema),
  async (ctx) => {
    const { amount } = ctx.request.body as { amount: number };
    ctx.body = await createDeposit(ctx.state.caller, ctx.params.ticker!, amount);
  },
);

depositsRouter.get('/api/transaction/limits/:ticker', surface('legacy'), authenticate, async (ctx) => {
  ctx.body = await depositLimits(ctx.params.ticker!);
});

depositsRouter.get('/api/transaction/status/:txId', surface('legacy'), authenticate, async (ctx) => {
  ctx.body = await depositStatus(ctx.state.caller, ctx.params.txId!);
});

/** The webhook's signature checked over the bytes sent, before they are read as JSON. */
const signed: Middleware<AppState> = async (ctx, next) => {
  ctx.request.body = signedWebhook(ctx.request.rawBody ?? Buffer.alloc(0), ctx.get('btcpay-sig') || undefined);
  await next();
};

// BTCPay's deliveries are small JSON documents; the signature is over their exact bytes
depositsRouter.post(
  '/api/transaction/webhook/btcpay',
  surface('legacy', { raw: true, limitBytes: 1024 * 1024 }),
  signed,
  validateBody(btcpayWebhookSchema),
  async (ctx) => {
    ctx.body = await receiveWebhook(ctx.request.body as Parameters<typeof receiveWebhook>[0]);
  },
);
