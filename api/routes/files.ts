// The Files API (spec "Batches" and "Batch resources"; OpenAI's /v1/files), OpenAI envelope, under
// /api/v1 and /v1:
//   POST   /files               multipart upload (purpose=batch, file), streamed into the database
//   GET    /files               the account's files, newest first: limit, after, before, order, purpose
//   GET    /files/:id           one file
//   GET    /files/:id/content   its bytes, streamed
//   DELETE /files/:id           409 file_in_use while a batch holds it
// Storage, quota and holds are activities/files/; this file is HTTP only.
import { Readable } from 'node:stream';
import Router from '@koa/router';
import { config } from '../../activities/config.js';
import { RequestError } from '../../activities/core/errors.js';
import { deleteFile, fileObject, getFile, listFiles, readFile } from '../../activities/files/files.js';
import { storeFile } from '../../activities/files/store.js';
import { authenticate } from '../middleware/auth.js';
import { discardRest } from '../middleware/body.js';
import { surface } from '../middleware/surface.js';
import { v1 } from '../paths.js';
import type { AppState } from '../state.js';
import { readUploadForm, uploadFormSchema } from '../uploadForm.js';
import { declareMultipart, validateQuery } from '../validate.js';

export const filesRouter = new Router<AppState>();

// Each upload holds a database connection until its last byte (activities/files/store.ts says why):
// past this many at once, this process answers 503 rather than starve its other requests.
let uploadsInFlight = 0;

filesRouter.post(v1('/files'), surface('openai'), authenticate, declareMultipart(uploadFormSchema), async (ctx) => {
  const encoding = ctx.get('content-encoding').trim().toLowerCase();
  if (encoding && encoding !== 'identity') {
    discardRest(ctx.req, 1024 * 1024);
    throw new RequestError(
      415,
      'unsupported_content_encoding',
      `Uploads are not accepted with Content-Encoding '${encoding}': send the file as it is.`,
    );
  }
  if (uploadsInFlight >= config.fileUploadsMaxConcurrent) {
    discardRest(ctx.req, 1024 * 1024);
    throw new RequestError(503, 'too_many_uploads', 'Too many uploads are in progress; retry in a moment.', {
      retryAfterSeconds: 1,
    });
  }
  uploadsInFlight++;
  const form = readUploadForm(ctx.req, config.fileUploadMaxBytes, config.fileUploadIdleTimeoutMs);
  try {
    const part = await form.file;
    const file = await storeFile({
      accountId: ctx.state.caller.accountId,
      keyId: ctx.state.caller.keyId,
      purpose: 'batch',
      filename: part.filename,
      body: part.stream,
      beforeCommit: async () => {
        await form.done;
      },
    });
    ctx.body = fileObject(file);
  } catch (err) {
    // The form's own failure is the cause (the store only saw its stream end in error). The rest of
    // the body is dropped, up to a bound, so a client still sending receives this answer.
    form.abandon();
    discardRest(ctx.req, 1024 * 1024);
    throw form.failure() ?? err;
  } finally {
    uploadsInFlight--;
  }
});

const listQuery = validateQuery({
  type: 'object',
  properties: {
    limit: { type: 'integer', minimum: 1, maximum: 10_000, default: 10_000 },
    after: { type: 'string', maxLength: 64 },
    before: { type: 'string', maxLength: 64 },
    order: { enum: ['asc', 'desc'], default: 'desc' },
    purpose: { type: 'string', maxLength: 64 },
  },
});

filesRouter.get(v1('/files'), surface('openai'), authenticate, listQuery, async (ctx) => {
  const q = ctx.state.query as {
    limit: number;
    after?: string;
    before?: string;
    order: 'asc' | 'desc';
    purpose?: string;
  };
  if (q.after !== undefined && q.before !== undefined)
    throw new RequestError(400, 'invalid_parameter_value', "Use 'after' or 'before', not both.", { param: 'before' });
  const page = await listFiles({ accountId: ctx.state.caller.accountId, ...q });
  ctx.body = {
    object: 'list',
    data: page.data,
    first_id: page.data[0]?.id ?? null,
    last_id: page.data.at(-1)?.id ?? null,
    has_more: page.has_more,
  };
});

filesRouter.get(v1('/files/:id'), surface('openai'), authenticate, async (ctx) => {
  ctx.body = fileObject(await getFile(ctx.params.id!, ctx.state.caller.accountId));
});

filesRouter.get(v1('/files/:id/content'), surface('openai'), authenticate, async (ctx) => {
  const accountId = ctx.state.caller.accountId;
  const file = await getFile(ctx.params.id!, accountId);
  ctx.body = Readable.from(readFile(file.id, accountId));
  ctx.type = file.contentType;
  ctx.length = file.bytes;
  // a download, never a page: an uploaded file is the caller's bytes, not the gateway's content
  ctx.set('Content-Disposition', `attachment; filename*=UTF-8''${encodeURIComponent(file.filename)}`);
  ctx.set('X-Content-Type-Options', 'nosniff');
});

filesRouter.delete(v1('/files/:id'), surface('openai'), authenticate, async (ctx) => {
  ctx.body = await deleteFile(ctx.params.id!, ctx.state.caller.accountId);
});
