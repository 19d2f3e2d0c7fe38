// GET /api/v1/tee/attestation?model&nonce and GET /api/v1/tee/signature/{requestId}?model&signing_algo:
// a TEE model's proofs, passed through from its confidential-inference upstream and checked by the
// gateway first (activities/tee/): a report that does not echo the nonce, or a signature that does
// not recover to the attested signing address, is refused (502), never passed on as if sound. An id the provider does not know is 404.
import Router from '@koa/router';
import { RequestError } from '../../activities/core/errors.js';
import { resolveModel } from '../../activities/catalog/resolve.js';
import { attestationReport, attestingRoute, verifyAnswer } from '../../activities/tee/tee.js';
import { attestedAddress, checkNonce } from '../../activities/tee/verify.js';
import { clientAbortSignal } from '../clientAbort.js';
import { authenticate } from '../middleware/auth.js';
import { surface } from '../middleware/surface.js';
import { v1 } from '../paths.js';
import type { AppContext, AppState } from '../state.js';

export const teeRouter = new Router<AppState>();

function teeRoute(ctx: AppContext) {
  const model = ctx.query.model;
  if (typeof model !== 'string' || !model)
    throw new RequestError(
      400,
      'missing_required_parameter',
      "Query parameter 'model' (a TEE/ model id) is required.",
      {
        param: 'model',
      },
    );
  const algo = ctx.query.signing_algo ?? 'ecdsa';
  if (algo !== 'ecdsa')
    throw new RequestError(400, 'invalid_parameter_value', "signing_algo must be 'ecdsa' (the only one offered).", {
      param: 'signing_algo',
    });
  return attestingRoute(resolveModel(model).model);
}

teeRouter.get(v1('/tee/attestation'), surface('openai'), authenticate, async (ctx) => {
  const route = teeRoute(ctx);
  const nonce = ctx.query.nonce;
  if (typeof nonce !== 'string' || !/^[A-Za-z0-9+/=_-]{8,256}$/.test(nonce))
    throw new RequestError(
      400,
      'invalid_parameter_value',
      "Query parameter 'nonce' is required: 8 to 256 characters of base64 (or hex), fresh for each check.",
      { param: 'nonce' },
    );
  const report = await attestationReport(route, nonce, 'ecdsa', clientAbortSignal(ctx));
  const fresh = checkNonce(report, nonce);
  if (!fresh.ok || !attestedAddress(report))
    throw new RequestError(
      502,
      'tee_attestation_invalid',
      `The TEE provider's attestation was refused: ${fresh.reason ?? 'it names no signing address'}.`,
    );
  ctx.body = report;
});

teeRouter.get(v1('/tee/signature/:requestId'), surface('openai'), authenticate, async (ctx) => {
  const route = teeRoute(ctx);
  const { verification, record } = await verifyAnswer(route, ctx.params.requestId, clientAbortSignal(ctx), {
    rethrow: true,
  }).catch((err) => {
    if ((err as RequestError).status === 404)
      throw new RequestError(
        404,
        'not_found',
        'The TEE provider has no signature for this id (unknown or expired): pass the `id` of a TEE chat completion.',
        { param: 'requestId' },
      );
    throw err;
  });
  ctx.set('X-TEE-Verified', String(verification.verified));
  if (!verification.verified || !record)
    throw new RequestError(
      502,
      'tee_signature_invalid',
      `The TEE provider's signature for this answer was refused: ${verification.reason}.`,
    );
  ctx.body = { ...record, verification };
});
