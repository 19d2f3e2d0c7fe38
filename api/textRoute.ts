// Mounts a text surface (chat, messages, responses, completions, talk-to-gpt) on its paths: the
// surface's envelope, the refusal of features not offered yet (middleware/notOffered.ts), the API
// key (or an x402 payment where the surface takes one), X-Billing-Mode and the Ajv schema; then the
// validated body is handed to the text pipeline (activities/inference/pipeline.ts), which holds
// the business order: add-ons, planning, money, the answer in the surface's codec.
import type Router from '@koa/router';
import type { Middleware } from 'koa';
import compose from 'koa-compose';
import type { TextBody } from '../activities/core/types.js';
import type { TextCodec, Translated } from '../activities/inference/codec.js';
import { runText } from '../activities/inference/pipeline.js';
import { KoaExchange } from './exchange.js';
import { authenticate } from './middleware/auth.js';
import { billingMode } from './middleware/billingMode.js';
import { refuseUnofferedBeside } from './middleware/notOffered.js';
import { surface } from './middleware/surface.js';
import type { AppState } from './state.js';
import { validateBody } from './validate.js';
import { authenticateOrX402 } from './x402.js';

/**
 * The x402 routes by surface (the payment's `route`), each as validation + handler: POST
 * /api/x402/complete/{id} runs the quoted request through it with the stored body.
 */
export const x402Routes = new Map<string, Middleware<AppState>>();

export function textRoute<T extends Translated>(
  router: Router<AppState>,
  paths: string | string[],
  codec: TextCodec<T>,
): void {
  const preamble = [
    surface(codec.envelope),
    refuseUnofferedBeside(codec),
    codec.x402 ? authenticateOrX402 : authenticate,
    billingMode,
  ];
  const handler: Middleware<AppState> = (ctx) => runText(codec, new KoaExchange(ctx), ctx.request.body as TextBody);
  router.post(paths, ...preamble, validateBody(codec.schema), handler);
  if (codec.x402) x402Routes.set(codec.surface, compose([validateBody(codec.schema), handler]));
}
