// What discovery says must be true: every endpoint the catalog claims for a model (GET
// /api/v1/models?detailed=true shows `supported_endpoints` and `supported_batch_endpoints`) is a
// route this gateway serves, and the model is accepted there. Checked against the real Koa app
// with every provider configured (fake keys) and an account with no money: a served route that
// takes the model answers 402 (the reservation) before anything is sent upstream, or 200 when the
// call costs nothing; a claim the router does not serve answers 404/405.
import assert from 'node:assert/strict';
import { dataUrlOf, mp4 } from './support/mp4.js';
import { startApi, newAccount } from './support/api.js';
import { dataUrl, solidPng } from './support/png.js';
import { useProviderEnv } from './support/providerEnv.js';
import { catalog, type ModelInfo } from '../activities/catalog/catalog.js';
import { readCatalogFile } from '../activities/catalog/file.js';
import { config } from '../activities/config.js';

/** A request body the endpoint accepts for `m`, or null when one needs state the test has not made. */
function bodyFor(endpoint: string, m: ModelInfo): Record<string, unknown> | null {
  const messages = [{ role: 'user', content: 'Once upon a time' }];
  const voices = m.options.voices as string[] | undefined;
  const durations = m.options.durations as number[] | undefined;
  if (m.category === 'decision') {
    // decision models answer questions, on their own routes and as chat's and messages' `questions` format
    const questions = {
      story: { type: 'noul', instructions: 'Is it a story?', criteria: { true: 'yes', false: 'no' } },
    };
    switch (endpoint) {
      case '/v1/decisions':
      case '/v1/systemone':
        return { model: m.id, state: 'Once upon a time', questions };
      case '/v1/chat/completions':
        return { model: m.id, messages, response_format: { type: 'questions', questions } };
      case '/v1/messages':
        return { model: m.id, messages, max_tokens: 16, output_config: { format: { type: 'questions', questions } } };
      case '/v1/responses':
        return { model: m.id, input: 'Once upon a time', text: { format: { type: 'questions', questions } } };
    }
  }
  switch (endpoint) {
    case '/v1/chat/completions':
      return { model: m.id, messages, max_tokens: 16 };
    case '/v1/completions':
      return { model: m.id, prompt: 'Once upon a time', max_tokens: 16 };
    case '/v1/messages':
      return { model: m.id, messages, max_tokens: 16 };
    case '/v1/responses':
      return { model: m.id, input: 'Once upon a time', max_output_tokens: 16 };
    case '/v1/audio/speech':
      return { model: m.id, input: 'Once upon a time', voice: voices?.[0] ?? 'alloy' };
    case '/v1/embeddings':
    case '/v1/moderations':
      return { model: m.id, input: 'Once upon a time' };
    case '/api/tts':
      return { model: m.id, text: 'Once upon a time' };
    case '/api/generate-video': {
      const needsImage = ((m.options.media_required as string[] | undefined) ?? []).includes('image');
      const needsVideo = ((m.options.media_required as string[] | undefined) ?? []).includes('video');
      return {
        model: m.id,
        prompt: 'a lighthouse at dawn',
        ...(durations ? { duration: String(durations[0]) } : {}),
        ...(needsImage ? { imageUrl: 'https://example.com/lighthouse.png' } : {}),
        ...(needsVideo ? { videoDataUrl: dataUrlOf(mp4(10)) } : {}),
      };
    }
    case '/api/v1/images':
    case '/v1/images/generations':
    case '/v1/images/edits':
    case '/api/generate-image': {
      // a reference when the model needs one (or the route is an edit): big enough for every model's minimum
      const needs = (m.options.input_references as { required?: boolean } | undefined)?.required === true;
      const ref = dataUrl(solidPng(512, 512));
      const body: Record<string, unknown> = { model: m.id, prompt: 'a lighthouse at dawn' };
      if (endpoint === '/v1/images/edits') body.image = ref;
      else if (needs)
        body[endpoint === '/api/v1/images' ? 'input_references' : 'imageDataUrl'] =
          endpoint === '/api/v1/images' ? [ref] : ref;
      return body;
    }
    default:
      return null; // e.g. /api/generate-video/extend: needs a finished job of the model
  }
}

