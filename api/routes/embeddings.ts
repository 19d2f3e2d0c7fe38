// POST /api/v1/embeddings (and /v1/...): OpenAI-style embeddings, floats or base64 (little-endian
// float32, as OpenAI encodes them; the openai SDK asks for base64 by default and decodes it). The
// answer carries the usage, the bill (`cost`, `paymentSource`, `remainingBalance`, the pricing
// extension) and the catalog model id. Planning, money and provider calls are activities.
import Router from '@koa/router';
import { clientAbortSignal } from '../clientAbort.js';
import { chargeOnDelivery } from '../delivery.js';
import { authenticate } from '../middleware/auth.js';
import { refuseUnofferedFeatures } from '../middleware/notOffered.js';
import { surface } from '../middleware/surface.js';
import { v1 } from '../paths.js';
import { embeddingsRequestSchema } from '../../activities/surfaces/schemas/embeddings.js';
import { validateBody } from '../validate.js';
import { EmbeddingCall, type EmbeddingsBody, planEmbeddings, toBase64 } from '../../activities/embeddings/embed.js';
import { billOf } from '../../activities/metering/meteredCall.js';
import { withBill } from '../../activities/surfaces/chatResponse.js';
import type { AppState } from '../state.js';

export const embeddingsRouter = new Router<AppState>();

embeddingsRouter.post(
  v1('/embeddings'),
  surface('openai'),
  authenticate,
  refuseUnofferedFeatures,
  validateBody(embeddingsRequestSchema),
  async (ctx) => {
    const body = ctx.request.body as EmbeddingsBody;
    const plan = planEmbeddings(body, ctx.state.caller, ctx.get('x-provider').trim() || undefined);
    const call = new EmbeddingCall(ctx.state.caller, ctx.state.requestId, plan);
    await call.reserve();
    const out = await call.orRelease(call.embed(clientAbortSignal(ctx)));
    const base64 = body.encoding_format === 'base64';
    const data = out.vectors.map((v, index) => ({
      object: 'embedding',
      index,
      embedding: base64 ? toBase64(v) : v,
    }));
    const charge = await call.settle(out);
    chargeOnDelivery(ctx, call.metered);
    ctx.body = withBill(
      {
        object: 'list',
        data,
        model: plan.model.id,
        usage: { prompt_tokens: out.tokens, total_tokens: out.tokens },
      },
      { ...billOf(charge), inputTokens: out.tokens, outputTokens: 0 },
    );
  },
);
