// The Koa application: request id → JSON writing → error rendering → routes (each route declares its
// surface, which parses its body; see middleware/surface.ts). Nothing here
// knows a database or a provider; routes call activities for that.
import type { Server } from 'node:http';
import Koa from 'koa';
import Router from '@koa/router';
import { requestId } from './middleware/requestId.js';
import { handleErrors } from './middleware/errors.js';
import { writeJsonBody } from './middleware/jsonBody.js';
import { thinkingPath } from './middleware/thinkingPath.js';
import { modelsRouter } from './routes/models.js';
import { balanceRouter } from './routes/balance.js';
import { chatRouter } from './routes/chat.js';
import { completionsRouter } from './routes/completions.js';
import { talkToGptRouter } from './routes/talkToGpt.js';
import { messagesRouter } from './routes/messages.js';
import { responsesRouter } from './routes/responses.js';
import { speechRouter } from './routes/speech.js';
import { embeddingsRouter } from './routes/embeddings.js';
import { transcriptionsRouter } from './routes/transcriptions.js';
import { moderationsRouter } from './routes/moderations.js';
import { decisionsRouter } from './routes/decisions.js';
import { imagesRouter } from './routes/images.js';
import { imageModelsRouter } from './routes/imageModels.js';
import { memoryRouter } from './routes/memory.js';
import { webRouter } from './routes/web.js';
import { ttsRouter } from './routes/tts.js';
import { mediaRouter } from './routes/media.js';
import { videoRouter } from './routes/video.js';
import { filesRouter } from './routes/files.js';
import { batchesRouter } from './routes/batches.js';
import { messageBatchesRouter } from './routes/messageBatches.js';
import { authRouter } from './routes/auth.js';
import { keysRouter } from './routes/keys.js';
import { teamsRouter } from './routes/teams.js';
import { subscriptionsRouter } from './routes/subscriptions.js';
import { depositsRouter } from './routes/deposits.js';
import { invitationsRouter } from './routes/invitations.js';
import { x402Router } from './routes/x402.js';
import { billingRouter } from './routes/billing.js';
import { teeRouter } from './routes/tee.js';
import { indexRoutes } from './routeIndex.js';
import type { AppState } from './state.js';
import { answerClientErrors } from './clientErrors.js';

export function createApp(): Koa {
  const app = new Koa({ proxy: process.env.SWITCHYARD_TRUST_PROXY === '1' });
  // Errors are rendered by handleErrors; Koa's own logger would print them twice.
  app.silent = true;
  app.use(requestId);
  app.use(writeJsonBody);
  app.use(handleErrors);
  app.use(thinkingPath);

  const health = new Router<AppState>();
  health.get('/health', (ctx) => {
    ctx.body = { status: 'ok' };
  });

  // One router for every route: each surface's router is flattened into it, so a request is
  // matched once (not once per surface, with an allowedMethods pass after each). Route files
  // therefore must not use router-level middleware (`router.use`): flattened, it would run for
  // every route mounted after it. It finds a request's routes by their leading path segments
  // instead of testing every route's pattern (routeIndex.ts).
  const routes = indexRoutes(new Router<AppState>());
  for (const router of [
    health,
    modelsRouter,
    balanceRouter,
    chatRouter,
    messagesRouter,
    responsesRouter,
    completionsRouter,
    talkToGptRouter,
    speechRouter,
    embeddingsRouter,
    transcriptionsRouter,
    moderationsRouter,
    decisionsRouter,
    imagesRouter,
    imageModelsRouter,
    memoryRouter,
    webRouter,
    ttsRouter,
    mediaRouter,
    videoRouter,
    filesRouter,
    batchesRouter,
    messageBatchesRouter,
    authRouter,
    keysRouter,
    teamsRouter,
    subscriptionsRouter,
    depositsRouter,
    invitationsRouter,
    x402Router,
    billingRouter,
    teeRouter,
  ]) {
    routes.use(router.routes());
  }
  app.use(routes.routes());
  // answers 405 (with Allow) and 501 without a body; handleErrors gives them our envelope
  app.use(routes.allowedMethods());
  // every server the app listens on (the API, `npm start`, the tests) answers malformed requests
  // in the envelope too: those never reach the middleware above
  const listen = app.listen.bind(app) as (...args: unknown[]) => Server;
  app.listen = ((...args: unknown[]) => answerClientErrors(listen(...args))) as Koa['listen'];
  return app;
}