/** `/v1/...` claims are served under /api/v1 too (the spec's rule). */
const pathsOf = (endpoint: string) => (endpoint.startsWith('/v1/') ? [`/api${endpoint}`, endpoint] : [endpoint]);

describe('catalog claims are checked against the router', function () {
  this.timeout(60_000);
  let api: Awaited<ReturnType<typeof startApi>>;
  let restoreEnv: () => Promise<void>;
  before(async () => {
    // every provider configured; nothing will be called (the account below cannot pay)
    const env: Record<string, string> = { MIDJOURNEY_API_KEY: 'fake' };
    for (const p of (await readCatalogFile(config.catalogFile)).providers) {
      const prefix = p.id.toUpperCase().replace(/[^A-Z0-9]/g, '_');
      env[`${prefix}_API_KEY`] = 'fake';
      if (p.options.keyless) env[`${prefix}_BASE_URL`] = 'http://127.0.0.1:9';
    }
    restoreEnv = await useProviderEnv(env);
    api = await startApi();
  });
  after(async () => {
    await api?.close();
    await restoreEnv?.();
  });

  it('every advertised endpoint is served, and takes the model', async () => {
    const res = await fetch(`${api.base}/api/v1/models?detailed=true`);
    const listed: Array<{ id: string; supported_endpoints: string[] }> = (await res.json()).data;
    const { key } = await newAccount('0');
    const wrong: string[] = [];
    let checked = 0;
    for (const entry of listed) {
      const m = catalog().model(entry.id);
      if (!m) throw new Error(`discovery lists '${entry.id}', which the catalog does not know`);
      for (const endpoint of entry.supported_endpoints) {
        for (const path of pathsOf(endpoint)) {
          // the route exists: without a key it answers 401, not 404/405
          const anonymous = await fetch(`${api.base}${path}`, { method: 'POST', body: '{}' });
          if (anonymous.status === 404 || anonymous.status === 405)
            wrong.push(`${m.id}: ${path} is not served (${anonymous.status})`);
        }
        const body = bodyFor(endpoint, m);
        if (!body) continue;
        const r = await fetch(`${api.base}${pathsOf(endpoint)[0]}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        const text = await r.text();
        if (r.status !== 402 && r.status !== 200)
          wrong.push(`${m.id} at ${endpoint}: ${r.status} ${text.slice(0, 200)}`);
        checked++;
      }
    }
    assert.deepEqual(wrong, []);
    assert.ok(checked >= 20, `only ${checked} claims checked`);
  });

  it('every claim in the catalog file is served (embedding models and batch endpoints included)', async () => {
    const claims = new Set<string>();
    for (const m of catalog().models) for (const e of m.supportedEndpoints) claims.add(e);
    const batchClaims = catalog().models.flatMap((m) => m.supportedBatchEndpoints.map((e) => `${m.id}: ${e}`));
    // a batch endpoint is claimed only when batches exist to put it in
    const batches = await fetch(`${api.base}/api/v1/batches`, { method: 'POST', body: '{}' });
    if (batches.status === 404) assert.deepEqual(batchClaims, [], 'batch endpoints advertised, but no batches');
    for (const m of catalog().models) for (const e of m.supportedBatchEndpoints) claims.add(e);
    const unserved: string[] = [];
    for (const e of claims)
      for (const path of pathsOf(e)) {
        const r = await fetch(`${api.base}${path}`, { method: 'POST', body: '{}' });
        if (r.status === 404 || r.status === 405) unserved.push(path);
      }
    assert.deepEqual(unserved, []);
  });
});
