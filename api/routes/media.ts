// GET /api/media/:id?expires=&signature= : a hosted output (audio, video) behind a signed URL.
// No API key: the signature is the permission, so the URL can be handed to a browser or a
// player as it is (see activities/media/hostedFiles.ts).
import Router from '@koa/router';
import { surface } from '../middleware/surface.js';
import { readHostedFile, verifySignature } from '../../activities/media/hostedFiles.js';
import { RequestError } from '../../activities/core/errors.js';
import type { AppState } from '../state.js';

export const mediaRouter = new Router<AppState>();

mediaRouter.get('/api/media/:id', surface('legacy'), async (ctx) => {
  const id = ctx.params.id!;
  const { expires, signature } = ctx.query;
  if (typeof expires !== 'string' || typeof signature !== 'string') {
    throw new RequestError(
      403,
      'invalid_signature',
      'This media URL is not signed; ask the job status route for a fresh URL.',
    );
  }
  const verdict = await verifySignature(id, expires, signature);
  if (verdict === 'invalid') throw new RequestError(403, 'invalid_signature', 'This media URL has a wrong signature.');
  if (verdict === 'expired')
    throw new RequestError(403, 'url_expired', 'This media URL has expired; ask the job status route for a fresh one.');
  const file = await readHostedFile(id);
  if (!file)
    throw new RequestError(
      404,
      'not_found',
      'This file no longer exists: hosted outputs are deleted 24 hours after they are made.',
    );
  ctx.set('Cache-Control', 'private, max-age=3600');
  ctx.type = file.contentType;
  ctx.body = file.data;
});
