// x402's own routes: which endpoints take accountless payment, a payment's status, and
// completing a quoted request by its completeUrl (api/x402.ts has the payment flow itself).
import Router from '@koa/router';
import { surface } from '../middleware/surface.js';
import { x402Routes } from '../textRoute.js';
import { decodePayment } from '../x402.js';
import { RequestError } from '../../activities/core/errors.js';
import { paymentById, statusView, x402Caller } from '../../activities/x402/payments.js';
import type { AppState } from '../state.js';

export const x402Router = new Router<AppState>();

/** What takes x402, for GET /api/v1/x402/endpoints; each entry's route is in x402Routes. */
const ENDPOINTS = [
  { endpoint: '/api/v1/chat/completions', surface: 'chat', notes: 'Non-streaming chat completions (stable).' },
  { endpoint: '/api/v1/completions', surface: 'completions', notes: 'Non-streaming text completions.' },
  {
    endpoint: '/api/v1/audio/speech',
    surface: 'speech',
    notes: 'Non-streaming text to speech (priced per input character).',
  },
];

x402Router.get(['/api/v1/x402/endpoints', '/v1/x402/endpoints'], surface('openai'), (ctx) => {
  const data = ENDPOINTS.map((e) => ({
    endpoint: e.endpoint,
    method: 'POST',
    supported: x402Routes.has(e.surface),
    schemes: ['exact'],
    streaming: false,
    async: false,
    // the quote is the request's worst case (prompt estimate and max_tokens at the dearest route)
    quoteType: 'max',
    notes: e.notes,
  }));
  ctx.body = {
    object: 'x402.endpoint_support.list',
    version: 1,
    data,
    meta: { count: data.filter((d) => d.supported).length, totalCount: data.length },
  };
});

x402Router.get('/api/x402/status/:id', surface('openai'), async (ctx) => {
  const view = await statusView(ctx.params.id!);
  if (!view) throw new RequestError(404, 'payment_not_found', `No payment has the id '${ctx.params.id}'.`);
  ctx.body = view;
});

// Runs the quoted request with its stored body, through the route it was quoted on. Pays the
// quote first when the request brings X-PAYMENT; a quote paid earlier (its run failed) runs as is.
x402Router.post('/api/x402/complete/:id', surface('openai'), async (ctx, next) => {
  const p = await paymentById(ctx.params.id!);
  const run = p && x402Routes.get(p.route);
  if (!p || !run) throw new RequestError(404, 'payment_not_found', `No payment has the id '${ctx.params.id}'.`);
  const header = (ctx.get('x-payment') || ctx.get('payment-signature')).trim();
  ctx.state.x402 = { paymentId: p.id, payment: header ? decodePayment(header) : undefined };
  ctx.state.caller = await x402Caller();
  ctx.request.body = p.body;
  await run(ctx, next);
});
