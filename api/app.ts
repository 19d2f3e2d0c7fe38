// The Koa application: request id → error rendering → routes (each route declares its
// surface, which parses its body; see middleware/surface.ts). Nothing here
// knows a database or a provider; routes call activities for that.
import Koa from 'koa';
import Router from '@koa/router';
import { requestId } from './middleware/requestId.js';
import { handleErrors } from './middleware/errors.js';
import { ApiError } from './errors.js';
import { modelsRouter } from './routes/models.js';
import { balanceRouter } from './routes/balance.js';
import { chatRouter } from './routes/chat.js';
import { completionsRouter } from './routes/completions.js';
import { talkToGptRouter } from './routes/talkToGpt.js';
import { messagesRouter } from './routes/messages.js';
import { responsesRouter } from './routes/responses.js';
import { speechRouter } from './routes/speech.js';
import { ttsRouter } from './routes/tts.js';
import { mediaRouter } from './routes/media.js';
import { videoRouter } from './routes/video.js';

export function createApp(): Koa {
  const app = new Koa({ proxy: process.env.SWITCHYARD_TRUST_PROXY === '1' });
  // Errors are rendered by handleErrors; Koa's own logger would print them twice.
  app.silent = true;
  app.use(requestId);
  app.use(handleErrors);

  const health = new Router();
  health.get('/health', (ctx) => {
    ctx.body = { status: 'ok' };
  });

  for (const router of [health, modelsRouter, balanceRouter, chatRouter, messagesRouter, responsesRouter, completionsRouter, talkToGptRouter, speechRouter, ttsRouter, mediaRouter, videoRouter]) {
    app.use(router.routes());
    app.use(
      router.allowedMethods({
        throw: true,
        methodNotAllowed: () => new ApiError(405, 'method_not_allowed', 'This route does not accept that HTTP method.'),
        notImplemented: () => new ApiError(501, 'not_implemented', 'This HTTP method is not supported.'),
      }),
    );
  }
  return app;
}
